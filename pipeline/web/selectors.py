"""Pipeline-side reads for the web pages: costs, per-chapter metrics for the charts, runs, stage
runs with their prompt receipts, open gates and live progress. Each selector makes a fixed number
of queries whatever the size of the book (tests/test_web_queries.py pins them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.core.cache import cache
from django.db.models import Count, DecimalField, Max, Q, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from pipeline.runtime.progress import progress_cache_key
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
    StateTransition,
)
from projects.models import Evaluation, OrchestratorState, Project
from projects.vocabulary import CHAPTER_AGENT_STEPS

CHART_CHAPTERS = 60  # the charts show the latest chapters; older ones are in the chapter list
CHAPTER_STAGES = (*CHAPTER_AGENT_STEPS, "commit")  # the steps the live progress shows (not maintain)
ZERO = Value(Decimal("0"), output_field=DecimalField(max_digits=12, decimal_places=6))


@dataclass(frozen=True)
class CurrencyCost:
    """What the priced steps cost in one currency (providers price in their own)."""

    currency: str
    today: Decimal
    month: Decimal
    total: Decimal


@dataclass(frozen=True)
class Costs:
    amounts: tuple[CurrencyCost, ...]  # one per currency, USD first
    unknown_today: int  # steps run on a model without a price: their cost is unknown, not 0
    unknown_month: int
    unknown_total: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int

    def _sum(self, period: str) -> Decimal:
        return sum((getattr(a, period) for a in self.amounts), Decimal(0))

    @property
    def today(self) -> Decimal:  # the sums across currencies, for callers that only know USD
        return self._sum("today")

    @property
    def month(self) -> Decimal:
        return self._sum("month")

    @property
    def total(self) -> Decimal:
        return self._sum("total")

    @property
    def cache_share(self) -> float:
        """Share of the prompt tokens read from the cache."""
        prompt = self.input_tokens + self.cache_read_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0


def project_costs(*, project: Project) -> Costs:
    """Cost of all stage runs today, this month and in total (local time), per currency, and how
    many steps have an unknown cost: one query."""
    now = timezone.localtime()
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    month = day.replace(day=1)
    priced = Q(cost_known=True)
    unpriced = Q(cost_known=False)
    rows = list(StageRun.objects.filter(run__project=project).order_by("currency").values("currency").annotate(
        today=Coalesce(Sum("cost_usd", filter=priced & Q(started_at__gte=day)), ZERO),
        month=Coalesce(Sum("cost_usd", filter=priced & Q(started_at__gte=month)), ZERO),
        total=Coalesce(Sum("cost_usd", filter=priced), ZERO),
        unknown_today=Count("pk", filter=unpriced & Q(started_at__gte=day)),
        unknown_month=Count("pk", filter=unpriced & Q(started_at__gte=month)),
        unknown_total=Count("pk", filter=unpriced),
        input_tokens=Coalesce(Sum("input_tokens"), 0), output_tokens=Coalesce(Sum("output_tokens"), 0),
        cache_read_tokens=Coalesce(Sum("cache_read_tokens"), 0)))
    rows.sort(key=lambda row: (row["currency"] != "USD", row["currency"]))
    amounts = tuple(CurrencyCost(row["currency"], row["today"], row["month"], row["total"]) for row in rows
                    if row["total"] or row["currency"] == "USD" or not row["unknown_total"])
    return Costs(amounts=amounts or (CurrencyCost("USD", Decimal(0), Decimal(0), Decimal(0)),),
                 **{name: sum(row[name] for row in rows) for name in
                    ("unknown_today", "unknown_month", "unknown_total", "input_tokens", "output_tokens",
                     "cache_read_tokens")})


@dataclass(frozen=True)
class ChapterMetric:
    number: int
    overall: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    blacklist_rate: float | None = None
    avg_sentence_length: float | None = None  # facts §13 style metrics, as the judge measured them
    dialogue_ratio: float | None = None
    lint_rates: dict[str, float] | None = None  # craft-lint rule -> findings per 1000 characters (issue #17)
    cost: float = 0.0
    currencies: tuple[str, ...] = ()  # of the chapter's costs: one, or several that do not add up
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0

    @property
    def cache_share(self) -> float:
        prompt = self.input_tokens + self.cache_read_tokens
        return self.cache_read_tokens / prompt if prompt else 0.0


def _number(value: Any) -> float | None:
    if isinstance(value, dict):
        value = value.get("score")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _blacklist_rate(data: dict[str, Any]) -> float | None:
    metadata = data.get("metadata") or {}
    checks = metadata.get("deterministic_checks") or data.get("deterministic_checks") or {}
    blacklist = checks.get("blacklist") or {} if isinstance(checks, dict) else {}
    profile = blacklist.get("statistical_profile") or {} if isinstance(blacklist, dict) else {}
    return _number(profile.get("blacklist_hit_rate", blacklist.get("hits_per_kchars")))


def _style(data: dict[str, Any]) -> dict[str, Any]:
    checks = (data.get("metadata") or {}).get("deterministic_checks") or data.get("deterministic_checks") or {}
    style = checks.get("style") if isinstance(checks, dict) else None
    return style if isinstance(style, dict) else {}


def _lint_rates(used: dict[str, Any]) -> dict[str, float] | None:
    """The rate of each craft-lint finding in the evaluation's ``anti_ai`` section; None for an
    evaluation made before the lints (a rule with no finding is 0)."""
    anti_ai = used.get("anti_ai")
    if not isinstance(anti_ai, dict) or not isinstance(anti_ai.get("lint_findings"), list):
        return None
    rates = {}
    for finding in anti_ai["lint_findings"]:
        rate = _number(finding.get("rate_per_kchars")) if isinstance(finding, dict) else None
        if rate is not None and isinstance(finding.get("rule"), str):
            rates[finding["rule"]] = rate
    return rates


def chapter_metrics(*, project: Project, last: int = CHART_CHAPTERS) -> list[ChapterMetric]:
    """Scores, the 8 dimensions, blacklist rate, cost and tokens of the latest ``last`` chapters,
    oldest first: two queries."""
    since = max(0, project.last_completed_chapter - last)
    evaluations = (Evaluation.objects.filter(project=project, chapter__number__gt=since)
                   .values_list("chapter__number", "overall", "data"))
    usage = (StageRun.objects.filter(run__project=project, run__kind__in=(RunKind.CHAPTER, RunKind.REWRITE),
                                     run__chapter__gt=since)
             .values("run__chapter", "currency")  # one row per chapter and currency: amounts never mixed
             .annotate(cost=Sum("cost_usd"), inp=Sum("input_tokens"), out=Sum("output_tokens"),
                       cached=Sum("cache_read_tokens")))
    spent: dict[int, dict[str, Any]] = {}
    for row in usage:
        total = spent.setdefault(row["run__chapter"],
                                 {"cost": 0, "inp": 0, "out": 0, "cached": 0, "currencies": set()})
        for key in ("cost", "inp", "out", "cached"):
            total[key] += row[key] or 0
        total["currencies"].add(row["currency"])
    metrics = []
    for number, overall, data in sorted(evaluations, key=lambda row: row[0]):
        data = data if isinstance(data, dict) else {}
        used = data.get("eval_used") if isinstance(data.get("eval_used"), dict) else data
        scores = {name: _number(value) for name, value in (used.get("scores") or {}).items()} \
            if isinstance(used.get("scores"), dict) else {}
        row = spent.get(number, {})
        metrics.append(ChapterMetric(
            number=number, overall=float(overall) if overall is not None else None,
            scores={k: v for k, v in scores.items() if v is not None}, blacklist_rate=_blacklist_rate(data),
            avg_sentence_length=_number(_style(data).get("avg_sentence_length")),
            dialogue_ratio=_number(_style(data).get("dialogue_ratio")), lint_rates=_lint_rates(used),
            cost=float(row.get("cost") or 0), currencies=tuple(sorted(row.get("currencies", ()))),
            input_tokens=row.get("inp") or 0, output_tokens=row.get("out") or 0,
            cache_read_tokens=row.get("cached") or 0))
    return metrics


def gates_open(*, project: Project) -> list[GateQuestion]:
    return list(GateQuestion.objects.filter(project=project, status=GateStatus.OPEN).order_by("created_at", "pk"))


def run_active(*, project: Project) -> PipelineRun | None:
    """The run moving the book now (promotion runs aside), without its blackboard."""
    return (PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES)
            .exclude(kind__in=SIDE_RUN_KINDS).defer("blackboard", "context").first())


@dataclass(frozen=True)
class ProjectError:
    """Why a project is in ERROR_RETRY: the failed run's cause as ``run_mark_error`` stored it in
    the run's control zone (``error_retry``: stage, error, at), or, with no such run (cancelled,
    or the checkpoint was imported), the reason of the move into ERROR_RETRY."""

    error: str
    stage: str = ""
    at: str = ""
    run_id: int | None = None
    run_kind: str = ""
    chapter: int | None = None


def project_error(*, project: Project) -> ProjectError | None:
    """None unless the project is in ERROR_RETRY; at most two queries."""
    if project.orchestrator_state != OrchestratorState.ERROR_RETRY:
        return None
    run = (PipelineRun.objects.filter(project=project, status=RunStatus.ERROR).exclude(kind__in=SIDE_RUN_KINDS)
           .only("pk", "kind", "chapter", "stage", "error", "blackboard", "updated_at").order_by("-pk").first())
    if run is not None:
        cause = (run.blackboard.get("control") or {}).get("error_retry") or {}
        return ProjectError(error=cause.get("error") or run.error or "(no cause recorded)",
                            stage=cause.get("stage") or run.stage, run_id=run.pk, run_kind=run.kind,
                            chapter=run.chapter,
                            at=cause.get("at") or run.updated_at.isoformat(timespec="seconds"))
    move = (StateTransition.objects.filter(project=project, to_state=OrchestratorState.ERROR_RETRY)
            .order_by("-created_at", "-pk").first())
    if move is None:
        return ProjectError(error="(no cause recorded)")
    return ProjectError(error=move.reason or "(no cause recorded)", run_id=move.run_id,
                        at=move.created_at.isoformat(timespec="seconds"))


def runs_recent(*, project: Project, chapter: int | None = None, limit: int = 30) -> list[PipelineRun]:
    runs = PipelineRun.objects.filter(project=project).defer("blackboard", "context")
    if chapter is not None:
        runs = runs.filter(chapter=chapter)
    runs = runs.annotate(cost=Coalesce(Sum("stage_runs__cost_usd"), ZERO), stages=Count("stage_runs"),
                         currency=Max("stage_runs__currency"),
                         currencies=Count("stage_runs__currency", distinct=True),  # several: no one sum
                         unknown_costs=Count("stage_runs", filter=Q(stage_runs__cost_known=False)))
    return list(runs.order_by("-pk")[:limit])


def run_detail(*, project: Project, run_id: int) -> PipelineRun | None:
    """A run with its stage runs (receipts included) and LLM calls: three queries."""
    from django.db.models import Prefetch

    from pipeline.models import LLMCall

    calls = LLMCall.objects.defer("output_text").order_by("pk")
    return (PipelineRun.objects.filter(project=project, pk=run_id).defer("blackboard", "context")
            .prefetch_related(Prefetch("stage_runs", StageRun.objects.order_by("started_at", "pk")),
                              Prefetch("llm_calls", calls)).first())




def run_progress(*, project: Project) -> dict[str, Any]:
    """What the live progress bar shows: the active run's stage and the state of each of its stages,
    plus the characters and the text streamed so far (kept in the cache by the process that runs the
    stage, ``progress.cache_listener``; shared with workers only through a shared cache). An entry
    of another run, or of a stage that finished, is not shown. Two queries."""
    run = run_active(project=project)
    streamed = cache.get(progress_cache_key(project.pk)) or {}
    in_flight = streamed.get("event") in ("start", "text")
    if (run is None and not in_flight) or (run is not None and streamed.get("run_id") not in (None, run.pk)):
        streamed = {}  # left by an earlier run (the cache keeps it a few minutes)
    if run is None:
        return {"active": False, "state": project.orchestrator_state, "chapter": project.last_completed_chapter,
                "stream": streamed}
    stage_rows = list(StageRun.objects.filter(run=run).order_by("started_at", "pk").values_list("stage", "status"))
    status = {stage: state for stage, state in stage_rows}
    stages = [{"stage": s, "status": status.get(s, "pending")} for s in CHAPTER_STAGES] \
        if run.kind in (RunKind.CHAPTER, RunKind.REWRITE) else \
        [{"stage": s, "status": st} for s, st in stage_rows]
    done = sum(1 for s in stages if s["status"] == StageRunStatus.SUCCEEDED)
    return {"active": True, "run_id": run.pk, "kind": run.kind, "status": run.status, "stage": run.stage,
            "chapter": run.chapter, "stages": stages, "percent": round(100 * done / max(1, len(stages))),
            "stream": streamed, "updated": timezone.now().isoformat(timespec="seconds")}
