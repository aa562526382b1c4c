"""What LLM work a person may start: one policy for the API and the web pages.

Every action that makes the model work (take the next step, write, rewrite, retry, answer a
question or decide a plan, which resume a run, start or regenerate a promotion) is admitted here
first, by the person's id and the project:

- a rate per person and a rate per project (sliding windows in the cache, shared by every process
  that shares ``CACHES``);
- at most ``max_active_runs`` runs of the project working at once (queued or running; promotions
  included): a second click while one runs is refused with a message saying so;
- runs started by hand spend at most the project's ``manual_cost_cap_usd`` per day; the nightly
  batch keeps its own cap (``batch_budget``). Like that cap it is a threshold: a chapter already
  started finishes, and a batch started by hand stops before its next chapter once it is reached.

The CLI (operators on the server) does not go through it. Settings: ``NOVELSITE_SPENDING``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, time as day_time
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from pipeline.errors import PipelineBusy
from pipeline.models import LLMCall, PipelineRun, RunStatus
from projects.errors import NovelsiteError
from projects.models import Project

WORKING_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING)  # a waiting or failed run costs nothing


class SpendingLimit(NovelsiteError):
    """This would start more LLM work than the project's limits allow right now."""

    code = "throttled"
    http_status = 429


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        """``"30/hour"``, ``"5/minute"``, ``"100/day"``, ``"2/second"`` (DRF's spelling); ValueError
        for anything else (``manage.py check`` reports a wrong setting before a request meets it)."""
        count, _slash, period = str(text).partition("/")
        seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400}.get(period.strip()[:1])
        if seconds is None or not count.strip().isdigit() or int(count) < 1:
            raise ValueError(f"{text!r} is not a rate such as 30/hour (a count of at least 1 per second, "
                             "minute, hour or day)")
        return cls(int(count), seconds)


def _policy() -> dict:
    return settings.NOVELSITE_SPENDING


def llm_work_admit(*, project: Project, user) -> None:
    """Raise ``SpendingLimit`` (or ``PipelineBusy``) if ``user`` may not make the model work on
    ``project`` now; otherwise count the action against the rates. A run waiting at a question
    is not working: answering it is admitted like starting one."""
    policy = _policy()
    working = PipelineRun.objects.filter(project=project, status__in=WORKING_STATUSES).count()
    if working >= policy["max_active_runs"]:
        raise PipelineBusy(_("A run of this project is already working; wait until it finishes, or pause it."),
                            extra={"working_runs": working})
    spent, cap = manual_spend_today(project), project.manual_cost_cap_usd
    if spent >= cap:
        raise SpendingLimit(
            _("Today's budget for work started by hand (%(cap)s) is spent (%(spent)s). The owner can raise it in "
              "the settings.") % {"cap": cap, "spent": spent},
            extra={"spent_usd": str(spent), "cap_usd": str(cap)})
    windows = [
        (f"user:{user.pk}", Rate.parse(policy["user_rate"]),
         _("You have started a lot of LLM work recently; try again in %(seconds)s seconds.")),
        (f"project:{project.pk}", Rate.parse(policy["project_rate"]),
         _("This project has started a lot of LLM work recently; try again in %(seconds)s seconds.")),
    ]
    now = time.time()
    histories = [_window(key, rate, message, now) for key, rate, message in windows]  # all checked first,
    for (key, rate, _message), history in zip(windows, histories):  # then counted: a refusal counts nowhere
        cache.set(_cache_key(key), [*history, now], rate.seconds)


def manual_spend_today(project: Project) -> Decimal:
    """What runs started by hand (outside nightly batches) paid for LLM calls since local midnight."""
    midnight = timezone.make_aware(datetime.combine(timezone.localdate(), day_time.min))
    spent = LLMCall.objects.filter(run__project=project, run__batch__isnull=True, created_at__gte=midnight).aggregate(
        total=Sum("cost_usd"))["total"]
    return (spent or Decimal(0)).quantize(Decimal("0.01"))


def manual_budget_left(project: Project) -> Decimal:
    """Before the next chapter of a batch started by hand: what today's budget still allows."""
    return project.manual_cost_cap_usd - manual_spend_today(project)


def _cache_key(key: str) -> str:
    return f"novelsite:spending:{key}"


def _window(key: str, rate: Rate, message: str, now: float) -> list[float]:
    """The times of the actions within ``rate``'s window (a sliding window, as DRF's
    SimpleRateThrottle keeps); raises ``SpendingLimit`` when it is full."""
    history = [t for t in cache.get(_cache_key(key), []) if t > now - rate.seconds]
    if len(history) >= rate.count:
        wait = max(1, int(history[0] + rate.seconds - now) + 1)
        raise SpendingLimit(message % {"seconds": wait}, extra={"retry_after_seconds": wait})
    return history
