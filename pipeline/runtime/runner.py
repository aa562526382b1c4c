"""Running one stage of a run: claim it, do the work with no lock held (a heartbeat renews its
lease meanwhile), then complete it (which enqueues the next stage) or record the failure. Called
by ``stage_run_task``; safe to call twice for the same stage (the second call finds nothing to
claim)."""
from __future__ import annotations

import logging

from django.db import DatabaseError, InterfaceError, OperationalError

from pipeline.runtime import progress
from pipeline.nightly.budget import BudgetExhausted
from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.context import ChapterContext, chapter_context, context_restore, context_snapshot
from pipeline.errors import LeaseLost
from pipeline.llm.types import LLMError
from pipeline.models import PipelineRun
from pipeline.nightly.batches import run_budget_stop
from pipeline.runtime.claims import Claim, StageOutcome, new_lease_owner, stage_claim, stage_complete, stage_fail
from pipeline.runtime.db_connection import connection_drop_if_broken
from pipeline.runtime.heartbeat import LeaseHeartbeat
from pipeline.runtime.registry import stage_for
from pipeline.runtime.runs import run_mark_error
from pipeline.runtime.stage import CHAPTER, Stage
from projects.models import Project

log = logging.getLogger(__name__)


def stage_run(*, run_id: int, stage: str) -> None:
    """Raise an ``LLMError`` for the task to retry (transient) or give up on (permanent)."""
    kind = PipelineRun.objects.filter(pk=run_id).values_list("kind", flat=True).first()
    if kind is None:
        log.info("run %s: gone; nothing to do for %s", run_id, stage)
        return
    entry = stage_for(kind, stage)
    owner = new_lease_owner()
    if entry.in_one_transaction is not None:  # claims and finishes at once (a chapter's commit)
        done = entry.in_one_transaction(run_id=run_id, owner=owner)
        if done is None:
            log.info("run %s: nothing to do for %s (moved on, waiting or leased elsewhere)", run_id, stage)
        else:
            _one_transaction_progress(*done)
        return
    claim = stage_claim(run_id=run_id, stage=stage, owner=owner)
    if claim is None:
        log.info("run %s: nothing to do for %s (moved on, waiting or leased elsewhere)", run_id, stage)
        return
    with progress.listening(progress.cache_listener(claim.project_id)):  # the live progress of the web page
        _run_claimed(claim, entry)


def _run_claimed(claim: Claim, entry: Stage) -> None:
    run_id, stage = claim.run_id, claim.stage
    progress.emit({"event": "start", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                   "attempt": claim.attempt})
    streamed = 0

    def on_text(chunk: str) -> None:
        nonlocal streamed
        streamed += len(chunk)
        progress.emit({"event": "text", "run_id": run_id, "chapter": claim.chapter, "stage": stage, "chars": streamed,
                       "chunk": chunk})

    try:
        outcome = _execute(claim, entry, on_text)
        (entry.finish or stage_complete)(claim=claim, outcome=outcome)
        progress.emit({"event": "done", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                       "next": outcome.next_stage, "status": outcome.status})
    except LeaseLost as exc:
        log.warning("run %s: %s", run_id, exc)
    except BudgetExhausted as exc:  # not a failure: the run waits, whole, to be resumed (pipeline.nightly.batches)
        run_budget_stop(claim=claim, error=exc)
        progress.emit({"event": "done", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                       "next": None, "status": "waiting"})
    except LLMError as exc:
        _failure_record(claim, exc)
        progress.emit({"event": "failed", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                       "error": str(exc)})
        raise
    except Exception as exc:  # a bug, bad data or a database gone: record it on the run before the task fails
        _failure_record(claim, exc)
        raise


def _execute(claim: Claim, entry: Stage, on_text) -> StageOutcome:
    """The stage's work, with no lock held while a heartbeat renews the lease. A stage that lost
    its lease while it worked raises ``LeaseLost`` here: what it brings back is not written."""
    with LeaseHeartbeat(claim) as heartbeat:
        if entry.reads == CHAPTER:
            subject, fresh = _stage_context(claim)
        else:
            subject, fresh = claim.project or Project.objects.get(pk=claim.project_id), False
        outcome = entry.execute(claim, subject, Blackboard(claim.blackboard), on_text=on_text)
    heartbeat.check()
    if fresh:  # the later stages of the chapter restore it instead of reading the story again
        outcome.context = context_snapshot(subject)
    return outcome


def _failure_record(claim: Claim, error: BaseException) -> None:
    """Record the failed attempt and release the lease (``stage_fail``), on a new connection if the
    error broke the old one. A database error keeps the attempt, so that the retry reuses the LLM
    calls already stored. If the database cannot be reached at all, the original error goes on to
    the task (which retries a database error) and the lease is left to expire: ``runs_reconcile``
    resumes the run then."""
    connection_drop_if_broken()
    try:
        stage_fail(claim=claim, error=error, keep_attempt=isinstance(error, (OperationalError, InterfaceError)))
    except DatabaseError as failure:
        if not isinstance(error, DatabaseError):
            raise
        log.warning("run %s: %s failed (%s) and the failure could not be recorded: %s", claim.run_id,
                    claim.stage, error, failure)


def _one_transaction_progress(claim: Claim, result) -> None:
    """The events of a stage that claimed and finished in one transaction (a chapter's commit:
    ``result`` says whether the chapter was committed), sent once it is done. (An error there rolls
    the claim back too; the task's failure handler, retries spent, records it on the run: ERROR_RETRY.)"""
    run_id = claim.run_id
    with progress.listening(progress.cache_listener(claim.project_id)):
        progress.emit({"event": "start", "run_id": run_id, "chapter": claim.chapter, "stage": claim.stage,
                       "attempt": claim.attempt})
        progress.emit({"event": "done", "run_id": run_id, "chapter": claim.chapter, "stage": claim.stage,
                       "committed": result})


def _stage_context(claim: Claim) -> tuple[ChapterContext, bool]:
    """The story as this chapter sees it, and whether it was read afresh. The draft always reads
    it (a revision must see what people changed meanwhile); later stages restore the run's snapshot."""
    project = claim.project or Project.objects.get(pk=claim.project_id)
    if claim.stage != "draft" and (kept := context_restore(project, claim.context)) is not None:
        return kept, False
    return chapter_context(project, claim.chapter), True


def stage_run_failed(*, run_id: int, stage: str | None, error: BaseException) -> None:
    """Retries are spent (or the error cannot be retried): ERROR_RETRY with the cause."""
    run_mark_error(run_id=run_id, stage=stage, error=f"{type(error).__name__}: {error}")
