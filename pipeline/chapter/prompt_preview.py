"""A chapter stage's prompt as the stage would send it, without calling a model: the same context,
blocks, template, rendering and budget trimming (for ``novel prompt``, the run page, tests,
benchmarks and a person who wants to see what the model is told). ``draft_prompt_preview`` renders
the writer's prompt from its parts; ``stage_prompt_preview`` runs any chapter stage up to the
model's door (``jacquard.runner.capture_requests``)."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.context import chapter_context, context_restore
from pipeline.jacquard.runner import (
    Assembler,
    CallContext,
    CallSpec,
    Planner,
    RequestCaptured,
    SkeinBuilder,
    TemplateRenderer,
    capture_requests,
)
from pipeline.llm.anthropic_backend import build_prompt
from pipeline.llm.types import LLMRequest
from pipeline.models import ACTIVE_RUN_STATUSES, PipelineRun, RunKind
from pipeline.prompts.overrides import prompt_template_source
from pipeline.runtime.claims import Claim
from pipeline.chapter.stages import draft
from pipeline.chapter.stages.base import PromptBlock, skein_of
from projects.errors import InvalidData
from projects.models import Chapter, ChapterContract, ChapterSummary, Project, StateChange
from projects.vocabulary import CHAPTER_AGENT_STEPS


@dataclass(frozen=True)
class PromptPreview:
    text: str  # every block's content, in the order the model reads them
    receipt: dict[str, Any]


def draft_prompt_preview(project: Project, chapter: int, required_fixes: list[str] | None = None) -> PromptPreview:
    ctx = chapter_context(project, chapter)
    parts = draft.prompt_parts(ctx, list(required_fixes or []))
    source = prompt_template_source(project_id=project.pk, name=parts["template"])
    task = PromptBlock("task", "user", template=source, required=True, priority=100)
    spec = CallSpec(stage="draft", slice=parts["slice_"], build_skein=lambda _slice: skein_of([*parts["blocks"], task]),
                    call_key=f"preview:{project.pk}:{chapter}", tags=["chapter"],
                    template_context=parts["template_context"], stage_models=project.stage_models,
                    receipt_extra=parts["receipt_extra"])
    call = CallContext(spec=spec)
    for plugin in (Planner(), SkeinBuilder(), TemplateRenderer(), Assembler()):
        plugin.run(call)
    text = "\n\n".join(block.content for block in call.assembled.blocks)
    return PromptPreview(text, call.receipt())


# --- any chapter stage, captured at the model's door (``novel prompt``) ------------------------------

PREVIEW_STAGES = CHAPTER_AGENT_STEPS  # the chapter stages that send the model a prompt


@dataclass(frozen=True)
class StagePreview:
    """The request a chapter stage would send, as it would send it, and its receipt."""

    stage: str
    chapter: int
    source: str  # what the stage was given: "in-flight run", "committed chapter" or "not written yet"
    request: LLMRequest
    receipt: dict[str, Any]

    def api_body(self) -> dict[str, Any]:
        """System and messages in the Messages API's shape, with the cache markers where the
        Anthropic backend puts them (an OpenAI-compatible server caches prefixes by itself)."""
        return build_prompt(self.request.system, self.request.messages, model=self.request.model,
                            ttl=self.request.cache_ttl)

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "chapter": self.chapter, "source": self.source, "model": self.request.model,
                "max_output_tokens": self.request.max_output_tokens, "request": self.api_body(),
                "receipt": self.receipt}


def stage_prompt_preview(project: Project, chapter: int, stage: str = "draft") -> StagePreview:
    """What ``stage`` of ``chapter`` would send the model now: from the chapter's in-flight run
    (its kept context and staged work), else from the committed chapter (its text as the draft and
    the polished text, its summary and delta), else, for a chapter not written yet, the draft only.
    Raises InvalidData when there is nothing to build the stage from."""
    if stage not in PREVIEW_STAGES:
        raise InvalidData(f"--stage must be one of {', '.join(PREVIEW_STAGES)}, not {stage!r}")
    ctx, board, source = _stage_inputs(project, chapter, stage)
    claim = Claim(run_id=0, project_id=project.pk, stage=stage, owner="prompt-preview", attempt=1, stage_run_id=0,
                  chapter=chapter, blackboard=board.to_dict(), project=project)
    module = import_module(f"pipeline.chapter.stages.{stage}")
    with capture_requests():
        try:
            module.execute(claim, ctx, board)
        except RequestCaptured as captured:
            return StagePreview(stage, chapter, source, captured.request, captured.receipt)
    raise InvalidData(f"chapter {chapter}: the {stage} stage would not call the model now")


def _stage_inputs(project: Project, chapter: int, stage: str) -> tuple[Any, Blackboard, str]:
    run = (PipelineRun.objects.filter(project=project, kind=RunKind.CHAPTER, chapter=chapter,
                                      status__in=ACTIVE_RUN_STATUSES).order_by("-pk").first())
    if run is not None:
        ctx = context_restore(project, run.context or {}) or _context(project, chapter)
        return ctx, Blackboard(run.blackboard), "in-flight run"
    ctx = _context(project, chapter)
    written = Chapter.objects.filter(project=project, number=chapter).first()
    board = Blackboard()
    board.as_("orchestrator").initialise(meta={"kind": "chapter", "chapter": chapter}, steps=PREVIEW_STAGES)
    if written is None:
        if stage != "draft":
            raise InvalidData(f"chapter {chapter} is not written yet: only its draft prompt can be shown")
        return ctx, board, "not written yet"
    worker = board.as_("worker")
    worker.write_content("chapter", "title", written.title)
    worker.write_content("chapter", "draft", written.text)
    worker.write_content("chapter", "refined", written.text)
    summary = ChapterSummary.objects.filter(chapter=written).first()
    worker.write_content("summary", "text", summary.text if summary else "")
    change = StateChange.objects.filter(project=project, chapter=chapter).order_by("-state_version").first()
    worker.write_content("summary", "delta", change.delta if change else {})
    return ctx, board, "committed chapter"


def _context(project: Project, chapter: int):
    try:
        return chapter_context(project, chapter)
    except ChapterContract.DoesNotExist as exc:
        raise InvalidData(f"chapter {chapter} has no contract: plan its volume first") from exc
