"""A promotion run (seed 001's data flow, on the run machinery: one Celery task per step, stored
LLM calls, retries, errors and retries in the control zone):

``promote:titles`` (title worker: hook variants with scores → the best is selected → sensitive
filter) → ``promote:body`` (body worker: content, sections, key points, quotes → virality scores →
constraints and sensitive filter) → ``promote:cta`` → ``promote:hashtags`` → ``promote:platforms``
(xiaohongshu, wechat, twitter, general, each fitted to its platform's limits) → complete.

Each step reads only the slice it declares (``get_slice``) and writes only where the seed's zone
access table lets its component kind write: workers the content zone, middleware content and
control, the orchestrator meta and control (a forbidden write raises). The reference summary is
built from the summaries of the promoted chapters only: nothing after the last of them reaches any
prompt (no spoilers).
"""
from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from pipeline.runtime.blackboard import Blackboard
from pipeline.runtime.stage import Stage
from pipeline.errors import PipelineNotReady
from pipeline.llm.types import LLMBadOutput
from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.promotion.platforms import CTA_TYPES, PLATFORMS, STYLES, fit_version
from pipeline.promotion.sensitive import FilterResult, project_words, sensitive_filter
from pipeline.runtime.queueing import enqueue_stage
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import PromptBlock, json_output, project_llm_call
from projects.errors import InvalidData
from projects.lock_objects import project_lock
from projects.models import Chapter, ChapterSummary, Project

STEPS = ["promote:titles", "promote:body", "promote:cta", "promote:hashtags", "promote:platforms"]
REFERENCE_MAX_CHARS = 1500  # the newest summaries of the range that fit
ROLE = "你是网络小说的运营编辑，为新章节写社交平台推广帖：吸引人，但绝不剧透参考摘要以外的情节。"
DEFAULT_WORDS = {"min": 150, "max": 800}


def _range(project: Project, target: dict[str, Any]) -> tuple[int, int, str]:
    """(first, last, label) of committed chapters for a chapter, a range or a volume."""
    if "chapter" in target:
        first = last = int(target["chapter"])
        label = f"第{first}章"
    elif "chapters" in target:
        first, last = (int(n) for n in target["chapters"])
        label = f"第{first}–{last}章"
    elif "volume" in target:
        numbers = list(Chapter.objects.filter(project=project, volume__number=int(target["volume"]))
                       .values_list("number", flat=True))
        if not numbers:
            raise InvalidData(f"target: volume {target['volume']} has no committed chapter")
        first, last, label = min(numbers), max(numbers), f"第{target['volume']}卷"
    else:
        raise InvalidData("target: give a chapter, a range of chapters or a volume")
    if not 1 <= first <= last or last > project.last_completed_chapter:
        raise InvalidData(f"target: chapters {first}–{last} are not all committed "
                          f"(the book is at chapter {project.last_completed_chapter})")
    return first, last, label


def reference_summary(project: Project, first: int, last: int) -> str:
    """The summaries of chapters first..last, newest first until REFERENCE_MAX_CHARS, in order.
    Spoiler guard: nothing after ``last`` is read."""
    rows = list(ChapterSummary.objects.filter(project=project, chapter__number__range=(first, last))
                .order_by("-chapter__number").values_list("text", flat=True))
    kept, used = [], 0
    for text in rows:
        if used + len(text) > REFERENCE_MAX_CHARS and kept:
            break
        kept.append(text[:REFERENCE_MAX_CHARS])
        used += len(text)
    return "\n\n".join(reversed(kept))


def _constraints(raw: dict[str, Any] | None) -> dict[str, Any]:
    raw = raw or {}
    if not isinstance(raw, dict):
        raise InvalidData("constraints: must be an object")
    if not isinstance(raw.get("word_count") or {}, dict):
        raise InvalidData("constraints.word_count: an object {min, max}")
    words = {**DEFAULT_WORDS, **(raw.get("word_count") or {})}
    if not all(isinstance(words[k], int) and not isinstance(words[k], bool) for k in ("min", "max")) \
            or not 0 <= words["min"] <= words["max"] <= 5000:
        raise InvalidData("constraints.word_count: min and max are integers, 0 ≤ min ≤ max ≤ 5000")
    lists = {}
    for key in ("must_include", "must_avoid"):
        value = raw.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) and 0 < len(v) <= 50 for v in value) \
                or len(value) > 20:
            raise InvalidData(f"constraints.{key}: a list of at most 20 words")
        lists[key] = value
    tone = raw.get("tone") or ""
    if not isinstance(tone, str) or len(tone) > 100:
        raise InvalidData("constraints.tone: a short text")
    return {"word_count": {"min": words["min"], "max": words["max"]}, "tone": tone, **lists}


@transaction.atomic(durable=True)
def promotion_start(*, project_id: int, target: dict[str, Any], platform: str = "xiaohongshu",
                    style: str = "casual", intent: str = "", constraints: dict | None = None, user=None) -> PipelineRun:
    """Start a promotion post; it runs beside the chapter pipeline (one project may write a
    chapter and promote another at once). Raises InvalidData for a bad request, nothing started."""
    if platform not in PLATFORMS:
        raise InvalidData(f"platform: one of {', '.join(PLATFORMS)}")
    if style not in STYLES:
        raise InvalidData(f"style: one of {', '.join(STYLES)}")
    if not isinstance(intent, str) or len(intent) > 300:
        raise InvalidData("intent: at most 300 characters")
    project = project_lock(project_id)
    first, last, label = _range(project, target)
    titles = list(Chapter.objects.filter(project=project, number__range=(first, last)).order_by("number")
                  .values_list("title", flat=True)[:3])
    board = Blackboard()
    board.as_("orchestrator").initialise(steps=STEPS, meta={
        "intent": intent.strip() or f"为《{project.title}》{label}写一篇{platform}推广帖",
        "style": style, "platform": platform, "constraints": _constraints(constraints),
        "topic": f"《{project.title}》{label}" + (f"：{'、'.join(t for t in titles if t)}" if any(titles) else ""),
        "reference_summary": reference_summary(project, first, last),
        "target": {"first": first, "last": last, "label": label}, "kind": "promotion"})
    run = PipelineRun.objects.create(project=project, kind=RunKind.PROMOTION, chapter=last, status=RunStatus.QUEUED,
                                     stage=STEPS[0], blackboard=board.to_dict(), created_by=user)
    enqueue_stage(run.pk, STEPS[0])
    return run


@transaction.atomic(durable=True)
def promotion_step_regenerate(*, run_id: int, step: str, user=None) -> PipelineRun:
    """Run ``step`` again, and the steps after it (they build on it). The earlier outputs stay in
    the blackboard's history."""
    if step not in STEPS:
        raise InvalidData(f"step: one of {', '.join(STEPS)}")
    from pipeline.runtime.locks import run_lock_pair

    locked = run_lock_pair(run_id)
    if locked is None or locked[1].kind != RunKind.PROMOTION:
        raise PipelineNotReady("no such promotion run")
    _project, run = locked
    if run.status not in (RunStatus.DONE, RunStatus.ERROR):
        raise PipelineNotReady(f"the promotion is {run.status}; regenerate once it is done")
    board = Blackboard(run.blackboard)
    orchestrator = board.as_("orchestrator")
    for later in STEPS[STEPS.index(step):]:
        orchestrator.update_step_status(later, "pending")
    run.blackboard, run.stage, run.status, run.finished_at, run.error = (
        board.to_dict(), step, RunStatus.QUEUED, None, "")
    run.save()
    enqueue_stage(run.pk, step)
    return run


# --- the steps -------------------------------------------------------------------------------------


def _call(claim: Claim, project: Project, step: str, slice_: dict, template_context: dict, tags: list[str],
          on_text=None, blocks: list | None = None):
    return project_llm_call(claim, project, label=f"promo{claim.run_id}", stage=step, slice_=slice_,
                            blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True),
                                    *(blocks or [])],
                            template=step.replace(":", "_") + ".j2", template_context=template_context,
                            tags=["thought", *tags], required_tags=tags, on_text=on_text)


def _begin(board: Blackboard, step: str) -> None:
    orchestrator = board.as_("orchestrator")
    orchestrator.update_step_status(step, "running")
    orchestrator.write_control("iteration_count", (orchestrator.read_control("iteration_count") or 0) + 1)


def _done(board: Blackboard, step: str, calls: list) -> StageOutcome:
    orchestrator = board.as_("orchestrator")
    orchestrator.update_step_status(step, "completed")
    index = STEPS.index(step)
    if index + 1 < len(STEPS):
        return StageOutcome(board.to_dict(), STEPS[index + 1], calls=calls)
    orchestrator.write_control("current_stage", "done")
    return StageOutcome(orchestrator.complete(), None, calls=calls)  # seed 001: snapshot, temporary keys cleaned


def _filter(board: Blackboard, project: Project, text: str, where: str) -> str:
    """The sensitive-word middleware on one text; findings accumulate in control.sensitive_filter."""
    middleware = board.as_("middleware")
    fixed, result = sensitive_filter(text, project_words(project.pk), where=where)
    before = middleware.read_control("sensitive_filter") or {"passed": True, "findings": [], "fixes_applied": []}
    merged = FilterResult(**before).merge(result)
    middleware.write_control("sensitive_filter", merged.as_dict())
    return fixed


def _score(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1 else 0.0


def _titles(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    _begin(board, "promote:titles")
    slice_ = board.as_("slicer").get_slice(["meta.intent", "meta.platform", "meta.style", "meta.topic"])
    context = {k.split(".")[1]: v for k, v in slice_.items()}
    call = _call(claim, project, "promote:titles", context, context, ["titles"], on_text)
    variants = (json_output(call, "titles", stage="promote:titles") or {}).get("variants")
    if not isinstance(variants, list) or not variants or not all(
            isinstance(v, dict) and isinstance(v.get("content"), str) and v["content"].strip() for v in variants):
        raise LLMBadOutput("promote:titles: <titles> needs variants [{type, content, score}]")
    variants = [{"type": str(v.get("type", "")), "content": v["content"].strip(), "score": _score(v.get("score"))}
                for v in variants]
    board.as_("worker").write_content("hook", "variants", variants)
    best = max(variants, key=lambda v: v["score"])  # seed 001: select_best
    selected = _filter(board, project, best["content"], "hook.selected")
    middleware = board.as_("middleware")
    middleware.write_content("hook", "selected", selected)
    middleware.write_content("hook", "title", selected)
    board.as_("orchestrator").write_control("quality_scores.hook_strength", best["score"])
    return _done(board, "promote:titles", [call])


def _body(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    _begin(board, "promote:body")
    slice_ = board.as_("slicer").get_slice(["meta.intent", "meta.style", "meta.constraints", "meta.reference_summary",
                                            "content.hook.selected"])
    constraints = slice_["meta.constraints"]
    context = {"style": slice_["meta.style"], "word_min": constraints["word_count"]["min"],
               "word_max": constraints["word_count"]["max"], "hook": slice_["content.hook.selected"],
               "tone": constraints["tone"], "must_include": constraints["must_include"],
               "must_avoid": constraints["must_avoid"]}
    call = _call(claim, project, "promote:body",
                 {"hook": context["hook"], "reference_summary": slice_["meta.reference_summary"]}, context,
                 ["body", "scores"], on_text,
                 blocks=[PromptBlock("reference", "user", f"参考摘要：{slice_['meta.reference_summary']}",
                                     priority=90)])
    body, scores = json_output(call, "body", stage="promote:body"), json_output(call, "scores", stage="promote:body")
    if not isinstance(body, dict) or not isinstance(body.get("content"), str) or not body["content"].strip():
        raise LLMBadOutput("promote:body: <body> needs a content text")
    worker = board.as_("worker")
    worker.write_content("body", "_tmp_raw", body)  # the worker's own text, until the run completes (seed 001)
    content = _apply_constraints(board, project, body["content"], constraints)
    worker.write_content("body", "content", content)
    worker.write_content("body", "sections", [
        {"title": str(s.get("title", "")),
         "content": _filter(board, project, str(s.get("content", "")), "body.sections")}
        for s in body.get("sections") or [] if isinstance(s, dict)])
    worker.write_content("body", "key_points", [str(p) for p in body.get("key_points") or []])
    worker.write_content("body", "quotes", [_filter(board, project, str(q), "body.quotes")
                                            for q in body.get("quotes") or []])
    worker.write_content("hook", "opening", re.split(r"(?<=[。！？!?])", content, maxsplit=1)[0][:100])
    orchestrator = board.as_("orchestrator")  # seed 001: the virality scorer's scores go to the control zone
    for key in ("virality", "emotional_resonance"):
        orchestrator.write_control(f"quality_scores.{key}", _score((scores or {}).get(key)))
    return _done(board, "promote:body", [call])


def _apply_constraints(board: Blackboard, project: Project, text: str, constraints: dict[str, Any]) -> str:
    """must_avoid words removed, sensitive words fixed, the length kept within word_count.max;
    what cannot be fixed here (a must_include missing, too short) is reported as a finding."""
    avoid = {word: "" for word in constraints["must_avoid"]}
    text, avoided = sensitive_filter(text, avoid, where="body.must_avoid")
    text = _filter(board, project, text, "body.content")
    findings = list(avoided.findings)
    findings += [{"field": "body.must_include", "word": w, "count": 0} for w in constraints["must_include"]
                 if w not in text]
    limit = constraints["word_count"]
    if len(text) > limit["max"]:
        text = text[: limit["max"]]
        findings.append({"field": "body.word_count", "word": "", "count": limit["max"]})
    elif len(text) < limit["min"]:
        findings.append({"field": "body.word_count", "word": "", "count": len(text)})
    middleware = board.as_("middleware")
    middleware.write_control("constraint_findings", findings)
    return text


def _cta(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    _begin(board, "promote:cta")
    slice_ = board.as_("slicer").get_slice(["meta.platform", "content.hook.opening"])
    context = {"platform": slice_["meta.platform"], "opening": slice_["content.hook.opening"] or ""}
    call = _call(claim, project, "promote:cta", context, context, ["cta"], on_text)
    cta = json_output(call, "cta", stage="promote:cta")
    if not isinstance(cta, dict) or not isinstance(cta.get("primary"), str) or cta.get("type") not in CTA_TYPES:
        raise LLMBadOutput(f"promote:cta: <cta> needs primary, secondary and a type of {', '.join(CTA_TYPES)}")
    worker = board.as_("worker")
    worker.write_content("cta", "primary", _filter(board, project, cta["primary"], "cta.primary"))
    worker.write_content("cta", "secondary", _filter(board, project, str(cta.get("secondary") or ""), "cta.secondary"))
    worker.write_content("cta", "type", cta["type"])
    return _done(board, "promote:cta", [call])


def _hashtags(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    _begin(board, "promote:hashtags")
    slice_ = board.as_("slicer").get_slice(["meta.topic", "meta.platform"])
    context = {"topic": slice_["meta.topic"], "platform": slice_["meta.platform"]}
    call = _call(claim, project, "promote:hashtags", context, context, ["hashtags"], on_text)
    tags = json_output(call, "hashtags", stage="promote:hashtags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise LLMBadOutput("promote:hashtags: <hashtags> must be a list of strings")
    cleaned = [_filter(board, project, t.strip().lstrip("#").strip(), "hashtags") for t in tags]
    board.as_("worker").write_content("hashtags", None, list(dict.fromkeys(t for t in cleaned if t))[:10])
    return _done(board, "promote:hashtags", [call])


def _platforms(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    _begin(board, "promote:platforms")
    slice_ = board.as_("slicer").get_slice(["content.hook.title", "content.body.content", "content.hashtags"])
    context = {"title": slice_["content.hook.title"], "body": slice_["content.body.content"],
               "hashtags": slice_["content.hashtags"] or []}
    call = _call(claim, project, "promote:platforms", context, context, ["platform_versions", "scores"], on_text)
    versions = json_output(call, "platform_versions", stage="promote:platforms")
    if not isinstance(versions, dict):
        raise LLMBadOutput("promote:platforms: <platform_versions> must be an object per platform")
    middleware, fixes = board.as_("middleware"), []
    for platform in PLATFORMS:
        raw = versions.get(platform) if isinstance(versions.get(platform), dict) else {
            "title": context["title"], "body": context["body"], "hashtags": context["hashtags"]}  # fill a gap
        raw = {**raw, "title": _filter(board, project, str(raw.get("title") or ""), f"{platform}.title"),
               "body": _filter(board, project, str(raw.get("body") or ""), f"{platform}.body")}
        fitted, fixed = fit_version(platform, raw)
        middleware.write_content("platform_versions", platform, fitted)
        fixes += fixed
    middleware.write_control("platform_fixes", fixes)
    scores = json_output(call, "scores", stage="promote:platforms")
    board.as_("orchestrator").write_control("quality_scores.platform_fit", _score((scores or {}).get("platform_fit")))
    return _done(board, "promote:platforms", [call])


PROMOTION_STEPS: dict[str, Stage] = {"promote:titles": Stage(_titles), "promote:body": Stage(_body),
                                    "promote:cta": Stage(_cta), "promote:hashtags": Stage(_hashtags),
                                    "promote:platforms": Stage(_platforms)}
