"""The life of a pipeline run: start it (a chapter, or a run that moves the book), and stop,
retry, cancel or recover it. Its stages are claimed and finished in ``pipeline.runtime.claims``.

The database is the state machine; the broker only wakes workers up (DESIGN §4).
``runs_reconcile`` re-enqueues runs whose lease expired (a killed worker) or whose wake-up message
was lost.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Q, TextField, Value, When
from django.utils import timezone

from pipeline.nightly.batch_end import StopReason, batch_end
from pipeline.runtime.blackboard import Blackboard
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.errors import PipelineBusy, PipelineNotReady
from pipeline.models import (
    ACTIVE_RUN_STATUSES,
    SIDE_RUN_KINDS,
    GateQuestion,
    GateStatus,
    PipelineRun,
    RunKind,
    RunStatus,
    StageRun,
    StageRunStatus,
)
from pipeline.runtime.claims import lease_seconds
from pipeline.runtime.locks import run_lock_pair
from pipeline.runtime.queueing import enqueue_stage
from projects.lock_objects import project_lock
from projects.models import OrchestratorState, PipelineStage, Project
from projects.vocabulary import CHAPTER_RUN_STEPS

WRITABLE_STATES = (OrchestratorState.WRITING, OrchestratorState.CHAPTER_REWRITE)


# --- starting ----------------------------------------------------------------------------------------


@transaction.atomic(durable=True)
def chapter_run_start(*, project_id: int, user=None, batch_remaining: int = 0) -> PipelineRun:
    """Start writing the next chapter. Refused while another run is active or the project is not
    in WRITING. ``batch_remaining`` more chapters follow this one, each started when the previous
    commits (a batch is a chain of chapters). Enqueues the draft stage after commit."""
    project = project_lock(project_id)
    return chapter_run_create(project, user=user, batch_remaining=batch_remaining)


def chapter_run_create(project: Project, *, user=None, batch_remaining: int = 0,
                       batch_id: int | None = None, check_busy: bool = True) -> PipelineRun:
    """The run of the project's next chapter, queued at its draft (woken after commit), and the
    checkpoint moved to it. The caller holds the project lock (``project`` is the locked row).
    ``PipelineBusy`` while another run is active (unless the caller knows none can be), and
    ``PipelineNotReady`` outside WRITING or without the chapter's contract: both before anything
    is written, so no savepoint is needed around it."""
    if check_busy:
        if (active := active_run(project)) is not None:
            raise PipelineBusy(f"{project.slug} is busy: {active}", extra={"run_id": active.pk})
    if project.orchestrator_state not in WRITABLE_STATES:
        raise PipelineNotReady(f"{project.slug} is in {project.orchestrator_state}; chapters are written in WRITING")
    chapter = project.last_completed_chapter + 1
    contract = project.chapter_contracts.filter(chapter=chapter).values_list("volume__number", "data").first()
    if contract is None:
        raise PipelineNotReady(f"chapter {chapter} has no contract: plan its volume first",
                               extra={"chapter": chapter})
    volume, data = contract
    board = Blackboard()
    board.as_("orchestrator").initialise(
        meta={"kind": "chapter", "chapter": chapter, "volume": volume,
              "storyline_id": data.get("storyline_id"), "batch_remaining": batch_remaining},
        steps=list(CHAPTER_RUN_STEPS),
    )
    run = PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=chapter,
                                     volume_number=volume, status=RunStatus.QUEUED, stage="draft",
                                     blackboard=board.to_dict(), created_by=user, batch_id=batch_id)
    checkpoint_update(project.pk, reason=f"chapter {chapter} started", run=run, actor=user,
                      from_state=project.orchestrator_state,
                      inflight_chapter=chapter, pipeline_stage=PipelineStage.DRAFTING, revision_count=0,
                      orchestrator_state=OrchestratorState.WRITING, current_volume=volume)
    enqueue_stage(run.pk, "draft")
    return run


# --- runs that move the book ---------------------------------------------------------------------


def active_run(project: Project) -> PipelineRun | None:
    return (PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES)
            .exclude(kind__in=SIDE_RUN_KINDS).first())


def book_run_create(project: Project, *, kind: str, steps: list[str], meta: dict[str, Any], user=None,
                    status: str = RunStatus.QUEUED, volume: int | None = None) -> PipelineRun:
    """A new run at its first step; the caller holds the project lock. Queued runs are woken
    after commit; a run created WAITING stops at a question the caller opens."""
    if (busy := active_run(project)) is not None:
        raise PipelineBusy(f"{project.slug} is busy: {busy}", extra={"run_id": busy.pk})
    board = Blackboard()
    board.as_("orchestrator").initialise(meta={"kind": kind, **meta}, steps=steps)
    run = PipelineRun.objects.create(project=project, kind=kind, status=status, stage=steps[0],
                                     volume_number=volume, blackboard=board.to_dict(), created_by=user)
    if status == RunStatus.QUEUED:
        enqueue_stage(run.pk, steps[0])
    return run


def run_resume_at(run: PipelineRun, stage: str, board: Blackboard | None = None) -> None:
    """Send a waiting run on to ``stage`` (the caller holds the project and run locks)."""
    if board is not None:
        run.blackboard = board.to_dict()
    run.stage, run.status = stage, RunStatus.QUEUED
    run.save(update_fields=["blackboard", "stage", "status", "updated_at"])
    enqueue_stage(run.pk, stage)


# --- errors and recovery -----------------------------------------------------------------------------


@transaction.atomic(durable=True)
def run_mark_error(*, run_id: int, error: str, stage: str | None = None) -> None:
    """Retries are spent: the run stops with its cause in the control zone and the project goes to
    ERROR_RETRY until someone retries (``run_retry``). With ``stage``, only if the run is still at
    that stage (a duplicate message may have moved it on meanwhile)."""
    locked = run_lock_pair(run_id)
    if locked is None:
        return
    project, run = locked
    project_id = project.pk
    if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING) or (stage is not None and run.stage != stage):
        return  # finished, cancelled or moved on meanwhile (a redelivered twin committed it): nothing failed
    if run.status == RunStatus.RUNNING and run.lease_expires_at is not None and run.lease_expires_at > timezone.now():
        # Someone holds a live lease on the stage: a twin of this task is working on it (or this
        # task's own lease, left when the database failed under it). That execution finishes or
        # fails on its own; if its worker is dead the reconciler resumes the run once the lease expires.
        return
    board = Blackboard(run.blackboard)
    board.as_("orchestrator").write_control("error_retry", {"stage": run.stage, "error": error[:2000],
                                                            "at": timezone.now().isoformat(timespec="seconds")})
    run.blackboard, run.status, run.error = board.to_dict(), RunStatus.ERROR, error[:2000]
    run.lease_owner, run.lease_expires_at = "", None
    run.save(update_fields=["blackboard", "status", "error", "lease_owner", "lease_expires_at", "updated_at"])
    # An attempt the database interrupted was left open for its retry (stage_fail's keep_attempt);
    # there is none now: it failed, and a person's retry starts a new one.
    StageRun.objects.filter(run=run, status=StageRunStatus.RUNNING).update(
        status=StageRunStatus.FAILED, finished_at=timezone.now(),
        error=Case(When(error="", then=Value(run.error)), default=F("error"), output_field=TextField()))
    if run.kind in SIDE_RUN_KINDS:  # a post or a style analysis runs beside the book: its failure does not stop it
        return
    checkpoint_update(project_id, orchestrator_state=OrchestratorState.ERROR_RETRY, run=run,
                      reason=f"{run.stage}: retries spent: {error[:200]}")
    batch_end(run, reason=StopReason.ERROR, detail=f"chapter {run.chapter}, {run.stage}: {error[:300]}")


RUN_KIND_STATES = {  # the orchestrator state a run of each kind works in
    RunKind.CHAPTER: OrchestratorState.WRITING, RunKind.REWRITE: OrchestratorState.CHAPTER_REWRITE,
    RunKind.QUICKSTART: OrchestratorState.QUICK_START, RunKind.PLAN: OrchestratorState.VOL_PLANNING,
    RunKind.REVIEW: OrchestratorState.VOL_REVIEW,
}


def _resume_state(run: PipelineRun) -> str:
    return RUN_KIND_STATES.get(run.kind, OrchestratorState.WRITING)


@transaction.atomic(durable=True)
def run_retry(*, run_id: int, user=None) -> PipelineRun:
    """Resume a run stopped in ERROR from the stage it failed in (a fresh set of retries)."""
    locked = run_lock_pair(run_id)
    if locked is None:
        raise PipelineNotReady("no such run")
    project, run = locked
    project_id = project.pk
    if run.status != RunStatus.ERROR:
        raise PipelineNotReady(f"run {run.pk} is {run.status}, not in error")
    run.status, run.attempt, run.error = RunStatus.QUEUED, 0, ""
    run.save(update_fields=["status", "attempt", "error", "updated_at"])
    if run.kind not in SIDE_RUN_KINDS:
        checkpoint_update(project_id, orchestrator_state=_resume_state(run), run=run, actor=user,
                          reason=f"retry of {run.stage}")
    enqueue_stage(run.pk, run.stage)
    return run


@transaction.atomic(durable=True)
def run_cancel(*, run_id: int, user=None) -> None:
    """Stop a run; its staged work is dropped and the project is idle again (a chapter run's
    project is back in WRITING; other runs leave the state where their step would start again)."""
    locked = run_lock_pair(run_id)
    if locked is None:
        return
    project, run = locked
    project_id = project.pk
    if run.status in (RunStatus.DONE, RunStatus.CANCELLED):
        return
    run.status, run.finished_at, run.lease_owner, run.lease_expires_at = RunStatus.CANCELLED, timezone.now(), "", None
    run.save(update_fields=["status", "finished_at", "lease_owner", "lease_expires_at", "updated_at"])
    # its NOVEL_ASK questions go with it: nobody can answer them any more (the run no longer waits)
    GateQuestion.objects.filter(run=run, status=GateStatus.OPEN).update(status=GateStatus.CANCELLED)
    if run.kind in SIDE_RUN_KINDS:
        pass  # a post or a style analysis runs beside the book: the book's state is not its to change
    elif run.kind in (RunKind.CHAPTER, RunKind.REWRITE):
        checkpoint_update(project_id, inflight_chapter=None, pipeline_stage=PipelineStage.COMMITTED, revision_count=0,
                          orchestrator_state=OrchestratorState.WRITING, run=run, actor=user, reason="run cancelled")
    else:
        checkpoint_update(project_id, orchestrator_state=_resume_state(run), run=run, actor=user,
                          reason="run cancelled")
    batch_end(run, reason=StopReason.CANCELLED)


def runs_reconcile(*, stale_after_seconds: int | None = None) -> list[int]:
    """Re-enqueue runs that should be moving but are not: a RUNNING run whose lease expired (its
    worker died: a live worker renews its lease) and a QUEUED run untouched for a while (its
    wake-up message was lost). A run queued after a failed attempt (``error`` set) is waiting for
    its retry's backoff, which may be up to NOVELSITE_MAX_RETRY_COUNTDOWN: it counts as forgotten
    only after that, so that the reconciler does not cut a rate limit's backoff short.
    Re-enqueueing is always safe: a task whose stage moved on does nothing."""
    now = timezone.now()
    stale_seconds = stale_after_seconds if stale_after_seconds is not None else lease_seconds()
    stale = now - timedelta(seconds=stale_seconds)
    backing_off = stale - timedelta(seconds=settings.NOVELSITE_MAX_RETRY_COUNTDOWN)
    expired = PipelineRun.objects.filter(status=RunStatus.RUNNING, lease_expires_at__lt=now)
    forgotten = PipelineRun.objects.filter(
        Q(error="", updated_at__lt=stale) | Q(updated_at__lt=backing_off), status=RunStatus.QUEUED)
    woken = []
    for run_id, stage in [*expired.values_list("pk", "stage"), *forgotten.values_list("pk", "stage")]:
        enqueue_stage(run_id, stage)
        woken.append(run_id)
    return woken
