"""Nightly autopilot batches (DESIGN §8, issue #6): at ``NOVELSITE_NIGHTLY_AT`` Celery beat starts,
for every project with autopilot on, a chain of up to its chapters-per-night.

One BatchRun per project and night (unique on both, created under the project lock), so a beat
that fires twice, or a restarted scheduler, starts nothing new. The batch's runs carry ``batch``;
the chain goes on in ``stages.maintain.batch_continue`` and ends at the last chapter, a gate, an
error, the end of the planned volume or the cost cap (``batch_budget``), where ``batch_end``
writes the morning summary.

A run stopped at the cost cap waits, whole and resumable (``run_budget_stop``): the next night's
batch resumes it first, or a person does earlier (``run_budget_resume``).
"""
from __future__ import annotations

import logging
from datetime import date

from django.db import transaction
from django.utils import timezone

from pipeline.nightly.budget import BUDGET_NOTE, BudgetExhausted, run_is_budget_waiting
from pipeline.nightly.batch_end import StopReason, batch_end, batch_finish, stop_reason_of
from pipeline.runtime.blackboard import Blackboard
from pipeline.errors import LeaseLost, PipelineBusy, PipelineNotReady
from pipeline.runtime.locks import claimed_run_lock, run_lock, run_lock_pair
from pipeline.models import BatchRun, BatchStatus, PipelineRun, RunKind, RunStatus, StageRun, StageRunStatus
from pipeline.runtime.queueing import enqueue_stage
from pipeline.runtime.runs import chapter_run_create
from pipeline.runtime.claims import Claim
from projects.lock_objects import project_lock
from projects.models import Project

log = logging.getLogger(__name__)


def nightly_batches_start(*, night: date | None = None) -> list[BatchRun]:
    """Start (or find) tonight's batch of every project with autopilot on. ``night`` defaults to
    today in TIME_ZONE. Each project in its own transaction: one project's failure is logged and
    costs the others nothing."""
    night = night or timezone.localdate()
    batches = []
    for project_id in Project.objects.filter(autopilot_enabled=True).order_by("pk").values_list("pk", flat=True):
        try:
            batches.append(nightly_batch_start(project_id=project_id, night=night))
        except Exception:
            log.exception("nightly batch of project %s for %s failed", project_id, night)
    return batches


@transaction.atomic(durable=True)
def nightly_batch_start(*, project_id: int, night: date) -> BatchRun:
    """The project's batch for ``night``: created and started on the first call, returned as it is
    on any later one. A project that cannot write (busy, not in WRITING, nothing planned, autopilot
    off) gets a SKIPPED batch with the reason. A run parked at an earlier night's cost cap is
    resumed first, as this batch's first chapter. Locks the project; queues the first stage."""
    project = project_lock(project_id)
    batch, created = BatchRun.objects.get_or_create(project=project, date=night, defaults={
        "chapters_requested": project.autopilot_chapters_per_night,
        "cost_cap_usd": project.autopilot_cost_cap_usd})
    if not created:
        return batch
    run, skip = None, _skip(project, batch)
    if skip is None:
        run, skip = _first_run(project, batch)
    if run is None:
        batch_finish(batch, status=BatchStatus.SKIPPED, reason=skip[0], detail=skip[1])
        return batch
    batch.first_chapter = run.chapter
    batch.save(update_fields=["first_chapter"])
    return batch


def _skip(project: Project, batch: BatchRun) -> tuple[str, str] | None:
    if not project.autopilot_enabled:
        return StopReason.AUTOPILOT_OFF, "autopilot is off"
    if batch.chapters_requested <= 0:
        return StopReason.NOTHING_REQUESTED, "autopilot_chapters_per_night is 0"
    if batch.cost_cap_usd is not None and batch.cost_cap_usd <= 0:  # a new batch has spent nothing yet
        return StopReason.COST_CAP, f"the cost cap is ${batch.cost_cap_usd}"
    return None


def _first_run(project: Project, batch: BatchRun) -> tuple[PipelineRun | None, tuple[str, str] | None]:
    """The batch's first run, or why there is none. A run parked at an earlier night's cost cap
    goes first (it holds the project anyway); otherwise the next chapter starts."""
    parked = PipelineRun.objects.filter(project=project, kind=RunKind.CHAPTER, status=RunStatus.WAITING).first()
    if parked is not None and run_is_budget_waiting(parked):
        return _budget_resume(run_lock(parked.pk), batch=batch, actor="nightly batch"), None
    try:
        with transaction.atomic():  # a savepoint: nothing of a refused start is kept
            run = chapter_run_create(project, batch_remaining=batch.chapters_requested - 1, batch_id=batch.pk)
    except (PipelineBusy, PipelineNotReady) as exc:
        return None, (stop_reason_of(exc), exc.message)
    return run, None


# --- the cost cap: park a run, resume it ---------------------------------------------------------


@transaction.atomic(durable=True)
def run_budget_stop(*, claim: Claim, error: BudgetExhausted) -> bool:
    """The stage of ``claim`` found the cost cap reached before its LLM call: the run waits at
    that stage with a ``budget_exhausted`` note in its control zone, and its batch stops. Nothing
    of the stage was written (stages write only when they complete), so the run is whole and
    resumes at the same stage. The stage run counts as a finished attempt, so a resumed stage
    makes its calls afresh instead of colliding with this attempt's keys. False if the run had
    moved on meanwhile."""
    try:
        _project, run = claimed_run_lock(claim)
    except LeaseLost:
        return False
    now = timezone.now()
    board = Blackboard(run.blackboard)
    board.as_("orchestrator").write_control(BUDGET_NOTE, {**error.extra, "stage": run.stage,
                                                          "at": now.isoformat(timespec="seconds")})
    run.blackboard, run.status, run.lease_owner, run.lease_expires_at = board.to_dict(), RunStatus.WAITING, "", None
    run.save(update_fields=["blackboard", "status", "lease_owner", "lease_expires_at", "updated_at"])
    StageRun.objects.filter(pk=claim.stage_run_id).update(status=StageRunStatus.FAILED, finished_at=now,
                                                          error=f"BudgetExhausted: {error.message}"[:2000])
    batch_end(run, reason=StopReason.COST_CAP, detail=f"chapter {run.chapter} waits at {run.stage}: {error.message}")
    return True


@transaction.atomic(durable=True)
def run_budget_resume(*, run_id: int, user=None) -> PipelineRun:
    """A person resumes a run parked at a cost cap, now: it finishes its chapter outside any cap
    (its night is over) and the chain does not go on; the next night's batch starts from there."""
    locked = run_lock_pair(run_id)
    if locked is None:
        raise PipelineNotReady("no such run")
    _project, run = locked
    if not run_is_budget_waiting(run):
        raise PipelineNotReady(f"run {run.pk} is {run.status}, not waiting at a cost cap")
    return _budget_resume(run, batch=None, actor=user.get_username() if user else "")


def _budget_resume(run: PipelineRun, *, batch: BatchRun | None, actor: str) -> PipelineRun:
    """Send a parked run on from its stage; with ``batch``, as that batch's first chapter (the rest
    of the night's chapters follow it). The caller holds the project and run locks."""
    board = Blackboard(run.blackboard)
    orchestrator = board.as_("orchestrator")
    note = orchestrator.read_control(BUDGET_NOTE)
    orchestrator.write_control(BUDGET_NOTE, None)
    orchestrator.write_control("budget_resumed", {**note, "by": actor,
                                                  "at": timezone.now().isoformat(timespec="seconds")})
    if batch is not None:
        orchestrator.write_meta("batch_remaining", batch.chapters_requested - 1)
        run.batch = batch
    run.blackboard, run.status, run.attempt, run.error = board.to_dict(), RunStatus.QUEUED, 0, ""
    run.save()
    enqueue_stage(run.pk, run.stage)
    return run
