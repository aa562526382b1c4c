"""The writer's prompt for a chapter as the draft stage would send it, without calling a model:
the same context, blocks, template, rendering and budget trimming (for tests, benchmarks and a
person who wants to see what the writer is told)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.context import chapter_context
from pipeline.jacquard.runner import Assembler, CallContext, CallSpec, Planner, SkeinBuilder, TemplateRenderer
from pipeline.prompt_templates import prompt_template_source
from pipeline.stages import draft
from pipeline.stages.base import PromptBlock, skein_of
from projects.models import Project


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
