"""How a nightly batch ends: its status, why it stopped, what it wrote and spent, and the morning
summary, written once when the chain of chapters ends (DESIGN §8, issue #6).

A batch ends where its chain ends: the last chapter written (``batch_continue``), a gate or a
budget stop (the run WAITING), an error (``run_mark_error``), a cancel, the end of the plan or a
busy project. Each of those places calls ``batch_end`` in the transaction that stops the run, under
the project lock. Every write to a BatchRun holds that lock, so the row needs no lock of its own.
"""
from __future__ import annotations

from decimal import Decimal
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from pipeline.nightly.budget import batch_budget_left, batch_spent_usd, run_is_budget_waiting
from pipeline.errors import PipelineBusy, PipelineNotReady
from pipeline.models import BatchRun, BatchStatus, GateQuestion, GateStatus, PipelineRun, RunKind, RunStatus
from pipeline.runtime.queueing import task_named
from projects.models import Chapter

BATCH_EMAIL_TASK = "pipeline.tasks.batch_summary_email_task"


class StopReason:
    """``BatchRun.stop_reason``: why the night's chain ended (or never started)."""

    DONE = "done"  # wrote the chapters it was asked for
    GATE = "gate"  # a chapter waits at a NOVEL_ASK question
    ERROR = "error"  # retries spent: the run is in ERROR_RETRY
    END_OF_PLAN = "end_of_plan"  # the next chapter has no contract: plan the next volume
    COST_CAP = "cost_cap"  # the night's logged costs reached the project's cap
    CANCELLED = "cancelled"
    BUSY = "busy"  # another run (a waiting gate, an error, a person's run) holds the project
    NOT_WRITABLE = "not_writable"  # the project is not in WRITING
    AUTOPILOT_OFF = "autopilot_off"
    NOTHING_REQUESTED = "nothing_requested"  # 0 chapters per night


def stop_reason_of(exc: PipelineBusy | PipelineNotReady) -> str:
    """Why ``chapter_run_create`` refused the next chapter."""
    if isinstance(exc, PipelineBusy):
        return StopReason.BUSY
    return StopReason.END_OF_PLAN if "chapter" in exc.extra else StopReason.NOT_WRITABLE


def batch_end(run: PipelineRun, *, reason: str, detail: str = "") -> None:
    """The chain of ``run``'s nightly batch ends here. Nothing for a run in no batch, or whose batch
    already ended (a person resumed it in the morning). The caller holds the project lock."""
    if run.batch_id is None:
        return
    batch = BatchRun.objects.filter(pk=run.batch_id, status=BatchStatus.RUNNING).first()
    if batch is not None:
        batch_finish(batch, status=BatchStatus.DONE if reason == StopReason.DONE else BatchStatus.STOPPED,
                     reason=reason, detail=detail)


def batch_goes_on(run: PipelineRun) -> bool:
    """Before the next chapter of ``run``'s chain. True outside a nightly batch, and while the batch
    runs below its cost cap; at the cap the batch ends here. False too for a batch that already
    ended: a run a person resumed in the morning finishes its chapter, and the chain stops there.
    The caller holds the project lock."""
    if run.batch_id is None:
        return True
    batch = BatchRun.objects.filter(pk=run.batch_id).first()
    if batch is None or batch.status != BatchStatus.RUNNING:
        return False
    if (left := batch_budget_left(batch)) is not None and left <= 0:
        batch_finish(batch, status=BatchStatus.STOPPED, reason=StopReason.COST_CAP,
                     detail=f"after chapter {run.chapter}: the night's cost cap ${batch.cost_cap_usd} is reached")
        return False
    return True


def batch_finish(batch: BatchRun, *, status: str, reason: str, detail: str = "") -> None:
    """Write the batch's end and its morning summary (frozen: the morning reads what the night did),
    then, after commit, e-mail it to the members who opted in. The caller holds the project lock."""
    batch.status, batch.stop_reason, batch.finished_at = status, reason, timezone.now()
    batch.summary = batch_summary_data(batch, detail=detail)
    batch.chapters_written = len(batch.summary["chapters"])
    batch.cost_usd = Decimal(batch.summary["cost_usd"])
    batch.save()
    # robust: a mail server that is down must not undo, or break, the night's writing
    transaction.on_commit(partial(task_named(BATCH_EMAIL_TASK).delay, batch_id=batch.pk), robust=True)


def project_gates_open(project_id: int):
    """The NOVEL_ASK questions waiting for a person, oldest first."""
    return GateQuestion.objects.filter(project_id=project_id, status=GateStatus.OPEN).order_by("created_at", "pk")


def project_budget_parked_chapter(project_id: int) -> int | None:
    """The chapter whose run waits at a cost cap, if any (a project has one active run at most)."""
    waiting = PipelineRun.objects.filter(project_id=project_id, status=RunStatus.WAITING).only("chapter", "blackboard")
    return next((run.chapter for run in waiting if run_is_budget_waiting(run)), None)


def batch_summary_data(batch: BatchRun, *, detail: str = "") -> dict[str, Any]:
    """The morning summary as JSON (``BatchRun.summary``), computed from the batch's runs: the
    chapters they committed, what they spent, the questions waiting and a run parked at the cap."""
    committed = PipelineRun.objects.filter(batch=batch, kind=RunKind.CHAPTER).filter(
        Q(status=RunStatus.DONE) | Q(stage="maintain"))  # past commit: maintain only tidies memory
    numbers = sorted(committed.values_list("chapter", flat=True))
    titles = dict(Chapter.objects.filter(project_id=batch.project_id, number__in=numbers)
                  .values_list("number", "title"))
    gates = project_gates_open(batch.project_id)
    return {
        "night": batch.date.isoformat(), "status": batch.status, "stop_reason": batch.stop_reason,
        "stop_detail": detail[:500], "chapters_requested": batch.chapters_requested,
        "chapters": [{"number": n, "title": titles.get(n, "")} for n in numbers if n in titles],
        "cost_usd": str(batch_spent_usd(batch.pk, batch.created_at)),
        "cost_cap_usd": None if batch.cost_cap_usd is None else str(batch.cost_cap_usd),
        "gates": [{"id": q.pk, "step": q.step, "topic": q.topic, "run_id": q.run_id} for q in gates],
        "budget_waiting_chapter": project_budget_parked_chapter(batch.project_id),
    }
