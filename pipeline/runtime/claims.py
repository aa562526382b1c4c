"""Claiming and finishing one stage of a run (DESIGN §4, "Locking and recovery").

A stage claims the project in a short transaction (locks: project, then run) and takes a lease
(``stage_claim``); it then works with no lock held (the LLM call); completing it re-locks, checks
the lease and the stage still hold, writes the outputs and wakes the next stage
(``stage_complete``), or records the failure and releases the lease for a retry (``stage_fail``).
A duplicated or stale task finds the stage already moved on and does nothing.
"""
from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, TextField, Value, When
from django.utils import timezone

from pipeline.batch_end import StopReason, batch_end
from pipeline.blackboard import Blackboard
from pipeline.checkpoint import checkpoint_update
from pipeline.errors import LeaseLost
from pipeline.gates import question_open
from pipeline.runtime.locks import project_lock_of_run, run_lock, stage_finish_statement
from pipeline.models import PipelineRun, RunKind, RunStatus, StageRun
from pipeline.runtime.queueing import enqueue_stage
from projects.lock_objects import db_value, project_lock_id, update_returning
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
    project_id = project.pk
    run = _lease_take(run_id, stage=stage, owner=owner, with_context=with_context)
    if run is None:
        return None
    # The attempt names the stored LLM call (call_store.call_key), so it must be new for every
    # execution of the stage that finished (a failure, or a success the run later came back to:
    # a revision, a polish pass, a stale delta, a run_retry) and the same only when the previous
    # execution never finished (its worker died, or the database failed under it: stage_fail with
    # keep_attempt), so that the redelivery reuses the stored call.
    attempt = run.finished_executions + 1  # counted by _lease_take, in the same statement
    lost = run.unfinished_executions > 0
    if lost:
        # an earlier execution that never finished: say so instead of "running" forever, keeping
        # the error it recorded if it could (a worker that died recorded none)
        StageRun.objects.filter(run_id=run.pk, stage=stage, status="running").update(
            status="abandoned", error=Case(When(error="", then=Value("worker lost; stage re-claimed")),
                                           default=F("error"), output_field=TextField()))
    stage_run = StageRun.objects.create(run=run, stage=stage, attempt=attempt)
    claim = Claim(run.pk, project_id, stage, owner, attempt, stage_run.pk, run.chapter, run.blackboard,
                  run.context if with_context else {}, stage_run.started_at, resumed=lost, project=project,
                  kind=run.kind, batch_id=run.batch_id)
    return claim, run


def _lease_take(run_id: int, *, stage: str, owner: str, with_context: bool) -> PipelineRun | None:
    """Lock 2: take the run's lease for ``stage`` and return the run, or None when the run is not
    queued or running at ``stage`` or another owner's lease is still live. One conditional UPDATE
    (it locks the row as it changes it) instead of a locked read and a save; it also counts the
    stage's earlier executions, finished (``finished_executions``) and not (``unfinished_executions``)."""
    now = timezone.now()
    where = ("id = %s AND stage = %s AND status IN (%s, %s) AND "
             "(lease_owner = '' OR lease_owner = %s OR lease_expires_at IS NULL OR lease_expires_at <= %s)")
    names = [f.name for f in PipelineRun._meta.concrete_fields if with_context or f.name != "context"]
    executions = f"SELECT COUNT(*) FROM {StageRun._meta.db_table} WHERE run_id = %s AND stage = %s AND status"
    return update_returning(
        PipelineRun, {"lease_owner": owner, "lease_expires_at": now + timedelta(seconds=lease_seconds()),
                      "status": RunStatus.RUNNING, "updated_at": now},
        where, [run_id, stage, RunStatus.QUEUED, RunStatus.RUNNING, owner,
                db_value(PipelineRun, "lease_expires_at", now)], names,
        extra={"finished_executions": (f"{executions} IN (%s, %s)", [run_id, stage, "succeeded", "failed"]),
               "unfinished_executions": (f"{executions} = %s", [run_id, stage, "running"])})


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


def _holding(run: PipelineRun, claim: Claim) -> None:
    if run.stage != claim.stage or run.lease_owner != claim.owner or run.status != RunStatus.RUNNING:
        raise LeaseLost(f"run {run.pk} moved on from {claim.stage} (now {run.status}/{run.stage})")


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
    return {"status": "succeeded", "finished_at": now, "duration_ms": int((now - started).total_seconds() * 1000),
            **stage_usage(outcome.calls)}


def _outcome_follow_up(run: PipelineRun, outcome: StageOutcome, *, checkpoint_written: bool = False) -> None:
    """After the run's row is written: the checkpoint (unless the caller wrote it already), a
    gate's question, the batch, the next stage."""
    if outcome.checkpoint and not checkpoint_written:
        checkpoint_update(run.project_id, **outcome.checkpoint)
    if outcome.question:
        question_open(run=run, step=outcome.question["step"], spec=outcome.question["spec"],
                      answer_path=outcome.question["answer_path"])
    if run.status == RunStatus.WAITING:  # a nightly batch stops at a gate
        batch_end(run, reason=StopReason.GATE, detail=f"chapter {run.chapter} waits at {run.stage}")
    if outcome.next_stage and run.status == RunStatus.QUEUED:
        enqueue_stage(run.pk, outcome.next_stage)


def stage_complete(*, claim: Claim, outcome: StageOutcome) -> None:
    """Write the outcome of the stage ``claim`` holds, if its lease still holds (``LeaseLost``
    otherwise, with nothing written), and wake the next stage up."""
    if connection.vendor == "postgresql" and _plain(outcome):
        _stage_complete_in_one_statement(claim, outcome)
    else:
        _stage_complete_in_a_transaction(claim, outcome)


def _plain(outcome: StageOutcome) -> bool:
    """The outcome of most stages: on to the next stage, maybe a move of the chapter's checkpoint;
    no question to open, no wait, no change of orchestrator state (which need more than writes)."""
    return (outcome.next_stage is not None and outcome.status == RunStatus.QUEUED and not outcome.question
            and "orchestrator_state" not in outcome.checkpoint)


def _stage_complete_in_one_statement(claim: Claim, outcome: StageOutcome) -> None:
    now = timezone.now()
    checkpoint = {**outcome.checkpoint, "last_checkpoint_time": now} if outcome.checkpoint else {}
    run = stage_finish_statement(
        project_id=claim.project_id, run_id=claim.run_id, lease=(claim.stage, claim.owner, RunStatus.RUNNING),
        run_values=_outcome_fields(claim.stage, outcome, now), returning=_FOLLOW_UP_FIELDS,
        stage_run_id=claim.stage_run_id, stage_run_values=_succeeded_fields(claim, outcome, now),
        checkpoint=checkpoint)
    if run is None:
        _lease_lost(claim)
    _outcome_follow_up(run, outcome, checkpoint_written=True)


@transaction.atomic(durable=True)
def _stage_complete_in_a_transaction(claim: Claim, outcome: StageOutcome) -> None:
    # Lock 1. A plain checkpoint move (most stages: the chapter's pipeline_stage) is an UPDATE of
    # the project row, which takes the lock itself: one statement where a lock and an update
    # would be two. If the lease turns out lost below, the transaction undoes it. A change of
    # orchestrator state reads the state it leaves under the lock first (checkpoint_update).
    early_checkpoint = bool(outcome.checkpoint) and "orchestrator_state" not in outcome.checkpoint
    if early_checkpoint:
        checkpoint_update(claim.project_id, **outcome.checkpoint)
    else:
        project_lock_id(claim.project_id)
    now = timezone.now()
    # Lock 2 and the write in one statement, if the lease still holds (the lease also proves the
    # blackboard is the one the claim read: only its holder writes it, so it is not read again)
    fields = _outcome_fields(claim.stage, outcome, now)
    run = update_returning(PipelineRun, fields, "id = %s AND stage = %s AND lease_owner = %s AND status = %s",
                           [claim.run_id, claim.stage, claim.owner, RunStatus.RUNNING], _FOLLOW_UP_FIELDS)
    if run is None:
        _lease_lost(claim)
    _stage_run_succeeded(claim, outcome, now)
    _outcome_follow_up(run, outcome, checkpoint_written=early_checkpoint)


def _lease_lost(claim: Claim):
    now_at = PipelineRun.objects.filter(pk=claim.run_id).values_list("status", "stage").first()
    raise LeaseLost(f"run {claim.run_id} moved on from {claim.stage} (now {'/'.join(now_at or ('gone',))})")


# what _outcome_follow_up reads of the run (a gate's question, the batch's end, the next stage)
_FOLLOW_UP_FIELDS = ["id", "project", "kind", "chapter", "volume_number", "status", "stage", "batch"]


@transaction.atomic(durable=True)
def stage_fail(*, claim: Claim, error: BaseException, keep_attempt: bool = False) -> bool:
    """Record a failed attempt and release the lease so a retry can claim it. False if the run had
    already moved on (then the failure does not matter).

    ``keep_attempt``: the failure was the database's, not the stage's (a deadlock, a connection
    lost after the LLM answered). The stage run is then left unfinished, as a dead worker's is, so
    that the retry resumes this attempt and reuses its stored LLM calls instead of paying again."""
    project_lock_id(claim.project_id)
    run = run_lock(claim.run_id, with_context=False)
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
    run.save()
    if keep_attempt:
        StageRun.objects.filter(pk=claim.stage_run_id).update(error=run.error)
    else:
        StageRun.objects.filter(pk=claim.stage_run_id).update(status="failed", finished_at=timezone.now(),
                                                              error=run.error)
    return True
