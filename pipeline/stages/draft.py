"""ChapterWriter: drafts the chapter from the contract and the selected context (facts §12)."""
from __future__ import annotations

import re

from pipeline.blackboard import Blackboard
from pipeline.context import ChapterContext
from pipeline.llm.types import LLMBadOutput
from pipeline.stage_claims import Claim, StageOutcome
from pipeline.platform_gate import HOOK_TYPE_WORDS
from pipeline.stages.base import PromptBlock, cast_slice, data_block, json_text, llm_call, system_blocks
from projects.platforms.limits import platform_limits

ROLE = ("你是一名中文网络小说作者，为连载长篇写下一章。严格遵守世界规则、人物契约和本章契约；"
        "只用自然语言给出状态提示，正式状态变更由摘要员负责。")
MIN_CHARS = 300  # shorter than this is not a chapter; ask again
TITLE_LINE = re.compile(r"^#\s*(?:第\s*\d+\s*章)?\s*(.*)$")


def blocks(ctx: ChapterContext, required_fixes: list[str]) -> list[PromptBlock]:
    cast = [{"id": c.slug, "name": c.display_name, "state": c.state, "profile": c.profile[:400],
             "contracts": [k.get("rule") for k in c.contracts]} for c in ctx.cast]
    recent = "\n\n".join(f"第{n}章：{text}" for n, text in ctx.recent_summaries)
    recall = "\n".join(f"{name} 上次出场（第{n}章）：{text}" for name, n, text in ctx.recall)
    return [
        *system_blocks(ctx, ROLE),
        PromptBlock("blacklist", "system", "避免这些 AI 腔用语：" + "、".join(ctx.blacklist_top) if ctx.blacklist_top
                    else "", cacheable=True, priority=60),
        data_block("memory-levels", "summary", "\n".join(ctx.memory_levels), priority=45, shrinkable=True),
        data_block("recent-summaries", "summary", recent, priority=60, shrinkable=True),
        data_block("recall", "summary", recall, priority=55, shrinkable=True),
        data_block("storyline-memory", "summary", ctx.storyline_memory, priority=70),
        data_block("adjacent-memories", "summary", json_text(ctx.adjacent_memories) if ctx.adjacent_memories else "",
                   priority=35, shrinkable=True),
        data_block("cast", "character_profile", json_text(cast), priority=80, shrinkable=True),
        PromptBlock("foreshadowing", "user", "伏笔任务：" + json_text(ctx.foreshadowing_tasks)
                    if ctx.foreshadowing_tasks else "", priority=65),
        PromptBlock("drift", "user", "风格纠偏：" + "；".join(ctx.drift_directives) if ctx.drift_directives else "",
                    priority=75),
        PromptBlock("outline", "user", ctx.outline_block, required=True, priority=100),
        PromptBlock("contract", "user", "本章契约：" + json_text(ctx.contract), required=True, priority=100,
                    kind="json"),
    ]


def split_chapter(text: str, fallback_title: str) -> tuple[str, str]:
    """The H1 line is the title (facts §7.1); the rest is the chapter."""
    first, _, rest = text.strip().partition("\n")
    match = TITLE_LINE.match(first)
    if match:
        return (match[1].strip() or fallback_title), rest.strip()
    return fallback_title, text.strip()


def platform_draft_slice(project) -> dict:
    """The platform's asks of the writer: the target length (the middle of the profile's target
    range) and, where a chapter-end hook is required, the hook types it may use."""
    limits = platform_limits(project)
    hook = limits["hook_policy"]
    types = [HOOK_TYPE_WORDS.get(t, t) for t in hook["allowed_types"]] if hook["required"] else []
    return {"target_chars": limits["target_chars"], "hook_types": types}


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    revision = board.as_("skill").read_content("revision", "required_fixes") or []
    objectives = [o.get("description", "") for o in ctx.objectives]
    slice_ = {"chapter": ctx.chapter, "title": ctx.title, "storyline_id": ctx.storyline_id,
              "characters": cast_slice(ctx), "objectives": objectives, "place": ctx.place,
              **platform_draft_slice(ctx.project), "blacklist": ctx.blacklist_top, "required_fixes": revision}
    call = llm_call(claim, ctx, stage="draft", slice_=slice_, blocks=blocks(ctx, revision), template="draft.j2",
                    template_context={**slice_, "characters": slice_["characters"]}, tags=["thought", "chapter", "hints"],
                    required_tags=["chapter"], on_text=on_text)
    title, body = split_chapter(call.texts["chapter"], ctx.title)
    if len(body) < MIN_CHARS:
        raise LLMBadOutput(f"draft: the chapter has {len(body)} characters; expected a full chapter")
    worker = board.as_("worker")
    worker.write_content("chapter", "title", title)
    worker.write_content("chapter", "draft", body)
    worker.write_content("chapter", "refined", None)  # a revision starts over from the new draft
    worker.write_content("chapter", "hints", call.texts.get("hints", ""))
    return StageOutcome(board.to_dict(), "summarize", calls=[call])
