"""Committing a written chapter into the story: everything the pipeline staged lands in ONE
transaction, or nothing does (seed 000 §9.2, facts §7.4)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from projects.errors import NovelsiteError
from projects.evaluations import chapter_log_columns, evaluation_columns
from projects.filetree.canonical import dump_json
from projects.filetree.paths import crossref_path
from projects.lock_objects import project_lock_id, storyline_lock
from projects.models import (
    ChangeSource,
    Chapter,
    ChapterContract,
    ChapterLog,
    ChapterSummary,
    Evaluation,
    ExtraFile,
    OrchestratorState,
    PipelineStage,
    Project,
    Volume,
)
from projects.models.storylines import STORYLINE_MEMORY_MAX_CHARS
from projects.services.appearances import character_appearances_add, character_appearances_record
from projects.services.facts import story_facts_apply_commit
from projects.services.story_state import story_state_apply_patch_locked
from projects.services.unknown_entities import unknown_entities_append

log = logging.getLogger(__name__)


class ChapterAlreadyCommitted(NovelsiteError):
    """This chapter is already in the book."""

    code = "chapter_exists"
    http_status = 409


@dataclass(frozen=True)
class StagedChapter:
    """Plain data from the pipeline's staging, so that ``projects`` never sees a run."""

    number: int
    volume_number: int
    storyline_slug: str
    title: str
    text: str
    summary: str
    delta: dict[str, Any]
    memory: str | None
    evaluation: dict[str, Any]
    log: dict[str, Any]
    facts: dict[str, Any] | None = None  # the ledger's new and closed facts (services/facts.py)
    crossref: dict[str, Any] | None = None  # state/chapter-NNN-crossref.json, which the tool's commit keeps


@transaction.atomic
def chapter_commit_story(*, project: Project, staged: StagedChapter) -> Chapter:
    """Chapter, summary, state patch (version check, changelog, foreshadowing ledger), storyline
    memory, evaluation, log, the facts ledger and checkpoint, together. A stale ``base_state_version`` raises
    ``StalePatch`` with nothing written; the caller sends the run back to summarize.

    Locks: project, then StoryState (through the patch service), then the storyline row.
    """
    project_lock_id(project.pk)
    return chapter_commit_story_locked(project=project, staged=staged)


def _unknown_entities(evaluation: Any) -> list:
    checks = evaluation.get("deterministic_checks") if isinstance(evaluation, dict) else None
    story = checks.get("story") if isinstance(checks, dict) else None
    found = story.get("unknown_entities") if isinstance(story, dict) else None
    return found if isinstance(found, list) else []


def chapter_commit_story_locked(*, project: Project, staged: StagedChapter) -> Chapter:
    """The body of ``chapter_commit_story``, inside the caller's transaction, which holds the
    project lock and passes the project as it read it under that lock (the pipeline's commit);
    the instance then holds the checkpoint written.
    ``ChapterAlreadyCommitted`` and ``StalePatch`` are raised before the first write, so a caller
    that catches them may go on with its transaction: no savepoint is needed (this is the hot
    path of every chapter, and a savepoint costs two round trips)."""
    if Chapter.objects.filter(project=project, number=staged.number).exists():
        raise ChapterAlreadyCommitted(f"chapter {staged.number} is already committed")
    story_state_apply_patch_locked(project=project, delta=staged.delta, source=ChangeSource.PIPELINE)
    # the volume's id only: its outline and plans are not this commit's business (nor worth reading)
    volume_id = Volume.objects.filter(project=project, number=staged.volume_number).values_list("pk", flat=True).first()
    if volume_id is None:
        volume_id = Volume.objects.create(project=project, number=staged.volume_number).pk
    storyline = storyline_lock(project=project, slug=staged.storyline_slug)  # its memory is overwritten below
    chapter = Chapter(project=project, volume_id=volume_id, number=staged.number, storyline=storyline,
                      title=staged.title[:200], text=staged.text)
    chapter.save()
    ChapterSummary.objects.create(project=project, chapter=chapter, storyline_slug=staged.storyline_slug,
                                  text=staged.summary)
    contract = ChapterContract.objects.filter(project=project, chapter=staged.number).values_list("data", flat=True)
    character_appearances_record(project=project, chapter=chapter, contract=contract.first(), delta=staged.delta)
    if storyline is not None and staged.memory is not None:
        # facts §7.4 / §15.3: the memory file is overwritten (the CLI's refusal is a bug)
        storyline.memory, storyline.version = staged.memory[:STORYLINE_MEMORY_MAX_CHARS], storyline.version + 1
        storyline.save(update_fields=["memory", "version"])
    Evaluation.objects.create(project=project, chapter=chapter, data=staged.evaluation,
                              **evaluation_columns(staged.evaluation))
    ChapterLog.objects.create(project=project, chapter=chapter, data=staged.log, **chapter_log_columns(staged.log))
    if staged.facts:  # issue #18: new facts stored, fulfilled or cancelled ones closed, with the chapter
        ledger = story_facts_apply_commit(project=project, chapter=staged.number,
                                          storyline_slug=staged.storyline_slug, facts=staged.facts)
        for note in ledger.notes:
            log.info("project %s chapter %s: facts ledger: %s", project.pk, staged.number, note)
        # the characters a fact of this chapter binds were in it (recall by appearance, #18)
        bound = {slug for fact in [*ledger.created, *ledger.closed] for slug in fact.characters or []}
        character_appearances_add(project=project, chapter=chapter, slugs=sorted(bound), source="ledger")
    # #18: the names the story checks did not know, as the original tool logs them
    unknown_entities_append(project=project, chapter=staged.number, entities=_unknown_entities(staged.evaluation))
    if staged.crossref is not None:  # facts §7.4: the tool's commit moves it to state/; kept as a tree file
        ExtraFile.objects.update_or_create(project=project, path=crossref_path(staged.number),
                                           defaults={"content": dump_json(staged.crossref).decode()})
    checkpoint = {"last_completed_chapter": max(project.last_completed_chapter, staged.number),
                  "pipeline_stage": PipelineStage.COMMITTED, "inflight_chapter": None, "revision_count": 0,
                  "hook_fix_count": 0, "title_fix_count": 0, "orchestrator_state": OrchestratorState.WRITING,
                  "last_checkpoint_time": timezone.now()}
    Project.objects.filter(pk=project.pk).update(**checkpoint)
    for name, value in checkpoint.items():  # the caller's instance says what the row now holds
        setattr(project, name, value)
    return chapter
