"""Row locks for the pipeline's records. Lock order (projects/lock_objects.py): Project ->
PipelineRun -> StoryState -> other rows by pk. Take the project lock first."""
from __future__ import annotations

from projects.models import Project

from pipeline.models import PipelineRun


def project_lock_of_run(run_id: int) -> Project | None:
    """Lock 1 (the run's project) found through the run in one query; None if there is no such run.
    Only the project row is locked (``of``), so the order project -> run still holds."""
    return Project.objects.select_for_update(of=("self",)).filter(runs__pk=run_id).first()


def run_lock(run_id: int, *, with_context: bool = True) -> PipelineRun:
    """Without its context snapshot, the run saves only its other fields (unless one assigns
    ``run.context``): a stage completing leaves the snapshot as it is, unread and unwritten."""
    runs = PipelineRun.objects.select_for_update(of=("self",))
    return (runs if with_context else runs.defer("context")).get(pk=run_id)
