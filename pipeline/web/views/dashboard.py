"""The dashboard (what ``novel status`` shows and more), its live progress fragment and its
buttons: take the next step, write N chapters, pause, retry."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from novelsite.llm_providers import project_problems
from pipeline.nightly.morning_summary import batch_morning_summary
from pipeline.book.orchestrator import advance, next_step
from pipeline.book.rewrite import chapter_rewrite_start
from pipeline.runtime.runs import chapter_run_start, run_cancel
from pipeline.web.selectors import (
    chapter_metrics,
    gates_open,
    project_costs,
    run_active,
    run_progress,
)
from pipeline.nightly.spending import WORKING_STATUSES, llm_work_admit
from pipeline.web.views.charts import bar_chart, line_chart, small_multiples
from projects.errors import NovelsiteError
from projects.labels import label
from projects.permissions import Action
from projects.platforms.limits import platform_limits
from projects.query_params import plain_int
from projects.selectors import project_status
from projects.views.access import flash_error, page_context, project_access

MAX_CHAPTERS_PER_CLICK = 30  # one volume; longer batches belong to the nightly autopilot


@login_required
@require_safe
def dashboard(request, slug: str):
    access = project_access(request, slug)
    project = access.project
    status = project_status(project=project)
    upcoming = next_step(project)
    metrics = chapter_metrics(project=project)
    active = run_active(project=project)
    return render(request, "pipeline/dashboard.html", page_context(
        access, status=status, next=upcoming, costs=project_costs(project=project), gates=gates_open(project=project),
        active=active, working=active is not None and active.status in WORKING_STATUSES,
        plan_waiting=active is not None and active.kind == "plan" and active.status == "waiting",
        progress=run_progress(project=project) if active else None, charts=_charts(metrics),
        drift=project.style_drift or {}, night=batch_morning_summary(project=project),
        llm_problems=project_problems(project.stage_models), limits=platform_limits(project)))


def _cost_chart(xs, metrics) -> str:
    """Cost per chapter in its currency; amounts in several currencies are not added up (#19)."""
    currencies = {c for m in metrics for c in m.currencies}
    if len(currencies) > 1:
        return bar_chart([], [], title=_("Cost per chapter: in several currencies (%(list)s), see the totals")
                         % {"list": ", ".join(sorted(currencies))})
    currency = currencies.pop() if currencies else "USD"
    return bar_chart(xs, [m.cost for m in metrics], title=_("Cost per chapter (%(currency)s)") % {"currency": currency},
                     unit="$" if currency == "USD" else f" {currency}")


def _charts(metrics) -> dict:
    xs = [m.number for m in metrics]
    dimensions = sorted({name for m in metrics for name in m.scores})
    names = {d: label("dimension", d) for d in dimensions}
    return {
        "overall": line_chart(xs, {_("overall"): [m.overall for m in metrics]}, title=_("Overall score"), lo=0, hi=5),
        "dimensions": small_multiples(xs, {names[d]: [m.scores.get(d) for m in metrics] for d in dimensions},
                                      title=_("Score by dimension"), lo=0, hi=5,
                                      codes={names[d]: d for d in dimensions}),
        "cost": _cost_chart(xs, metrics),
        "tokens": bar_chart(xs, [m.input_tokens + m.output_tokens + m.cache_read_tokens for m in metrics],
                            title=_("Tokens per chapter")),
        "cache": line_chart(xs, {_("cache share"): [m.cache_share for m in metrics]}, title=_("Cache share"),
                            lo=0, hi=1),
        "blacklist": line_chart(xs, {_("blacklist hits per 1000 characters"): [m.blacklist_rate for m in metrics]},
                                title=_("Blacklist rate"), lo=0),
        # facts §13 style drift: each chapter's measures (the profile's targets are in the settings)
        "sentence": line_chart(xs, {_("average sentence length"): [m.avg_sentence_length for m in metrics]},
                               title=_("Sentence length"), lo=0),
        "dialogue": line_chart(xs, {_("dialogue ratio"): [m.dialogue_ratio for m in metrics]},
                               title=_("Dialogue ratio"), lo=0, hi=1),
        "lints": _lint_chart(xs, metrics),
    }


def _lint_chart(xs: list[int], metrics) -> str:
    """One small chart per craft-lint rule found in any charted chapter: its findings per 1000
    characters, chapter by chapter (0 where the rule found nothing, a gap before the lints existed)."""
    rules = sorted({rule for m in metrics for rule in (m.lint_rates or {})})
    top = max([rate for m in metrics for rate in (m.lint_rates or {}).values()] or [1])
    names = {rule: label("lint_rule", rule) for rule in rules}
    series = {names[r]: [None if m.lint_rates is None else m.lint_rates.get(r, 0.0) for m in metrics] for r in rules}
    return small_multiples(xs, series, title=_("Craft-lint findings per 1000 characters"), lo=0, hi=top,
                           codes={names[r]: r for r in rules})


@login_required
@require_safe
def progress_view(request, slug: str):
    """The live progress fragment the dashboard polls (JSON)."""
    access = project_access(request, slug)
    return JsonResponse(progress_with_labels(run_progress(project=access.project)))


def progress_with_labels(progress: dict) -> dict:
    """The progress with the human words the page shows beside each code (``*_label``)."""
    labelled = {**progress, "kind_label": label("run_kind", progress.get("kind")),
                "stage_label": label("step", progress.get("stage"))}
    stream = progress.get("stream") or {}
    if stream.get("stage"):
        labelled["stream"] = {**stream, "stage_label": label("step", stream["stage"])}
    labelled["stages"] = [{**s, "label": label("step", s.get("stage"))} for s in progress.get("stages") or []]
    return labelled


def _act(request, slug: str, work, done: str, *, makes_llm_work: bool = True):
    """Admit and start the work, then back to the dashboard, which follows the run. The run's stages
    never run in this request: workers take them, or in eager mode the background thread of this
    process once the response is out (``pipeline.runtime.background``)."""
    access = project_access(request, slug, Action.EDIT)
    try:
        if makes_llm_work:
            llm_work_admit(project=access.project, user=request.user)
        work(access.project)
    except NovelsiteError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, done)
    return redirect("dashboard", slug=slug)


@login_required
@require_POST
def advance_view(request, slug: str):
    step = request.POST.get("step") or None
    return _act(request, slug, lambda p: advance(project_id=p.pk, user=request.user, step=step),
                _("The next step has started."))


@login_required
@require_POST
def write_view(request, slug: str):
    count = max(1, min(MAX_CHAPTERS_PER_CLICK, plain_int(request.POST.get("count", "1")) or 1))
    return _act(request, slug, lambda p: chapter_run_start(project_id=p.pk, user=request.user,
                                                           batch_remaining=count - 1),
                _("Writing has started."))


@login_required
@require_POST
def pause_view(request, slug: str):
    def pause(project):
        run = run_active(project=project)
        if run is not None:
            run_cancel(run_id=run.pk, user=request.user)
    return _act(request, slug, pause, _("Paused: the running step was stopped."), makes_llm_work=False)


@login_required
@require_POST
def retry_view(request, slug: str):
    def retry(project):
        upcoming = next_step(project)
        if upcoming.action not in ("retry", "heal"):
            raise NovelsiteError(_("Nothing to retry."))
        advance(project_id=project.pk, user=request.user)
    return _act(request, slug, retry, _("Retrying."))


@login_required
@require_POST
def chapter_rewrite_view(request, slug: str, number: int):
    """Rewrite a committed chapter with a person's notes (the latest chapter is rolled back exactly
    and written again; an older one gets a text-only revision)."""
    notes = request.POST.get("notes", "")
    return _act(request, slug, lambda p: chapter_rewrite_start(project_id=p.pk, chapter=number, notes=notes,
                                                               user=request.user),
                _("The chapter is being rewritten."))
