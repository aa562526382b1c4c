"""StyleRefiner: returns edits (find → replace, with the reason) applied deterministically; it
never re-emits the chapter, which halves a chapter's output tokens. An edit whose ``find`` is
missing or ambiguous is reported and skipped."""
from __future__ import annotations

import json

from pipeline.blackboard import Blackboard
from pipeline.context import ChapterContext, all_blacklist_words
from pipeline.llm.types import LLMBadOutput
from pipeline.stage_claims import Claim, StageOutcome
from pipeline.stages.base import data_block, llm_call, system_blocks
from projects.models import PipelineStage

ROLE = "你是文字编辑：删去 AI 腔，贴合风格档案。只输出修改清单，不重写全文。"


def apply_edits(text: str, edits: list) -> tuple[str, list[dict], list[dict]]:
    """Apply each edit whose ``find`` occurs exactly once, in order; report the others."""
    applied, skipped = [], []
    for edit in edits:
        if not isinstance(edit, dict) or not isinstance(edit.get("find"), str) or not isinstance(
                edit.get("replace"), str):
            skipped.append({"edit": edit, "why": "not a {find, replace} object"})
            continue
        count = text.count(edit["find"]) if edit["find"] else 0
        if count != 1:
            skipped.append({"edit": edit, "why": "not found" if count == 0 else f"found {count} times"})
            continue
        text = text.replace(edit["find"], edit["replace"], 1)
        applied.append(edit)
    return text, applied, skipped


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    skill = board.as_("skill")
    source_key = "refined" if skill.read_content("chapter", "refined") else "draft"
    text = skill.read_content("chapter", source_key)
    words = all_blacklist_words(ctx.blacklist)
    slice_ = {"chapter_text": text, "blacklist": words, "style_directives": ctx.drift_directives}
    blocks = [*system_blocks(ctx, ROLE), data_block("chapter", "chapter_content", text, required=True)]
    call = llm_call(claim, ctx, stage="refine", slice_=slice_, blocks=blocks, template="refine.j2",
                    template_context=slice_, tags=["thought", "edits"], required_tags=["edits"], on_text=on_text)
    try:
        edits = json.loads(call.texts["edits"])
    except json.JSONDecodeError as exc:
        raise LLMBadOutput(f"refine: <edits> is not JSON: {exc}") from exc
    if not isinstance(edits, list):
        raise LLMBadOutput("refine: <edits> must be a JSON list")
    refined, applied, skipped = apply_edits(text, edits)
    skill.write_content("chapter", "refined", refined)
    skill.write_content("refine", "applied", applied)
    skill.write_content("refine", "skipped", skipped)
    polishing = bool(skill.read_content("gate", "polish_pending"))
    if polishing:  # facts §15.5 (references): after the polish pass the chapter goes straight to commit
        skill.write_content("gate", "polish_pending", False)
    return StageOutcome(board.to_dict(), "commit" if polishing else "judge",
                        checkpoint={"pipeline_stage": PipelineStage.REFINED}, calls=[call])
