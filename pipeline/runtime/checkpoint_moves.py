"""The project's checkpoint (orchestrator state, chapter in flight, pipeline stage): how the
pipeline moves it, with a ``StateTransition`` row for every change of orchestrator state."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from pipeline.models import PipelineRun, StateTransition
from projects.models import Project


def checkpoint_update(project_id: int, *, reason: str = "", run: PipelineRun | None = None, actor=None,
                      from_state: str | None = None, **fields: Any) -> None:
    """Move the checkpoint with update(): the pipeline's moves are not human edits for the history.
    A change of ``orchestrator_state`` is recorded as a StateTransition with ``reason``, the run and
    the person behind it; ``from_state`` (the state the caller read under the project lock) saves
    re-reading it. The caller holds the project lock."""
    to_state = fields.get("orchestrator_state")
    if to_state is not None:
        if from_state is None:
            from_state = Project.objects.filter(pk=project_id).values_list("orchestrator_state", flat=True).first()
        if from_state != to_state:
            StateTransition.objects.create(project_id=project_id, from_state=from_state or "", to_state=to_state,
                                           reason=reason[:300], run=run, actor=actor)
    Project.objects.filter(pk=project_id).update(last_checkpoint_time=timezone.now(), **fields)
