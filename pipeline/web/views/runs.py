"""Runs of a project (optionally of one chapter) and one run's stages, LLM calls and the prompt
receipt of each stage."""
from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from pipeline.web.selectors import run_detail, runs_recent
from projects.query_params import query_int
from projects.views.access import page_context, project_access


@login_required
@require_safe
def run_list(request, slug: str):
    access = project_access(request, slug)
    chapter = query_int(request.GET, "chapter")  # a malformed number: 404 (NovelsiteErrorMiddleware)
    runs = runs_recent(project=access.project, chapter=chapter)
    return render(request, "pipeline/runs.html", page_context(access, runs=runs, chapter=chapter))


@login_required
@require_safe
def run_view(request, slug: str, run_id: int):
    access = project_access(request, slug)
    run = run_detail(project=access.project, run_id=run_id)
    if run is None:
        raise Http404(_("No such run."))
    stages = [{"row": s, "receipt": json.dumps(s.receipt or {}, ensure_ascii=False, indent=2)}
              for s in run.stage_runs.all()]
    calls = [{"row": call, "prompt": prompt_blocks(call.prompt)} for call in run.llm_calls.all()]
    return render(request, "pipeline/run.html", page_context(access, run=run, stages=stages, calls=calls))


def prompt_blocks(prompt: dict) -> list[dict]:
    """A stored request (``LLMCall.prompt``) as the blocks the model read, in order, each with who
    it came from in words and whether a cache breakpoint followed it."""
    who = {"system": _("System prompt"), "user": _("Message to the model"), "assistant": _("The model's earlier reply")}
    blocks = [{"who": who["system"], "text": b.get("text", ""), "breakpoint": b.get("cache_breakpoint", False)}
              for b in (prompt or {}).get("system") or []]
    for message in (prompt or {}).get("messages") or []:
        blocks += [{"who": who.get(message.get("role"), who["user"]), "text": b.get("text", ""),
                    "breakpoint": b.get("cache_breakpoint", False)} for b in message.get("blocks") or []]
    return blocks
