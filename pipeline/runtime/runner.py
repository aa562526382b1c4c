"""Running one stage of a run: claim it, do the work with no lock held (a heartbeat renews its
lease meanwhile), then complete it (which enqueues the next stage) or record the failure. Called
by ``stage_run_task``; safe to call twice for the same stage (the second call finds nothing to
claim)."""
from __future__ import annotations

import logging

from django.db import DatabaseError, InterfaceError, OperationalError

from pipeline import progress
from pipeline.batch_budget import BudgetExhausted
from pipeline.blackboard import Blackboard
from pipeline.context import ChapterContext, chapter_context, context_restore, context_snapshot
from pipeline.runtime.db_connection import connection_drop_if_broken
from pipeline.errors import LeaseLost
from pipeline.runtime.heartbeat import LeaseHeartbeat
from pipeline.llm.types import LLMError
from pipeline.nightly import run_budget_stop
from pipeline.runtime.runs import run_mark_error
from pipeline.runtime.claims import new_lease_owner, stage_claim, stage_complete, stage_fail
from pipeline.stages import commit, draft, judge, maintain, refine, summarize
from pipeline.promotion.run import PROMOTION_STEPS
from pipeline.stages.plan import PLAN_STEPS
from pipeline.stages.quickstart import QUICKSTART_STEPS
from pipeline.stages.review import REVIEW_STEPS
from pipeline.stages.revision import REVISION_STEPS
from pipeline.stages.voice import STYLE_STEPS
from pipeline.models import RunKind
from projects.models import Project

log = logging.getLogger(__name__)

CHAPTER_STAGES = {"draft": draft, "summarize": summarize, "refine": refine, "judge": judge, "maintain": maintain}
# the steps of runs that are not chapters
BOOK_STEPS = {**QUICKSTART_STEPS, **PLAN_STEPS, **REVIEW_STEPS, **PROMOTION_STEPS, **STYLE_STEPS}


def stage_run(*, run_id: int, stage: str) -> None:
    """Raise an ``LLMError`` for the task to retry (transient) or give up on (permanent)."""
    owner = new_lease_owner()
    if stage == "commit":  # a chapter run claims and commits in one transaction
        done = commit.chapter_commit(run_id=run_id, owner=owner)
        claim, committed = done if done is not None else (None, None)
        if committed is not None:
            _commit_progress(claim, committed)
            return
        # else nothing to claim, or a rewrite's commit, claimed and left to its own step below
    else:
        claim = stage_claim(run_id=run_id, stage=stage, owner=owner)
    if claim is None:
        log.info("run %s: nothing to do for %s (moved on, waiting or leased elsewhere)", run_id, stage)
        return
    with progress.listening(progress.cache_listener(claim.project_id)):  # the live progress of the web page
        _run_claimed(claim, run_id, stage)


def _run_claimed(claim, run_id: int, stage: str) -> None:
    progress.emit({"event": "start", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                   "attempt": claim.attempt})
    streamed = 0

    def on_text(chunk: str) -> None:
        nonlocal streamed
        streamed += len(chunk)
        progress.emit({"event": "text", "run_id": run_id, "chapter": claim.chapter, "stage": stage, "chars": streamed,
                       "chunk": chunk})

    try:
        step = REVISION_STEPS.get(stage) if claim.kind == RunKind.REWRITE else BOOK_STEPS.get(stage)
        if step is not None:
            project = claim.project or Project.objects.get(pk=claim.project_id)
            with LeaseHeartbeat(claim) as heartbeat:
                outcome = step.execute(claim, project, Blackboard(claim.blackboard), on_text=on_text)
            heartbeat.check()  # a stage that lost its lease while it worked writes nothing
            (step.finish or stage_complete)(claim=claim, outcome=outcome)
            progress.emit({"event": "done", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                           "next": outcome.next_stage, "status": outcome.status})
            return
        module = CHAPTER_STAGES[stage]
        with LeaseHeartbeat(claim) as heartbeat:
            ctx, fresh = _stage_context(claim)
            outcome = module.execute(claim, ctx, Blackboard(claim.blackboard), on_text=on_text)
        heartbeat.check()
        if fresh:
            outcome.context = context_snapshot(ctx)
        if stage == "maintain":
            maintain.maintain_finish(claim=claim, outcome=outcome)
        else:
            stage_complete(claim=claim, outcome=outcome)
        progress.emit({"event": "done", "run_id": run_id, "chapter": claim.chapter, "stage": stage,
                       "next": outcome.next_stage, "status": outcome.status})
    except LeaseLost as exc:
        log.warning("run %s: %s", run_id, exc)
    except BudgetExhausted as exc:  # not a failure: the run waits, whole, to be resumed (pipeline.nightly)
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


def _failure_record(claim, error: BaseException) -> None:
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


def _commit_progress(claim, committed: bool) -> None:
    """The events of a chapter's commit, sent once it is done: it claimed and committed in one
    transaction. (An error there rolls the claim back too; the task's failure handler, retries
    spent, records it on the run: ERROR_RETRY.)"""
    run_id = claim.run_id
    with progress.listening(progress.cache_listener(claim.project_id)):
        progress.emit({"event": "start", "run_id": run_id, "chapter": claim.chapter, "stage": "commit",
                       "attempt": claim.attempt})
        progress.emit({"event": "done", "run_id": run_id, "chapter": claim.chapter, "stage": "commit",
                       "committed": committed})


def _stage_context(claim) -> tuple[ChapterContext, bool]:
    """The story as this chapter sees it, and whether it was read afresh. The draft always reads
    it (a revision must see what people changed meanwhile); later stages restore the run's snapshot."""
    project = claim.project or Project.objects.get(pk=claim.project_id)
    if claim.stage != "draft" and (kept := context_restore(project, claim.context)) is not None:
        return kept, False
    return chapter_context(project, claim.chapter), True


def stage_run_failed(*, run_id: int, stage: str | None, error: BaseException) -> None:
    """Retries are spent (or the error cannot be retried): ERROR_RETRY with the cause."""
    run_mark_error(run_id=run_id, stage=stage, error=f"{type(error).__name__}: {error}")
