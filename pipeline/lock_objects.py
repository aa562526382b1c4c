"""Row locks for the pipeline's records. Lock order (projects/lock_objects.py): Project ->
PipelineRun -> StoryState -> other rows by pk. Take the project lock first."""
from __future__ import annotations

from django.db.models import Exists, OuterRef

from projects.models import Project

from pipeline.models import PipelineRun, PromptTemplate


def project_lock_of_run(run_id: int) -> Project | None:
    """Lock 1 (the run's project) found through the run in one query; None if there is no such run.
    Only the project row is locked (``of``), so the order project -> run still holds. The row
    also says whether the project overrides any prompt template (``has_prompt_overrides``), so
    that a stage of a project without overrides (most) needs no lookup per LLM call."""
    overrides = PromptTemplate.objects.filter(project=OuterRef("pk"))
    return (Project.objects.select_for_update(of=("self",)).filter(runs__pk=run_id)
            .annotate(has_prompt_overrides=Exists(overrides)).first())


def run_lock(run_id: int, *, with_context: bool = True, with_blackboard: bool = True) -> PipelineRun:
    """Without its context snapshot (or its blackboard), the run saves only its other fields
    unless one assigns them: a stage completing leaves the snapshot as it is, unread and unwritten,
    and writes a blackboard it need not read first."""
    runs = PipelineRun.objects.select_for_update(of=("self",))
    deferred = [name for name, wanted in (("context", with_context), ("blackboard", with_blackboard)) if not wanted]
    return (runs.defer(*deferred) if deferred else runs).get(pk=run_id)
