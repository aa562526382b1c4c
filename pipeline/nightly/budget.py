"""The nightly cost cap (issue #6): a batch stops once what its runs paid for LLM calls that night
reaches the project's cap, checked from the logged costs before each LLM call and before each
next chapter.

A call's price is known only once it returns, so the cap is a threshold, not a guarantee: a call
starts only while the night's spend is below the cap, and the last one may go over by its own
price. ORM reads only, no locks: ``project_llm_call`` asks with no lock held (never hold one while
the LLM works), and a stop it causes is written by ``nightly.run_budget_stop`` in its own short
transaction. Runs outside a batch, or whose batch has ended, have no cap: a person who resumes a
run in the morning decides to spend.
"""
from __future__ import annotations

from decimal import Decimal

from django.db.models import Sum

from pipeline.models import BatchStatus, LLMCall, PipelineRun, RunStatus
from projects.errors import NovelsiteError

COST_PLACES = Decimal("0.000001")  # LLMCall.cost_usd's decimal places
BUDGET_NOTE = "budget_exhausted"  # the control-zone key of a run parked at its batch's cost cap


class BudgetExhausted(NovelsiteError):
    """The nightly batch's cost cap is reached: the run waits (resumable), it did not fail."""

    code = "budget_exhausted"
    http_status = 409


def batch_spent_usd(batch_id: int, since) -> Decimal:
    """What the batch's runs paid for LLM calls since ``since`` (the batch's start). ``LLMCall`` is
    written as soon as each call returns, failed attempts included, so it is never behind (a
    stage's ``StageRun.cost_usd`` is written only when the stage completes). A run carried over
    from an earlier night brings that night's calls along on ``run.batch``; the time bound leaves
    them to the night that paid for them."""
    spent = LLMCall.objects.filter(run__batch_id=batch_id, created_at__gte=since).aggregate(total=Sum("cost_usd"))
    return (spent["total"] or Decimal(0)).quantize(COST_PLACES)  # SQLite sums to more places than it stores


def batch_budget_check(*, run_id: int, batch_id: int | None) -> None:
    """Before an LLM call of run ``run_id`` (in nightly batch ``batch_id``, as its claim read it):
    raise ``BudgetExhausted`` when that batch still runs and its spend reached its cap. No query for
    a run outside a batch (the hot path of every chapter written by hand)."""
    if batch_id is None:
        return
    batch = PipelineRun.objects.filter(pk=run_id, batch__status=BatchStatus.RUNNING).values(
        "batch_id", "batch__cost_cap_usd", "batch__created_at").first()
    if batch is None or batch["batch__cost_cap_usd"] is None:
        return
    cap = batch["batch__cost_cap_usd"]
    spent = batch_spent_usd(batch["batch_id"], batch["batch__created_at"])
    if spent >= cap:
        raise BudgetExhausted(f"the night's cost cap is reached: ${spent} spent of ${cap}",
                              extra={"batch_id": batch["batch_id"], "spent_usd": str(spent), "cap_usd": str(cap)})


def batch_budget_left(batch) -> Decimal | None:
    """What the batch may still spend tonight (≤ 0: nothing); None when it has no cap."""
    if batch.cost_cap_usd is None:
        return None
    return batch.cost_cap_usd - batch_spent_usd(batch.pk, batch.created_at)


def run_is_budget_waiting(run: PipelineRun) -> bool:
    """Whether ``run`` is parked at a batch's cost cap (resumable), rather than at a gate."""
    control = (run.blackboard or {}).get("control", {})  # infrastructure, not a stage: no slice needed
    return run.status == RunStatus.WAITING and bool(control.get(BUDGET_NOTE))
