"""QualityJudge and the gate: deterministic checks first (they feed the judge and the gate), then
the LLM judge's 8 scores, then the gate decision on the system's own overall (facts §11).

pass / force_passed → commit; polish → one more refine, then commit; revise → back to draft with
the required fixes; a pause stops the run at a NOVEL_ASK question for a person.
"""
from __future__ import annotations

import json

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.pause import chapter_pause_gate, pause_question
from pipeline.chapter.evidence import chapter_checks, judge_evidence
from pipeline.chapter.lint import hard_fixes
from pipeline.chapter.context import ChapterContext
from pipeline.chapter.craft.anti_ai import anti_ai_section
from pipeline.chapter.quality_gate import ScoreError, decide, recompute_overall
from pipeline.llm.types import LLMBadOutput
from pipeline.models import RunStatus
from pipeline.chapter.platform_rules import gate_settings_for, hook_field_problems, platform_review
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.style_drift import chapter_metrics as style_metrics
from pipeline.chapter.stages.base import PromptBlock, data_block, json_text, llm_call, system_blocks
from pipeline.chapter.stages.refine import staged_lint
from pipeline.prompts.overrides import prompt_template_source
from projects.json_validation import json_issues
from projects.schemas import WEIGHT_DIMENSIONS
from projects.models import PipelineStage
from projects.platforms.limits import golden_gates_for, platform_limits

ROLE = "你是严格的网络小说质检编辑：逐条核对契约，按 8 个维度打分，给出可执行的修改意见。"
ENDING_CHARS = 200  # how much of the chapter's end the judge's slice quotes for the hook

def rubric_weights(weights) -> dict[str, str]:
    """The weight of every dimension the rubric names, as the judge reads it (0 for one not weighted)."""
    return {dim: f"{float(weights.get(dim, 0)):.2f}" for dim in WEIGHT_DIMENSIONS}


def _checks(ctx: ChapterContext, board: Blackboard, text: str):
    return chapter_checks(ctx, board.as_("skill").read_content("summary", "delta") or {}, text)


def _evaluation(call, hook_required: bool = False) -> dict:
    try:
        evaluation = json.loads(call.texts["evaluation"])
    except json.JSONDecodeError as exc:
        raise LLMBadOutput(f"judge: <evaluation> is not JSON: {exc}") from exc
    issues = json_issues("EVALUATION", evaluation)
    if issues:
        raise LLMBadOutput("judge: the evaluation breaks its schema: " + "; ".join(map(str, issues)))
    if hook_required and (problems := hook_field_problems(evaluation)):  # facts §7.1 judge validation
        raise LLMBadOutput("judge: the platform requires a chapter-end hook verdict: " + "; ".join(problems))
    return evaluation


def platform_slice(project, chapter: int, text: str) -> dict:
    """What the judge is told about the platform: its hook policy, the chapter's golden gates and the
    chapter's ending (plain data, so the offline judge answers from it too)."""
    limits = platform_limits(project)
    gates = [{"id": gate["id"], "requirement": gate["requirement"], "evaluation_hint": gate.get("evaluation_hint", ""),
              "threshold": gate.get("threshold")} for gate in golden_gates_for(project, chapter)]
    ending = text.strip().split("\n")[-1].strip()[-ENDING_CHARS:] if text.strip() else ""
    return {"platform": limits["platform"], "hook_policy": limits["hook_policy"], "golden_gates": gates,
            "chapter_ending": ending}


def _route(decision: str, result, project_revision: int, board: Blackboard) -> tuple[str, dict, str]:
    """Where the run goes for a gate decision: (next stage, checkpoint fields, run status)."""
    skill = board.as_("skill")
    if decision in ("pass", "force_passed"):
        return "commit", {}, RunStatus.QUEUED
    if decision == "polish":
        skill.write_content("gate", "polish_pending", True)
        return "refine", {"pipeline_stage": PipelineStage.REVISING}, RunStatus.QUEUED
    if decision == "revise":
        skill.write_content("revision", "required_fixes", result.required_fixes)
        return "draft", {"pipeline_stage": PipelineStage.REVISING, "revision_count": project_revision + 1}, \
            RunStatus.QUEUED
    return "gate", {}, RunStatus.WAITING  # a person decides (pipeline.chapter.pause.chapter_pause_resolve)


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    skill = board.as_("skill")
    text = skill.read_content("chapter", "refined") or skill.read_content("chapter", "draft")
    checks = _checks(ctx, board, text)
    lint = staged_lint(ctx, board, text)  # issue #17: the craft lints, as readable Chinese for the judge
    # #18: the judge sees the evidence (cast state, roster and aliases, ledger, check results)
    evidence = judge_evidence(ctx, skill.read_content("summary", "delta") or {}, checks)
    slice_ = {"chapter": ctx.chapter, "objectives": ctx.objectives, "checks": checks.as_dict(), "evidence": evidence,
              "lint_rules": [f.rule for f in lint.findings], **platform_slice(ctx.project, ctx.chapter, text)}
    settings = gate_settings_for(ctx.project)
    rubric = PromptBlock("judge-rubric", "system", template=prompt_template_source(
        project_id=ctx.project.pk, name="judge_rubric.j2",
        has_overrides=getattr(ctx.project, "has_prompt_overrides", None)),
        required=True, cacheable=True, priority=100)  # stable per project: cached after the bible
    blocks = [
        *system_blocks(ctx, ROLE, rubric),
        data_block("cast", "character_profile", json_text([{"id": c.slug, "name": c.display_name,
                                                            "contracts": c.contracts} for c in ctx.cast]),
                   priority=70, shrinkable=True),
        PromptBlock("contract", "user", "本章契约：" + json_text(ctx.contract), required=True, kind="json"),
        data_block("chapter", "chapter_content", text, required=True),
    ]
    call = llm_call(claim, ctx, stage="judge", slice_=slice_, blocks=blocks, template="judge.j2",
                    template_context={**slice_, "lint_findings": lint.readable(),
                                      "weights": rubric_weights(settings.scoring_weights)},
                    tags=["thought", "evaluation"], required_tags=["evaluation"],
                    on_text=on_text)
    evaluation = _evaluation(call, hook_required=slice_["hook_policy"]["required"])
    revision_count = ctx.project.revision_count
    policy_failures = platform_review(evaluation, ctx.project, ctx.chapter)
    try:  # every weighted dimension scored: else the judge is asked again, not the chapter rewritten (#20)
        recompute_overall(evaluation, settings.scoring_weights)
    except ScoreError as exc:
        raise LLMBadOutput(f"judge: the scores are incomplete: {exc}") from exc
    result = decide(evaluation, revision_count=revision_count, settings=settings,
                    deterministic_violations=[*checks.violations, *hard_fixes(lint)],  # hard: never commits
                    policy_failures=policy_failures)
    evaluation["overall_final"] = result.overall  # what the original tool reads first (facts §11)
    evaluation["anti_ai"] = anti_ai_section(lint, checks.blacklist, evaluation.get("anti_ai"))  # facts §10.11
    if ctx.project.target_platform:  # facts §7.4 step 7: the platform and the weights the gate used
        evaluation.update(platform=slice_["platform"], scoring_weights=dict(settings.scoring_weights))
    skill.write_content("lint", "report", lint.as_dict())
    skill.write_content("evaluation", "data", evaluation)
    # the chapter's style metrics (facts §13) ride along, so the dashboard charts drift per chapter
    skill.write_content("evaluation", "checks", {**checks.as_dict(), "style": style_metrics(text)})
    skill.write_content("gate", "result", {**result.as_dict(), "revisions": revision_count})
    next_stage, checkpoint, status = _route(result.decision, result, revision_count, board)
    question = None
    if status == RunStatus.WAITING:
        question = chapter_pause_gate(ctx.chapter, pause_question(ctx.chapter, result.decision, result.overall))
    return StageOutcome(board.to_dict(), next_stage, status=status, question=question,
                        checkpoint={"pipeline_stage": PipelineStage.JUDGED, **checkpoint}, calls=[call])
