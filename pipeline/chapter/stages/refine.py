"""StyleRefiner: returns edits (find → replace, with the reason) applied deterministically; it
never re-emits the chapter, which halves a chapter's output tokens. An edit whose ``find`` is
missing or ambiguous is reported and skipped.

The craft lints (``pipeline.chapter.craft``) run before the call (their findings are the refiner's
targets) and after it (issue #17): a ``hard`` finding left over sends the chapter through refine
once more, then back to draft as a revision; with the revisions spent, a person decides at a gate.
A chapter never reaches the judge or the commit with a ``hard`` finding."""
from __future__ import annotations

import json

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.pause import chapter_pause_gate, lint_pause_question
from pipeline.chapter.lint import hard_fixes, lint_project_text, refine_targets
from pipeline.chapter.context import ChapterContext, all_blacklist_words
from pipeline.chapter.craft.lints import LintReport
from pipeline.chapter.quality_gate import GateSettings
from pipeline.llm.types import LLMBadOutput
from pipeline.models import RunStatus
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import data_block, llm_call, system_blocks
from projects.models import PipelineStage

ROLE = "你是文字编辑：删去 AI 腔，贴合风格档案。只输出修改清单，不重写全文。"
EXTRA_REFINES = 1  # issue #17: a hard finding left after refine gets one more refine, then a revision


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


def staged_lint(ctx: ChapterContext, board: Blackboard, text: str) -> LintReport:
    """The craft lints of the staged chapter text (its title is kept apart: no heading line)."""
    title = board.as_("skill").read_content("chapter", "title") or ctx.title
    return lint_project_text(ctx.project, text, chapter=ctx.chapter, title=title)


def _hard_left(ctx: ChapterContext, board: Blackboard, report: LintReport, call) -> StageOutcome:
    """Where a chapter goes when refine left a hard finding: refine again (once), else revise,
    else (revisions spent) a person decides."""
    skill = board.as_("skill")
    passes = skill.read_content("lint", "refine_passes") or 0
    if passes < EXTRA_REFINES:
        skill.write_content("lint", "refine_passes", passes + 1)
        return StageOutcome(board.to_dict(), "refine", checkpoint={"pipeline_stage": PipelineStage.REFINED},
                            calls=[call])
    skill.write_content("lint", "refine_passes", 0)
    skill.write_content("gate", "polish_pending", False)
    fixes = hard_fixes(report)
    revisions = ctx.project.revision_count
    if revisions < GateSettings.from_project_settings(ctx.project.gate_settings).max_revisions:
        skill.write_content("revision", "required_fixes", fixes)
        return StageOutcome(board.to_dict(), "draft", calls=[call], checkpoint={
            "pipeline_stage": PipelineStage.REVISING, "revision_count": revisions + 1})
    skill.write_content("gate", "result", {"decision": "pause_for_user", "overall": None, "force_passed": False,
                                           "reasons": ["hard craft-lint findings remain after the last revision"],
                                           "required_fixes": fixes, "revisions": revisions})
    question = chapter_pause_gate(ctx.chapter, lint_pause_question(ctx.chapter, fixes))
    return StageOutcome(board.to_dict(), "gate", status=RunStatus.WAITING, question=question, calls=[call],
                        checkpoint={"pipeline_stage": PipelineStage.REFINED})


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    skill = board.as_("skill")
    source_key = "refined" if skill.read_content("chapter", "refined") else "draft"
    text = skill.read_content("chapter", source_key)
    words = all_blacklist_words(ctx.blacklist)
    before = staged_lint(ctx, board, text)
    # the targets' offsets point into chapter_text: the offline backend edits from them
    slice_ = {"chapter_text": text, "blacklist": words, "style_directives": ctx.drift_directives,
              "lint_targets": refine_targets(before)}
    blocks = [*system_blocks(ctx, ROLE), data_block("chapter", "chapter_content", text, required=True)]
    call = llm_call(claim, ctx, stage="refine", slice_=slice_, blocks=blocks, template="refine.j2",
                    template_context={**slice_, "lint_findings": before.readable()},
                    tags=["thought", "edits"], required_tags=["edits"], on_text=on_text)
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
    after = staged_lint(ctx, board, refined)
    skill.write_content("lint", "report", after.as_dict())
    if after.has_hard:
        return _hard_left(ctx, board, after, call)
    skill.write_content("lint", "refine_passes", 0)
    polishing = bool(skill.read_content("gate", "polish_pending"))
    if polishing:  # facts §15.5 (references): after the polish pass the chapter goes straight to commit
        skill.write_content("gate", "polish_pending", False)
    return StageOutcome(board.to_dict(), "commit" if polishing else "judge",
                        checkpoint={"pipeline_stage": PipelineStage.REFINED}, calls=[call])
