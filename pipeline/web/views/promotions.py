"""Promotion posts (seed 001) on the web: start one for a chapter, a range or a volume, watch its
steps, read and copy each platform version, regenerate one step."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.promotion.platforms import PLATFORMS, STYLES
from pipeline.promotion.run import STEPS, promotion_start, promotion_step_regenerate
from pipeline.nightly.spending import llm_work_admit
from projects.errors import NovelsiteError
from projects.permissions import Action
from projects.query_params import plain_int
from projects.views.access import flash_error, page_context, project_access

LIST_LIMIT = 30


def _target(post) -> dict:
    """The form's target: one chapter, a range "3-5", or a volume; a malformed one is refused by
    ``promotion_start`` (InvalidData) with the reason."""
    kind, value = post.get("target_kind", "chapter"), (post.get("target") or "").strip()
    if kind == "chapters" and "-" in value:
        first, _sep, last = (plain_int(part) for part in value.partition("-"))
        return {"chapters": [first, last]} if first is not None and last is not None else {}
    number = plain_int(value)
    return {"volume" if kind == "volume" else "chapter": number} if number is not None else {}


@login_required
@require_http_methods(["GET", "POST"])
def promotion_list(request, slug: str):
    access = project_access(request, slug, Action.EDIT if request.method == "POST" else Action.READ)
    if request.method == "POST":
        try:
            llm_work_admit(project=access.project, user=request.user)
            run = promotion_start(project_id=access.project.pk, target=_target(request.POST),
                                  platform=request.POST.get("platform", "xiaohongshu"),
                                  style=request.POST.get("style", "casual"),
                                  intent=request.POST.get("intent", ""), user=request.user)
        except NovelsiteError as exc:
            flash_error(request, exc)
        else:
            return redirect("promotion", slug=slug, run_id=run.pk)
    runs = (PipelineRun.objects.filter(project=access.project, kind=RunKind.PROMOTION)
            .only("pk", "status", "stage", "created_at", "chapter").order_by("-pk")[:LIST_LIMIT])
    return render(request, "pipeline/promotions.html", page_context(
        access, runs=runs, platforms=PLATFORMS, styles=STYLES, last=access.project.last_completed_chapter))


@login_required
@require_safe
def promotion_view(request, slug: str, run_id: int):
    access = project_access(request, slug)
    run = PipelineRun.objects.filter(project=access.project, kind=RunKind.PROMOTION, pk=run_id).first()
    if run is None:
        raise Http404(_("No such promotion."))
    board = run.blackboard
    content, control = board.get("content", {}), board.get("control", {})
    steps = [(step, control.get("step_status", {}).get(step, "pending")) for step in STEPS]
    return render(request, "pipeline/promotion.html", page_context(
        access, run=run, meta=board.get("meta", {}), content=content, control=control, steps=steps,
        versions=sorted((content.get("platform_versions") or {}).items()),
        moving=run.status in (RunStatus.QUEUED, RunStatus.RUNNING)))


@login_required
@require_POST
def promotion_regenerate(request, slug: str, run_id: int):
    access = project_access(request, slug, Action.EDIT)
    if not PipelineRun.objects.filter(project=access.project, kind=RunKind.PROMOTION, pk=run_id).exists():
        raise Http404(_("No such promotion."))
    try:
        llm_work_admit(project=access.project, user=request.user)
        promotion_step_regenerate(run_id=run_id, step=request.POST.get("step", ""), user=request.user)
    except NovelsiteError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, _("The step is written again."))
    return redirect("promotion", slug=slug, run_id=run_id)
