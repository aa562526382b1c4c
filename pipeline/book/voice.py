"""The style analyst (issue #17 §3): from a voice sample to the style profile's exemplars and
DO/DON'T directives. One LLM step, ``voice:style``, in a run of its own that goes beside the book
(``RunKind.STYLE``: it never moves the checkpoint, and its failure does not stop the book).

The quick start's style step (``pipeline.book.quickstart``) uses the same reading of the model's
answer when the project has a sample. Code measures the sample (``projects.voice_stats``); those
numbers replace whatever the model claims for the numeric fields.
"""
from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils import timezone

from pipeline.runtime.blackboard import Blackboard
from pipeline.book.staged import stage_content, staged
from pipeline.runtime.claims import finish_locked
from pipeline.runtime.stage import Stage
from pipeline.errors import PipelineNotReady
from pipeline.llm.types import LLMBadOutput
from pipeline.models import ACTIVE_RUN_STATUSES, PipelineRun, RunKind, RunStatus
from pipeline.runtime.queueing import enqueue_stage
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import PromptBlock, data_block, json_output, project_llm_call
from projects.lock_objects import project_lock
from projects.models import Project, VoiceSample
from projects.services.voice import MEASURED_FIELDS, profile_with_statistics, style_profile_from_voice
from projects.voice_stats import passages

STEP = "voice:style"
STEPS = [STEP]
ROLE = "你是网络小说的文风分析师：读一段样文，找出它的声音，写成作者和写手都能照着做的文风档案。"
PROMPT_SAMPLE_CHARS = 6000  # the sample shown to the model (and to the offline backend): its first ~6000 characters
EXEMPLARS = (3, 5)
EXEMPLAR_CHARS = (50, 150)
MAX_DIRECTIVES = 8
_SPACE = re.compile(r"\s+")


def prompt_sample(text: str, limit: int = PROMPT_SAMPLE_CHARS) -> str:
    """The sample as the model sees it: whole paragraphs up to ``limit`` characters (the first
    paragraph cut at a sentence end if it alone is longer)."""
    if len(text) <= limit:
        return text
    kept: list[str] = []
    size = 0
    for paragraph in text.split("\n"):
        if size + len(paragraph) + 1 > limit:
            break
        kept.append(paragraph)
        size += len(paragraph) + 1
    if kept:
        return "\n".join(kept).strip()
    head = text[:limit]
    end = max(head.rfind(mark) for mark in "。！？…")
    return head[:end + 1] if end > 0 else head


def sample_slice(sample: VoiceSample | None) -> dict[str, Any]:
    """What the style step's slice carries of a sample: its (clipped) text, statistics and source."""
    if sample is None:
        return {"sample": "", "statistics": {}, "source_type": "template"}
    return {"sample": prompt_sample(sample.text), "statistics": sample.statistics, "source_type": sample.source_type}


def _squash(text: str) -> str:
    return _SPACE.sub("", text)


def checked_profile(value: Any, *, sample: str, statistics: dict[str, Any], source_type: str,
                    stage: str) -> dict[str, Any]:
    """The model's style profile read against the sample it was given (``value`` already passed the
    STYLE_PROFILE schema). ``LLMBadOutput`` (retried) unless it has 3–5 ``style_exemplars`` of 50–150
    characters found in the sample (fewer when the sample has fewer such passages), and 1–8
    ``writing_directives`` {directive, do, dont} of text. Exemplars not in the sample are dropped;
    the measured numbers replace the model's (``profile_with_statistics``)."""
    exemplars = value.get("style_exemplars")
    if not isinstance(exemplars, list) or not all(isinstance(e, str) for e in exemplars):
        raise LLMBadOutput(f"{stage}: style_exemplars must be a list of passages of the sample")
    where = _squash(sample)
    found: list[str] = []
    for exemplar in exemplars:
        text = exemplar.strip()
        if EXEMPLAR_CHARS[0] <= len(text) <= EXEMPLAR_CHARS[1] and _squash(text) in where and text not in found:
            found.append(text)
    least = min(EXEMPLARS[0], len(passages(sample, least=EXEMPLAR_CHARS[0], most=EXEMPLAR_CHARS[1]))) or 1
    if len(found) < least:
        raise LLMBadOutput(f"{stage}: style_exemplars: {len(found)} of {len(exemplars)} are passages of the sample "
                           f"of {EXEMPLAR_CHARS[0]}–{EXEMPLAR_CHARS[1]} characters; {least} to {EXEMPLARS[1]} needed")
    directives = value.get("writing_directives")
    if not isinstance(directives, list) or not 1 <= len(directives) <= MAX_DIRECTIVES:
        raise LLMBadOutput(f"{stage}: writing_directives must be a list of 1 to {MAX_DIRECTIVES} directives")
    cleaned = []
    for item in directives:
        if not (isinstance(item, dict) and all(isinstance(item.get(k), str) and item[k].strip()
                                               for k in ("directive", "do", "dont"))):
            raise LLMBadOutput(f"{stage}: each writing directive is {{directive, do, dont}}, all text: {item!r:.200}")
        cleaned.append({"directive": item["directive"].strip(), "do": item["do"].strip(),
                        "dont": item["dont"].strip()})
    profile = {**value, "style_exemplars": found[:EXEMPLARS[1]], "writing_directives": cleaned}
    return profile_with_statistics(profile, statistics, source_type=source_type)


def style_call(claim: Claim, project: Project, *, stage: str, label: str, slice_: dict[str, Any], on_text=None):
    """The style analyst's call: the sample is data (facts §12: ``<DATA type="style_sample">``)."""
    blocks = [PromptBlock("role", "system", ROLE, required=True, cacheable=True)]
    if slice_.get("sample"):
        blocks.append(data_block("sample", "style_sample", slice_["sample"], required=True))
    return project_llm_call(claim, project, label=label, stage=stage, slice_=slice_, blocks=blocks,
                            template="style.j2", template_context=slice_, tags=["thought", "style_profile"],
                            required_tags=["style_profile"], on_text=on_text)


def style_profile_of(call, *, slice_: dict[str, Any], stage: str) -> dict[str, Any]:
    """The profile of a style call: schema-checked; with a sample, checked against it and measured."""
    profile = json_output(call, "style_profile", schema="STYLE_PROFILE", stage=stage)
    if not isinstance(profile, dict):
        raise LLMBadOutput(f"{stage}: <style_profile> must be a JSON object")
    if not slice_.get("sample"):
        return profile
    return checked_profile(profile, sample=slice_["sample"], statistics=slice_["statistics"],
                           source_type=slice_["source_type"], stage=stage)


# --- the run --------------------------------------------------------------------------------------


def style_run_active(project: Project) -> PipelineRun | None:
    return PipelineRun.objects.filter(project=project, kind=RunKind.STYLE, status__in=ACTIVE_RUN_STATUSES).first()


def style_run_latest(project: Project) -> PipelineRun | None:
    return PipelineRun.objects.filter(project=project, kind=RunKind.STYLE).order_by("-pk").first()


def _cancel_active(project: Project) -> None:
    PipelineRun.objects.filter(project=project, kind=RunKind.STYLE, status__in=ACTIVE_RUN_STATUSES).update(
        status=RunStatus.CANCELLED, finished_at=timezone.now(), lease_owner="", lease_expires_at=None)


@transaction.atomic(durable=True)
def style_analysis_cancel(*, project_id: int) -> None:
    """Stop an analysis on its way (a new sample makes its answer stale); a stage still working
    finds its lease gone and writes nothing."""
    _cancel_active(project_lock(project_id))


@transaction.atomic(durable=True)
def style_analysis_start(*, project_id: int, user=None) -> PipelineRun:
    """Start the style analyst on the project's voice sample, beside whatever the book is doing. An
    analysis of an earlier sample still on its way is cancelled (its answer would be stale).
    ``PipelineNotReady`` without a sample."""
    project = project_lock(project_id)
    sample = VoiceSample.objects.filter(project=project).first()
    if sample is None:
        raise PipelineNotReady("the project has no voice sample to analyse")
    _cancel_active(project)
    board = Blackboard()
    board.as_("orchestrator").initialise(steps=STEPS, meta={
        "kind": RunKind.STYLE, "sample_updated_at": sample.updated_at.isoformat(), "source_type": sample.source_type})
    run = PipelineRun.objects.create(project=project, kind=RunKind.STYLE, status=RunStatus.QUEUED, stage=STEP,
                                     blackboard=board.to_dict(), created_by=user)
    enqueue_stage(run.pk, STEP)
    return run


def _style(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    sample = VoiceSample.objects.filter(project=project).first()
    if sample is None:
        raise PipelineNotReady("the voice sample was deleted before the style analyst read it")
    slice_ = {"brief": project.brief, "genre": project.genre, **sample_slice(sample)}
    call = style_call(claim, project, stage=STEP, label="voice", slice_=slice_, on_text=on_text)
    profile = style_profile_of(call, slice_=slice_, stage=STEP)
    stage_content(board, "style", profile)
    board.as_("orchestrator").update_step_status(STEP, "completed")
    return StageOutcome(board.to_dict(), None, calls=[call])


@transaction.atomic(durable=True)
def _style_finish(*, claim: Claim, outcome: StageOutcome) -> None:
    """The analyst's profile over the project's (fields it does not give are kept: a person's
    forbidden words, speech patterns …)."""
    board = Blackboard(outcome.blackboard)

    def write(project: Project, run) -> None:
        kept = {k: v for k, v in (project.style_profile or {}).items() if k not in MEASURED_FIELDS}
        profile = {**kept, **staged(board, "style")}
        style_profile_from_voice(project=project, profile=profile)

    finish_locked(claim, outcome, write)


STYLE_STEPS: dict[str, Stage] = {STEP: Stage(_style, _style_finish)}
