"""Summarizer: the seed-format summary, the authoritative state delta (checked against the current
state before it is accepted), the storyline memory (≤500 chars) and the crossref."""
from __future__ import annotations

import json

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.context import ChapterContext
from pipeline.chapter.facts_output import facts_from_output
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import cast_slice, data_block, json_text, llm_call, system_blocks
from projects.models import PipelineStage
from projects.models.storylines import STORYLINE_MEMORY_MAX_CHARS

ROLE = "你是连载小说的摘要员：写摘要、给出权威的状态变更、更新故事线记忆。路径只用 id。"


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    text = board.as_("skill").read_content("chapter", "draft")
    title = board.as_("skill").read_content("chapter", "title") or ctx.title
    state_excerpt = {"characters": {c.slug: c.state for c in ctx.cast}, "world_state": ctx.state.get("world_state", {}),
                     "active_foreshadowing": ctx.state.get("active_foreshadowing", [])}
    slice_ = {"chapter": ctx.chapter, "title": title, "storyline_id": ctx.storyline_id,
              "characters": cast_slice(ctx), "place": ctx.place, "foreshadowing_updates": ctx.foreshadowing_updates,
              "memory": ctx.storyline_memory, "objectives": [str(o.get("description", "")) for o in ctx.objectives],
              "open_facts": [{k: f[k] for k in ("id", "kind", "text", "characters")} for f in ctx.open_facts]}
    blocks = [
        *system_blocks(ctx, ROLE),
        data_block("state", "summary", "当前状态（节选）：" + json_text(state_excerpt), priority=80, kind="json"),
        data_block("storyline-memory", "summary", ctx.storyline_memory, priority=70),
        data_block("chapter", "chapter_content", text, required=True),
    ]
    header = {"chapter": ctx.chapter, "base_state_version": ctx.state_version, "storyline_id": ctx.storyline_id}
    call = llm_call(claim, ctx, stage="summarize", slice_=slice_, blocks=blocks, template="summarize.j2",
                    template_context=slice_, tags=["thought", "summary", "state_update", "memory", "crossref", "facts"],
                    required_tags=["summary", "state_update"], state=ctx.state, delta_header=header, on_text=on_text)
    try:
        crossref = json.loads(call.texts.get("crossref") or "{}")
    except json.JSONDecodeError:
        crossref = {}
    worker = board.as_("worker")
    worker.write_content("summary", "text", call.texts["summary"])
    worker.write_content("summary", "delta", call.delta)
    memory = call.texts.get("memory", "").strip()
    worker.write_content("summary", "memory", memory[:STORYLINE_MEMORY_MAX_CHARS] if memory else None)
    worker.write_content("summary", "crossref", crossref if isinstance(crossref, dict) else {})
    # issue #18: the chapter's lasting facts; what does not hold is dropped with a note, never retried
    facts, notes = facts_from_output(call.texts.get("facts"), storyline=ctx.storyline_id, storylines=set(),
                                     characters={c["slug"]: c["display_name"] for c in ctx.all_characters},
                                     open_ids={f["id"] for f in ctx.open_facts})
    worker.write_content("summary", "facts", facts)
    worker.write_content("summary", "facts_notes", notes)
    call.notes += [f"facts: {note}" for note in notes]  # shown with the stage's receipt
    return StageOutcome(board.to_dict(), "refine", checkpoint={"pipeline_stage": PipelineStage.DRAFTED}, calls=[call])
