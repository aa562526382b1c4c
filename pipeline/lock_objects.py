"""Row locks for the pipeline's records. Lock order (projects/lock_objects.py): Project ->
PipelineRun -> StoryState -> other rows by pk. Take the project lock first."""
from __future__ import annotations

from pipeline.models import PipelineRun


def run_lock(run_id: int) -> PipelineRun:
    return PipelineRun.objects.select_for_update(of=("self",)).get(pk=run_id)
