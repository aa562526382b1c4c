"""Taking the latest chapter back out of the book so it can be written again (CHAPTER_REWRITE).

Exact by construction: the chapter's state delta must be the last entry of the changelog, so the
state before it is the state of the previous entry (or the replay of all earlier ones), and the
changelog after the rollback is the same chain it was before the chapter was committed. The
chapter's rows (text, summary, evaluation, log), its foreshadowing events, the facts it added or
closed in the ledger and its storyline memory update go with it; simple-history keeps the deleted
chapter's last version.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from projects.errors import NovelsiteError
from projects.filetree.paths import crossref_path
from projects.lock_objects import project_lock, story_state_lock
from projects.models import (
    ArchivedSummary,
    ChangeSource,
    Chapter,
    ExtraFile,
    Foreshadowing,
    ForeshadowingEvent,
    STATUS_RANK,
    StateChange,
    Storyline,
    VolumeStateSnapshot,
)
from projects.models.project import Project
from projects.services.facts import story_facts_undo_chapter
from projects.state_ops import apply_delta, replay


class RollbackRefused(NovelsiteError):
    """The chapter cannot be taken back exactly; revise its text instead."""

    code = "rollback_refused"
    http_status = 409


@dataclass(frozen=True)
class RolledBack:
    chapter: int
    title: str
    text: str
    summary: str
    state_version: int  # the state's version after the rollback


def _refuse(message: str) -> None:
    raise RollbackRefused(message + "; a text-only revision keeps the story as it is")


@transaction.atomic
def chapter_rollback_latest(*, project: Project, number: int, user: AbstractBaseUser | None = None) -> RolledBack:
    """Remove committed chapter ``number``, which must be the latest, and every trace of its commit.
    Locks: project, then StoryState. Refused (nothing changed) when its delta is not the last
    change of the state (someone edited the state since) or memory already folded it into an
    archived summary."""
    project = project_lock(project.pk)
    if number != project.last_completed_chapter:
        _refuse(f"chapter {number} is not the latest committed chapter ({project.last_completed_chapter})")
    chapter = Chapter.objects.filter(project=project, number=number).select_related("summary").first()
    if chapter is None:
        _refuse(f"chapter {number} is not in the book")
    state = story_state_lock(project)
    changes = list(StateChange.objects.filter(project=project).order_by("state_version"))
    last = changes[-1] if changes else None
    if last is None or last.chapter != number or last.source != ChangeSource.PIPELINE \
            or last.state_version != state.state_version:
        _refuse(f"the state changed after chapter {number} was committed (it is not the last change)")
    if ArchivedSummary.objects.filter(project=project, chapter_end__gte=number).exists():
        _refuse(f"chapter {number} is already folded into the memory's archived summaries")
    before = _state_before(project, changes[:-1])
    if apply_delta(before, last.delta) != state.data:  # the stored state is not its changelog's replay
        _refuse(f"the state is not the replay of its changelog up to chapter {number}")
    state.data, state.state_version = before, before["state_version"]
    state.save()
    last.delete()
    _undo_foreshadowing(project, number)
    story_facts_undo_chapter(project=project, chapter=number)
    _undo_storyline_memory(project, chapter)
    ExtraFile.objects.filter(project=project, path=crossref_path(number)).delete()  # the commit's crossref file
    rolled = RolledBack(number, chapter.title, chapter.text, getattr(chapter, "summary", None) and chapter.summary.text
                        or "", state.state_version)
    chapter._history_user = user
    chapter.delete()  # summary, evaluation and log go with it (cascade)
    Project.objects.filter(pk=project.pk).update(last_completed_chapter=number - 1)
    return rolled


def _state_before(project: Project, earlier: list[StateChange]) -> dict:
    """The state after ``earlier`` (the changelog without the chapter's entry): replayed from the
    newest volume snapshot it covers, so a long book does not replay from its first chapter."""
    newest = earlier[-1].state_version if earlier else 0
    snapshots = VolumeStateSnapshot.objects.filter(project=project).order_by("-volume_number")
    start = next((s.data for s in snapshots if s.data.get("state_version", 0) <= newest), None)
    since = start["state_version"] if start else 0
    return replay([c.delta for c in earlier if c.state_version > since], start=copy.deepcopy(start) if start else None)


def _undo_foreshadowing(project: Project, number: int) -> None:
    """Drop the chapter's events; each touched item is recomputed from the events left (an item
    the chapter planted and nothing else touched disappears)."""
    touched = set(ForeshadowingEvent.objects.filter(foreshadowing__project=project, chapter=number)
                  .values_list("foreshadowing_id", flat=True))
    ForeshadowingEvent.objects.filter(foreshadowing__project=project, chapter=number).delete()
    for item in Foreshadowing.objects.filter(pk__in=touched).order_by("pk"):
        events = list(item.events.order_by("chapter", "pk").values_list("chapter", "action"))
        if not events:
            item.delete()
            continue
        item.status = max((action for _c, action in events), key=lambda a: STATUS_RANK[a])
        item.last_updated_chapter = max(chapter for chapter, _a in events)
        planted = [chapter for chapter, action in events if action == "planted"]
        item.planted_chapter = min(planted) if planted else None
        item.save()


def _undo_storyline_memory(project: Project, chapter: Chapter) -> None:
    """The storyline's memory as it was before the commit overwrote it (its history)."""
    if chapter.storyline_id is None:
        return
    line = Storyline.objects.select_for_update().get(pk=chapter.storyline_id)
    before = line.history.filter(version__lt=line.version).order_by("-version", "-history_date").first()
    if before is not None:
        line.memory, line.version = before.memory, line.version + 1
        line.save(update_fields=["memory", "version"])
