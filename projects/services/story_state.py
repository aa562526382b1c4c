"""Applying state deltas: the rules are the pure ``projects.state_ops.apply_delta``; this service
adds the row locks, the StoryState row, the changelog and the foreshadowing ledger."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from projects.lock_objects import project_lock_id, story_state_lock
from projects.models import ChangeSource, Project, StateChange, Volume
from projects.services.foreshadowing import foreshadowing_apply_ops
from projects.state_ops import apply_delta, foreshadow_ops


@transaction.atomic
def story_state_apply_patch(
    *,
    project: Project,
    delta: dict[str, Any],
    source: str = ChangeSource.PIPELINE,
    user: AbstractBaseUser | None = None,
) -> StateChange:
    """Apply one delta all-or-nothing, or raise a ``PatchError`` (``StalePatch`` when
    ``base_state_version`` is not the current version) with nothing written.

    Locks: project, then StoryState (projects/lock_objects.py order). Safe to call inside a
    larger transaction (a savepoint then).
    """
    project_lock_id(project.pk)
    return story_state_apply_patch_locked(project=project, delta=delta, source=source, user=user)


def story_state_apply_patch_locked(
    *,
    project: Project,
    delta: dict[str, Any],
    source: str = ChangeSource.PIPELINE,
    user: AbstractBaseUser | None = None,
) -> StateChange:
    """The body of ``story_state_apply_patch``, inside the caller's transaction, which holds the
    project lock (the chapter commit). A ``PatchError`` is raised before the first write, so a
    caller that catches it may go on with its transaction: no savepoint is needed."""
    state = story_state_lock(project)
    new_data = apply_delta(state.data, delta)  # raises before anything is written
    state.data = new_data
    state.state_version = new_data["state_version"]
    state.schema_version = new_data["schema_version"]
    state.save()
    change = StateChange.objects.create(
        project=project,
        state_version=new_data["state_version"],
        base_state_version=delta["base_state_version"],
        chapter=delta["chapter"],
        storyline_slug=delta["storyline_id"],
        delta=delta,
        source=source,
        created_by=user,
    )
    ops = foreshadow_ops(delta)
    if ops:  # most chapters touch no foreshadowing: no ledger work, no volume plan read
        volume = Volume.objects.filter(project=project, number=project.current_volume).first()
        foreshadowing_apply_ops(project=project, chapter=delta["chapter"], storyline_slug=delta["storyline_id"],
                                ops=ops, volume=volume)
    return change
