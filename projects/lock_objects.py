"""Row locks for story data. Lock order, always: Project -> PipelineRun (pipeline/runtime/locks.py)
-> StoryState -> other rows by pk. With one order, two writers may wait, but never deadlock.

These are the only places that call ``select_for_update()`` in ``projects``; they lock and return
ORM rows and do nothing else. On SQLite the lock is a no-op, and IMMEDIATE transactions
serialise writers instead.
"""
from __future__ import annotations

from typing import TypeVar

from django.db import models

from projects.models import Foreshadowing, Project, Storyline, StoryState
from projects.state_ops import empty_state

M = TypeVar("M", bound=models.Model)


def project_lock(project_id: int) -> Project:
    return Project.objects.select_for_update(of=("self",)).get(pk=project_id)


def project_lock_id(project_id: int) -> None:
    """The same lock as ``project_lock`` without loading the row: for callers that only need to
    hold it while they write other rows."""
    list(Project.objects.select_for_update(of=("self",)).filter(pk=project_id).values_list("pk", flat=True))


def story_state_lock(project: Project) -> StoryState:
    """The project's state row, created empty (seed 000 / facts §7.4 initial state) on first use.
    The caller must hold the project lock, which makes the create race-free."""
    state = StoryState.objects.select_for_update().filter(project=project).first()
    if state is None:
        state = StoryState.objects.create(project=project, data=empty_state())
    return state


def storyline_lock(*, project: Project, slug: str) -> Storyline | None:
    """The project's storyline ``slug``, locked (after the project and the state: its memory is
    about to be overwritten by a commit); None if there is no such line."""
    return Storyline.objects.select_for_update(of=("self",)).filter(project=project, slug=slug).first()


def row_lock(instance: M) -> M:
    """Re-read one row under a lock (any story model)."""
    return type(instance)._default_manager.select_for_update(of=("self",)).get(pk=instance.pk)


def foreshadowing_lock_many(*, project: Project, fids: list[str]) -> dict[str, Foreshadowing]:
    rows = project.foreshadowing.select_for_update(of=("self",)).filter(fid__in=fids).order_by("pk")
    return {row.fid: row for row in rows}
