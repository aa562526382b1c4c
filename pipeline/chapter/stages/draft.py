"""ChapterWriter: drafts the chapter from the contract and the selected context (facts §12)."""
from __future__ import annotations

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.context import ChapterContext
from pipeline.llm.types import LLMBadOutput
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.platform_rules import HOOK_TYPE_WORDS
from pipeline.chapter.stages.base import PromptBlock, cast_slice, data_block, json_text, llm_call, system_blocks
from projects.filetree.chapter_heading import heading_title
from projects.platforms.limits import platform_limits

ROLE = ("你是一名中文网络小说作者，为连载长篇写下一章。严格遵守世界规则、人物契约和本章契约；"
        "只用自然语言给出状态提示，正式状态变更由摘要员负责。")
MIN_CHARS = 300  # shorter than this is not a chapter; ask again
LEVEL_LABELS = {"synopsis": "全书梗概", "volume": "卷摘要", "archive": "往事"}


def memory_text(levels: list[dict]) -> str:
    """The memory levels as the writer reads them: what each stands for, then its text."""
    return "\n".join((f"[{LEVEL_LABELS.get(m['level'], m['level'])} "
                      f"第{m['chapters'][0]}–{m['chapters'][1]}章] {m['text']}")
                     for m in levels)


def memory_receipt(levels: list[dict], summaries: list | tuple = ()) -> dict:
    """Every memory level the writer was given, with the chapters it covers and its size, and the
    chapters whose own summaries it was given."""
    return {"memory_levels": [{key: value for key, value in m.items() if key != "text"} for m in levels],
            "chapter_summaries": [number for number, _text in summaries]}


def _contract_text(contract: dict) -> str:
    """A character contract whole: its rule and its exceptions (never shortened)."""
    rule = str(contract.get("rule") or "")
    exceptions = [str(e) for e in (contract.get("exceptions") or []) if e]
    return rule + ("（例外：" + "；".join(exceptions) + "）" if exceptions else "")


def blocks(ctx: ChapterContext, required_fixes: list[str]) -> list[PromptBlock]:
    cast = [{"id": c.slug, "name": c.display_name, "state": c.state, "profile": c.writer_profile,
             "contracts": [_contract_text(k) for k in c.contracts if isinstance(k, dict)]} for c in ctx.cast]
    recent = "\n\n".join(f"第{n}章：{text}" for n, text in ctx.recent_summaries)
    recall = "\n".join(f"{name} 上次出场（第{n}章）：{text}" for name, n, text in ctx.recall)
    return [
        *system_blocks(ctx, ROLE),  # the book bible (craft, platform, voice, world, roster) and the role
        data_block("memory-levels", "summary", memory_text(ctx.memory_levels), priority=45, shrinkable=True),
        data_block("recent-summaries", "summary", recent, priority=60, shrinkable=True),
        data_block("recall", "summary", recall, priority=55, shrinkable=True),
        data_block("storyline-memory", "summary", ctx.storyline_memory, priority=70),
        data_block("adjacent-memories", "summary", json_text(ctx.adjacent_memories) if ctx.adjacent_memories else "",
                   priority=35, shrinkable=True),
        data_block("cast", "character_profile", json_text(cast), priority=80, shrinkable=True),
        PromptBlock("foreshadowing", "user", "伏笔任务：" + json_text(ctx.foreshadowing_tasks)
                    if ctx.foreshadowing_tasks else "", priority=65),
        # issue #18: already selected and ranked within its own budget (pipeline/chapter/facts_recall.py)
        PromptBlock("open-facts", "user", "仍然有效的事实（不得写得与之矛盾；若本章兑现或取消，要写清楚）：\n"
                    + "\n".join(f["line"] for f in ctx.open_facts) if ctx.open_facts else "", priority=78),
        PromptBlock("drift", "user", "风格纠偏：" + "；".join(ctx.drift_directives) if ctx.drift_directives else "",
                    priority=75),
        # issue #17 §4: the seam, verbatim, so the new chapter picks up where the last one stopped
        data_block("previous-ending", "chapter_content", ("上一章结尾（原文）：\n" + ctx.previous_ending)
                   if ctx.previous_ending else "", priority=90, shrinkable=True),
        PromptBlock("outline", "user", ctx.outline_block, required=True, priority=100),
        PromptBlock("contract", "user", "本章契约：" + json_text(ctx.contract), required=True, priority=100,
                    kind="json"),
    ]


def split_chapter(text: str, fallback_title: str) -> tuple[str, str]:
    """The H1 line is the title, without its ``第 N 章`` (facts §7.1); the rest is the chapter."""
    first, _, rest = text.strip().partition("\n")
    if first.startswith("#"):
        return (heading_title(first) or fallback_title), rest.strip()
    return fallback_title, text.strip()


def platform_draft_slice(project) -> dict:
    """The platform's asks of the writer: the target length (the middle of the profile's target
    range) and the range itself, and, where a chapter-end hook is required, the hook types it may use."""
    limits = platform_limits(project)
    hook = limits["hook_policy"]
    types = [HOOK_TYPE_WORDS.get(t, t) for t in hook["allowed_types"]] if hook["required"] else []
    words = limits["word_count"]
    return {"target_chars": limits["target_chars"], "word_min": words["target_min"], "word_max": words["target_max"],
            "hook_types": types}


def prompt_parts(ctx: ChapterContext, required_fixes: list[str]) -> dict:
    """What the draft's LLM call is built from: the slice, the blocks, the task template and its
    context, and the receipt's extra (also for ``pipeline.chapter.prompt_preview``)."""
    objectives = [o.get("description", "") for o in ctx.objectives]
    slice_ = {"chapter": ctx.chapter, "title": ctx.title, "storyline_id": ctx.storyline_id,
              "characters": cast_slice(ctx), "objectives": objectives, "place": ctx.place,
              **platform_draft_slice(ctx.project), "blacklist": ctx.blacklist_top, "required_fixes": required_fixes,
              "continues": bool(ctx.previous_ending)}
    return {"slice_": slice_, "blocks": blocks(ctx, required_fixes), "template": "draft.j2",
            "template_context": {**slice_, "characters": slice_["characters"]},
            "receipt_extra": memory_receipt(ctx.memory_levels, ctx.recent_summaries)}


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    revision = board.as_("skill").read_content("revision", "required_fixes") or []
    call = llm_call(claim, ctx, stage="draft", **prompt_parts(ctx, revision), tags=["thought", "chapter", "hints"],
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
