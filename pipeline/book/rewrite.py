"""CHAPTER_REWRITE: a person asks to rewrite a committed chapter.

- The latest chapter is taken back out of the book exactly (its state delta rolled back, the
  changelog as it was before it; ``projects.services.chapter_rollback``) and written again by the
  chapter pipeline with the person's notes as required fixes. Its commit returns the project to
  WRITING.
- An older chapter (later ones rest on it), or a latest one that cannot be rolled back exactly,
  gets a text-only revision that must keep its summary's facts (``pipeline.book.revision``).
"""
from __future__ import annotations

from django.db import transaction

from pipeline.runtime.blackboard import Blackboard
from pipeline.runtime.runs import book_run_create
from pipeline.errors import PipelineNotReady
from pipeline.models import PipelineRun, RunKind
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.runtime.runs import chapter_run_create
from projects.errors import InvalidData
from projects.lock_objects import project_lock
from projects.models import Chapter, OrchestratorState, PipelineStage
from projects.services.chapter_rollback import RollbackRefused, chapter_rollback_latest

MAX_NOTES = 2000
REWRITE_STAGES = ("draft", "judge", "commit")  # a rewrite run's stages (pipeline/book/revision.py)


@transaction.atomic(durable=True)
def chapter_rewrite_start(*, project_id: int, chapter: int, notes: str, user=None) -> PipelineRun:
    """Start rewriting committed ``chapter``; the project goes to CHAPTER_REWRITE until it commits."""
    notes = (notes or "").strip()
    if not notes or len(notes) > MAX_NOTES:
        raise InvalidData(f"notes: say what to change (1–{MAX_NOTES} characters)")
    project = project_lock(project_id)
    if project.orchestrator_state != OrchestratorState.WRITING:
        raise PipelineNotReady(f"{project.slug} is in {project.orchestrator_state}; chapters are rewritten while "
                               "writing (finish or cancel what is running first)")
    if not Chapter.objects.filter(project=project, number=chapter).exists():
        raise InvalidData(f"chapter: {chapter} is not a committed chapter")
    before = project.orchestrator_state
    if chapter == project.last_completed_chapter:
        try:
            with transaction.atomic():  # a refusal leaves nothing behind
                rolled = chapter_rollback_latest(project=project, number=chapter, user=user)
        except RollbackRefused as exc:
            reason = exc.message
        else:
            project.refresh_from_db()
            run = chapter_run_create(project, user=user)
            board = Blackboard(run.blackboard)
            board.as_("worker").write_content("revision", "required_fixes", [notes])
            board.as_("worker").write_content("revision", "previous_text", rolled.text)
            PipelineRun.objects.filter(pk=run.pk).update(blackboard=board.to_dict())
            checkpoint_update(project.pk, orchestrator_state=OrchestratorState.CHAPTER_REWRITE, run=run, actor=user,
                              from_state=before, reason=f"rewrite of chapter {chapter} (rolled back to state "
                                                        f"v{rolled.state_version})")
            return run
    else:
        reason = f"chapter {chapter} is not the latest"
    run = book_run_create(project, kind=RunKind.REWRITE, steps=list(REWRITE_STAGES), user=user,
                          volume=None, meta={"chapter": chapter, "notes": notes, "text_only": True, "why": reason})
    PipelineRun.objects.filter(pk=run.pk).update(chapter=chapter)
    checkpoint_update(project.pk, orchestrator_state=OrchestratorState.CHAPTER_REWRITE, inflight_chapter=chapter,
                      pipeline_stage=PipelineStage.DRAFTING, revision_count=0, run=run, actor=user, from_state=before,
                      reason=f"text-only revision of chapter {chapter}: {reason}")
    return run
