"""Claiming and finishing one stage of a run (DESIGN §4, "Locking and recovery").

A stage claims the project in a short transaction (locks: project, then run) and takes a lease
(``stage_claim``); it then works with no lock held (the LLM call); completing it re-locks, checks
the lease and the stage still hold, writes the outputs and wakes the next stage
(``stage_complete``), or records the failure and releases the lease for a retry (``stage_fail``).
A duplicated or stale task finds the stage already moved on and does nothing.

Every one of these is one durable transaction of plain ORM code (``pipeline/runtime/locks.py``),
the same on every database: a few milliseconds per stage hop, next to a model that takes tens of
seconds (bench/README.md, part 1).
"""
from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Count, F, Q, TextField, Value, When
from django.utils import timezone

from pipeline.nightly.batch_end import StopReason, batch_end
from pipeline.runtime.blackboard import Blackboard
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.questions.answers import question_open
from pipeline.models import (
    FINISHED_STAGE_RUN_STATUSES,
    PipelineRun,
    RunKind,
    RunStatus,
    StageRun,
    StageRunStatus,
)
from pipeline.runtime.locks import claimed_run_lock, project_lock_of_run, run_lock, run_lock_pair
from pipeline.runtime.queueing import enqueue_stage
from projects.models import Project


def lease_seconds() -> int:
    """How long a lease lasts unless renewed: a worker renews it while its stage waits on the model
    (``pipeline.runtime.heartbeat``), so it only bounds how long a dead worker's stage stays stuck."""
    return settings.NOVELSITE_LEASE_SECONDS


def new_lease_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Claim:
    run_id: int
    project_id: int
    stage: str
    owner: str
    attempt: int
    stage_run_id: int
    chapter: int | None
    blackboard: dict[str, Any]
    context: dict[str, Any] = field(default_factory=dict)  # the run's context snapshot, if any
    started_at: datetime | None = None  # when the stage run was claimed
    resumed: bool = False  # an earlier execution of this attempt lost its worker: its LLM calls may be stored
    project: Project | None = None  # the project row as read under the claim's lock
    kind: str = RunKind.CHAPTER  # the run's kind: which modules run its stages
    batch_id: int | None = None  # the nightly batch the run belongs to (its cost cap applies)


@transaction.atomic(durable=True)
def stage_claim(*, run_id: int, stage: str, owner: str) -> Claim | None:
    """Take the run's lease for ``stage``, or None when this task has nothing to do (the run moved
    on, was cancelled, or another worker holds a live lease)."""
    claimed = claim_locked(run_id=run_id, stage=stage, owner=owner)
    return claimed[0] if claimed is not None else None


def claim_locked(*, run_id: int, stage: str, owner: str,
                 with_context: bool = True) -> tuple[Claim, PipelineRun] | None:
    """The body of ``stage_claim`` inside the caller's transaction, with the locked run: for a
    stage with no LLM call (the commit), which claims and finishes in one transaction."""
    project = project_lock_of_run(run_id)
    if project is None:
        return None
    run = run_lock(run_id, with_context=with_context)
    now = timezone.now()
    if not _claimable(run, stage=stage, owner=owner, now=now):
        return None
    run.lease_owner, run.lease_expires_at, run.status = owner, now + timedelta(seconds=lease_seconds()), \
        RunStatus.RUNNING
    run.save(update_fields=["lease_owner", "lease_expires_at", "status", "updated_at"])
    # The attempt names the stored LLM call (call_store.call_key), so it must be new for every
    # execution of the stage that finished (a failure, or a success the run later came back to:
    # a revision, a polish pass, a stale delta, a run_retry) and the same only when the previous
    # execution never finished (its worker died, or the database failed under it: stage_fail with
    # keep_attempt), so that the redelivery reuses the stored call.
    executions = StageRun.objects.filter(run_id=run.pk, stage=stage)
    counts = executions.aggregate(finished=Count("pk", filter=Q(status__in=FINISHED_STAGE_RUN_STATUSES)),
                                  unfinished=Count("pk", filter=Q(status=StageRunStatus.RUNNING)))
    attempt = counts["finished"] + 1
    lost = counts["unfinished"] > 0
    if lost:
        # an earlier execution that never finished: say so instead of "running" forever, keeping
        # the error it recorded if it could (a worker that died recorded none)
        executions.filter(status=StageRunStatus.RUNNING).update(
            status=StageRunStatus.ABANDONED,
            error=Case(When(error="", then=Value("worker lost; stage re-claimed")), default=F("error"),
                       output_field=TextField()))
    stage_run = StageRun.objects.create(run=run, stage=stage, attempt=attempt)
    claim = Claim(run.pk, project.pk, stage, owner, attempt, stage_run.pk, run.chapter, run.blackboard,
                  run.context if with_context else {}, stage_run.started_at, resumed=lost, project=project,
                  kind=run.kind, batch_id=run.batch_id)
    return claim, run


def _claimable(run: PipelineRun, *, stage: str, owner: str, now: datetime) -> bool:
    """Whether a task for ``stage`` may take ``run``'s lease: the run is queued or running at that
    stage, and no other worker holds a live lease on it."""
    if run.stage != stage or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        return False
    return (not run.lease_owner or run.lease_owner == owner or run.lease_expires_at is None
            or run.lease_expires_at <= now)


def lease_renew(*, claim: Claim) -> bool:
    """Extend the lease ``claim`` holds by ``lease_seconds()`` from now; False (nothing written) if
    the run is no longer running at the claim's stage under the claim's owner: another worker took
    it over, or it was cancelled. One conditional UPDATE in autocommit, which locks only the run's
    row for its own duration (no project lock: it changes nothing the project lock guards)."""
    now = timezone.now()
    renewed = PipelineRun.objects.filter(
        pk=claim.run_id, stage=claim.stage, lease_owner=claim.owner, status=RunStatus.RUNNING,
    ).update(lease_expires_at=now + timedelta(seconds=lease_seconds()))
    return renewed == 1


@dataclass
class StageOutcome:
    """What a stage hands back: the new blackboard, where the run goes next and the checkpoint."""

    blackboard: dict[str, Any]
    next_stage: str | None  # None: the run is finished
    checkpoint: dict[str, Any] = field(default_factory=dict)
    status: str = RunStatus.QUEUED
    calls: list[Any] = field(default_factory=list)  # runner contexts, for tokens, cost and receipts
    model: str = ""
    backend: str = ""
    question: dict[str, Any] | None = None  # a NOVEL_ASK gate to open: step, topic, spec, answer_path
    context: dict[str, Any] | None = None  # a new context snapshot for the run ({} clears it); None keeps it


def stage_usage(calls: list[Any]) -> dict[str, Any]:
    """The tokens, cost and receipts of a stage's LLM calls, as StageRun fields."""
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_tokens": 0, "cache_read_tokens": 0,
             "cost_usd": Decimal(0)}
    receipts = []
    for ctx in calls:
        result = ctx.result
        usage["input_tokens"] += result.usage.input_tokens
        usage["output_tokens"] += result.usage.output_tokens
        usage["cache_creation_tokens"] += result.usage.cache_creation_input_tokens
        usage["cache_read_tokens"] += result.usage.cache_read_input_tokens
        usage["cost_usd"] += Decimal(result.cost_usd)
        usage["backend"], usage["model"] = ctx.backend, ctx.model
        # one provider per stage, so one currency; one unpriced call makes the stage's cost unknown
        usage["currency"] = result.currency
        usage["cost_known"] = usage.get("cost_known", True) and result.cost_known
        receipts.append(ctx.receipt())
    if receipts:
        usage["receipt"] = receipts[0] if len(receipts) == 1 else {**receipts[-1], "calls": receipts}
    return usage


def _outcome_fields(stage: str, outcome: StageOutcome, now: datetime) -> dict[str, Any]:
    """The run's fields after ``stage`` finished with ``outcome``: the lease is released."""
    fields = {"blackboard": outcome.blackboard, "stage": outcome.next_stage or stage,
              "status": outcome.status if outcome.next_stage else RunStatus.DONE, "attempt": 0, "lease_owner": "",
              "lease_expires_at": None, "error": "", "finished_at": None if outcome.next_stage else now,
              "updated_at": now}
    if outcome.context is not None:
        fields["context"] = outcome.context
    return fields


def apply_outcome(run: PipelineRun, claim: Claim, outcome: StageOutcome) -> None:
    """Write a stage's outcome; the caller holds the project and run locks."""
    now = timezone.now()
    fields = _outcome_fields(run.stage, outcome, now)
    for name, value in fields.items():
        setattr(run, name, value)
    _stage_run_succeeded(claim, outcome, now)
    run.save(update_fields=list(fields))
    _outcome_follow_up(run, outcome)


def _stage_run_succeeded(claim: Claim, outcome: StageOutcome, now: datetime) -> None:
    StageRun.objects.filter(pk=claim.stage_run_id).update(**_succeeded_fields(claim, outcome, now))


def _succeeded_fields(claim: Claim, outcome: StageOutcome, now: datetime) -> dict[str, Any]:
    started = claim.started_at or now
    return {"status": StageRunStatus.SUCCEEDED, "finished_at": now,
            "duration_ms": int((now - started).total_seconds() * 1000),
            **stage_usage(outcome.calls)}


def _outcome_follow_up(run: PipelineRun, outcome: StageOutcome) -> None:
    """After the run's row is written: the checkpoint, a gate's question, the batch, the next stage."""
    if outcome.checkpoint:
        checkpoint_update(run.project_id, **outcome.checkpoint)
    if outcome.question:
        question_open(run=run, step=outcome.question["step"], spec=outcome.question["spec"],
                      answer_path=outcome.question["answer_path"])
    if run.status == RunStatus.WAITING:  # a nightly batch stops at a gate
        batch_end(run, reason=StopReason.GATE, detail=f"chapter {run.chapter} waits at {run.stage}")
    if outcome.next_stage and run.status == RunStatus.QUEUED:
        enqueue_stage(run.pk, outcome.next_stage)


@transaction.atomic(durable=True)
def stage_complete(*, claim: Claim, outcome: StageOutcome) -> None:
    """Write the outcome of the stage ``claim`` holds, if its lease still holds (``LeaseLost``
    otherwise, with nothing written), and wake the next stage up. The default finish of a stage."""
    _project, run = claimed_run_lock(claim, with_blackboard=False)  # it is written, not read
    apply_outcome(run, claim, outcome)


def finish_locked(claim: Claim, outcome: StageOutcome, write: Callable[[Project, PipelineRun], None]) -> None:
    """The body of a stage's own finish, inside its durable transaction: lock (project, then run),
    check the lease, ``write`` the story data, then advance the run as ``stage_complete`` does."""
    project, run = claimed_run_lock(claim)
    write(project, run)
    apply_outcome(run, claim, outcome)


@transaction.atomic(durable=True)
def stage_fail(*, claim: Claim, error: BaseException, keep_attempt: bool = False) -> bool:
    """Record a failed attempt and release the lease so a retry can claim it. False if the run had
    already moved on (then the failure does not matter).

    ``keep_attempt``: the failure was the database's, not the stage's (a deadlock, a connection
    lost after the LLM answered). The stage run is then left unfinished, as a dead worker's is, so
    that the retry resumes this attempt and reuses its stored LLM calls instead of paying again."""
    locked = run_lock_pair(claim.run_id, with_context=False)
    if locked is None:
        return False
    _project, run = locked
    if run.stage != claim.stage or run.lease_owner != claim.owner:
        return False
    board = Blackboard(run.blackboard)
    board.as_("orchestrator").append_error(claim.stage, type(error).__name__, str(error)[:2000])
    retries = board.as_("orchestrator").read_control("retries") or {}
    board.as_("orchestrator").write_control("retries", {**retries, claim.stage: retries.get(claim.stage, 0) + 1})
    run.blackboard = board.to_dict()
    run.attempt += 1
    run.lease_owner, run.lease_expires_at, run.status = "", None, RunStatus.QUEUED
    run.error = f"{type(error).__name__}: {error}"[:2000]
    run.save(update_fields=["blackboard", "attempt", "lease_owner", "lease_expires_at", "status", "error",
                            "updated_at"])
    if keep_attempt:
        StageRun.objects.filter(pk=claim.stage_run_id).update(error=run.error)
    else:
        StageRun.objects.filter(pk=claim.stage_run_id).update(status=StageRunStatus.FAILED,
                                                              finished_at=timezone.now(), error=run.error)
    return True
