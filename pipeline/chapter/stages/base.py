"""What every chapter stage shares: one LLM call through Jacquard with the project's models,
templates and the stored-call store, and helpers to build prompt blocks."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings

from pipeline.nightly.budget import batch_budget_check
from pipeline.llm.call_store import DbCallStore, call_key
from pipeline.chapter.context import ChapterContext
from pipeline.jacquard.runner import CallContext, CallSpec, run_call
from pipeline.jacquard.skein import PromptBlock, Skein
from pipeline.prompts.overrides import prompt_template_source
from pipeline.llm.types import LLMBadOutput
from pipeline.runtime.claims import Claim
from projects.json_validation import json_issues
from projects.models import Project

ProgressCallback = Callable[[str], None]


def data_block(name: str, data_type: str, text: str, **options: Any) -> PromptBlock:
    """Story text shown to the model as data, never as instructions (facts §12)."""
    wrapped = f'<DATA type="{data_type}" readonly="true">\n{text}\n</DATA>' if text else ""
    return PromptBlock(name=name, role="user", content=wrapped, **options)


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def bible_block(text: str) -> PromptBlock:
    """The book bible (pipeline/chapter/book_bible.py): first, cached, the same for every chapter stage."""
    return PromptBlock("book-bible", "system", text, required=True, cacheable=True, cache_break=True, priority=100,
                       kind="text")


def system_blocks(ctx: ChapterContext, role_text: str, *stable: PromptBlock) -> list[PromptBlock]:
    """The stable head of a chapter stage: the book bible every stage shares, then the stage's role
    and any ``stable`` blocks of its own (the judge's rubric), all cacheable, so the prefix cache
    hits across chapters (the bible across stages too)."""
    return [bible_block(ctx.bible), PromptBlock("role", "system", role_text, required=True, cacheable=True,
                                                priority=100), *stable]


def skein_of(blocks: Sequence[PromptBlock]) -> Skein:
    skein = Skein()
    for block in blocks:
        if block.content or block.template is not None:
            skein.add(block)
    return skein


def llm_call(claim: Claim, ctx: ChapterContext, **options: Any) -> CallContext:
    """One LLM call of a chapter stage (see ``project_llm_call``)."""
    return project_llm_call(claim, ctx.project, label=ctx.chapter, **options)


def project_llm_call(
    claim: Claim,
    project: Project,
    *,
    label: int | str,
    stage: str,
    slice_: Mapping[str, Any],
    blocks: Sequence[PromptBlock],
    template: str,
    template_context: Mapping[str, Any],
    tags: Sequence[str],
    required_tags: Sequence[str],
    on_text: ProgressCallback | None = None,
    sequence: int | str = 1,
    **spec_options: Any,
) -> CallContext:
    """One LLM call for ``stage`` of any run; the task block is the project's (or the default)
    template. ``label`` (the chapter, the volume …) goes into the offline backend's seed.
    ``BudgetExhausted`` when the run's nightly batch reached its cost cap: no call is made."""
    batch_budget_check(run_id=claim.run_id, batch_id=claim.batch_id)
    source = prompt_template_source(project_id=project.pk, name=template,
                                    has_overrides=getattr(project, "has_prompt_overrides", None))
    task = PromptBlock("task", "user", template=source, required=True, priority=100)
    spec = CallSpec(
        stage=stage, slice=slice_, build_skein=lambda _slice: skein_of([*blocks, task]),
        call_key=call_key(claim.run_id, stage, claim.attempt, sequence), tags=tags, required_tags=required_tags,
        template_context=template_context, stage_models=project.stage_models,
        seed_key=f"{project.slug}:{label}:{stage}:{claim.attempt}:{sequence}", on_text=on_text,
        cache_ttl=settings.NOVELSITE_BATCH_CACHE_TTL if claim.batch_id else "5m", **spec_options,
    )
    return run_call(spec, store=DbCallStore(run_id=claim.run_id, stage_run_id=claim.stage_run_id,
                                            lookup=claim.resumed))


def cast_slice(ctx: ChapterContext) -> list[dict[str, str]]:
    return [{"slug": c.slug, "display_name": c.display_name} for c in ctx.cast]


def json_output(call: CallContext, tag: str, *, schema: str | None = None, stage: str = "") -> Any:
    """The JSON inside ``<tag>``; ``LLMBadOutput`` (retried) when it is not JSON or breaks ``schema``."""
    try:
        value = json.loads(call.texts[tag])
    except (KeyError, json.JSONDecodeError) as exc:
        raise LLMBadOutput(f"{stage or tag}: <{tag}> is not JSON: {exc}") from exc
    if schema is not None and (issues := json_issues(schema, value)):
        raise LLMBadOutput(f"{stage or tag}: <{tag}> breaks {schema}: " + "; ".join(map(str, issues)))
    return value
