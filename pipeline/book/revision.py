"""CHAPTER_REWRITE of a chapter that later chapters build on: a text-only revision. The chapter is
rewritten with the person's notes but must keep the facts of its summary (the later chapters,
the state and the foreshadowing ledger all rest on them), so the summary, the state and the
changelog stay as they are. A deterministic check (every character the summary names is still
on the page) feeds the judge; the gate is the chapter gate (facts §11) with that check as a
violation, so a revision that loses facts goes back to draft, and after ``max_revisions`` waits
for a person (accept / revise / rewrite, ``pipeline.chapter.pause``).

The run is of kind ``rewrite`` and uses the chapter stage names ``draft`` → ``judge`` → ``commit``
(so the chapter gate's answers route it), with these modules behind them.
"""
from __future__ import annotations

from typing import Any

from django.db import transaction

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.pause import chapter_pause_gate, pause_question
from pipeline.runtime.claims import finish_locked
from pipeline.runtime.stage import Stage
from pipeline.chapter.quality_gate import decide
from pipeline.llm.types import LLMBadOutput
from pipeline.models import RunStatus
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.chapter.platform_rules import gate_settings_for, hook_field_problems, platform_review
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import PromptBlock, data_block, json_output, json_text, project_llm_call
from pipeline.chapter.stages.draft import MIN_CHARS, platform_draft_slice, split_chapter
from pipeline.chapter.stages.judge import platform_slice
from projects.evaluations import evaluation_columns
from projects.models import Chapter, OrchestratorState, PipelineStage, Project
from projects.services.editing import story_object_update

ROLE = ("你是这部连载的作者，按编辑的意见改写已发表的一章。只改写法，不改事实：摘要里的人物、事件、"
        "地点、伏笔都必须保留，后面的章节以它们为前提。")


def _chapter(project: Project, number: int) -> Chapter:
    return Chapter.objects.select_related("summary").get(project=project, number=number)


def facts_missing(summary: str, text: str, names: list[str]) -> list[str]:
    """The characters the summary names that the revised text no longer mentions."""
    return [name for name in names if name in summary and name not in text]


def _draft(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    meta = board.as_("slicer").read_meta
    number, notes = meta("chapter"), meta("notes")
    chapter = _chapter(project, number)
    summary = chapter.summary.text if hasattr(chapter, "summary") else ""
    contract = project.chapter_contracts.filter(chapter=number).values_list("data", flat=True).first() or {}
    fixes = board.as_("skill").read_content("revision", "required_fixes") or []
    cast = [{"slug": s, "display_name": n} for s, n in project.characters.values_list("slug", "display_name")
            if n in summary][:10]
    slice_ = {"chapter": number, "title": chapter.title, "storyline_id": contract.get("storyline_id", ""),
              "characters": cast, "objectives": [o.get("description", "") for o in contract.get("objectives", [])],
              "place": "", **platform_draft_slice(project), "blacklist": [],
              "required_fixes": [notes, *fixes]}
    blocks = [PromptBlock("role", "system", ROLE, required=True, cacheable=True),
              data_block("summary", "summary", summary, required=True, priority=100),
              data_block("chapter", "chapter_content", chapter.text, required=True, priority=90),
              PromptBlock("notes", "user", f"修改意见：{notes}", required=True)]
    call = project_llm_call(claim, project, label=f"revise{number}", stage="draft", slice_=slice_, blocks=blocks,
                            template="draft.j2", template_context=slice_, tags=["thought", "chapter", "hints"],
                            required_tags=["chapter"], on_text=on_text)
    title, body = split_chapter(call.texts["chapter"], chapter.title)
    if len(body) < MIN_CHARS:
        raise LLMBadOutput(f"draft: the revised chapter has {len(body)} characters; expected a full chapter")
    worker = board.as_("worker")
    worker.write_content("chapter", "title", title)
    worker.write_content("chapter", "draft", body)
    return StageOutcome(board.to_dict(), "judge", calls=[call], checkpoint={"pipeline_stage": PipelineStage.DRAFTING})


def _judge(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    number = board.as_("slicer").read_meta("chapter")
    chapter = _chapter(project, number)
    summary = chapter.summary.text if hasattr(chapter, "summary") else ""
    text = board.as_("skill").read_content("chapter", "draft")
    names = list(project.characters.values_list("display_name", flat=True))
    missing = facts_missing(summary, text, names)
    violations = [{"type": "summary_fact", "detail": f"改写后不再出现摘要中的人物：{name}", "confidence": "high"}
                  for name in missing]
    contract = project.chapter_contracts.filter(chapter=number).values_list("data", flat=True).first() or {}
    objectives = contract.get("objectives", [])
    slice_ = {"chapter": number, "objectives": objectives, "checks": {"summary_facts_missing": missing},
              **platform_slice(project, number, text)}
    call = project_llm_call(claim, project, label=f"revise{number}", stage="judge", slice_=slice_,
                            blocks=[PromptBlock("role", "system", "你是严格的质检编辑：改写必须保留原摘要的全部事实。",
                                                required=True, cacheable=True),
                                    data_block("summary", "summary", summary, required=True),
                                    PromptBlock("contract", "user", "本章契约：" + json_text(contract), kind="json"),
                                    data_block("chapter", "chapter_content", text, required=True)],
                            template="judge.j2", template_context=slice_, tags=["thought", "evaluation"],
                            required_tags=["evaluation"], on_text=on_text)
    evaluation = json_output(call, "evaluation", schema="EVALUATION", stage="judge")
    if slice_["hook_policy"]["required"] and (problems := hook_field_problems(evaluation)):
        raise LLMBadOutput("judge: the platform requires a chapter-end hook verdict: " + "; ".join(problems))
    result = decide(evaluation, revision_count=project.revision_count, settings=gate_settings_for(project),
                    deterministic_violations=violations,
                    policy_failures=platform_review(evaluation, project, number))
    skill = board.as_("skill")
    skill.write_content("evaluation", "data", evaluation)
    skill.write_content("gate", "result", {**result.as_dict(), "revisions": project.revision_count})
    checkpoint: dict[str, Any] = {"pipeline_stage": PipelineStage.JUDGED}
    if result.decision in ("pass", "force_passed", "polish"):
        return StageOutcome(board.to_dict(), "commit", calls=[call], checkpoint=checkpoint)
    if result.decision == "revise":
        skill.write_content("revision", "required_fixes", result.required_fixes)
        return StageOutcome(board.to_dict(), "draft", calls=[call], checkpoint={
            **checkpoint, "pipeline_stage": PipelineStage.REVISING, "revision_count": project.revision_count + 1})
    return StageOutcome(board.to_dict(), "gate", status=RunStatus.WAITING, calls=[call], checkpoint=checkpoint,
                        question=chapter_pause_gate(number, pause_question(number, result.decision, result.overall)))


def _commit(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    board.as_("orchestrator").update_step_status("commit", "completed")
    return StageOutcome(board.to_dict(), None)


@transaction.atomic(durable=True)
def _commit_finish(*, claim: Claim, outcome: StageOutcome) -> None:
    """The revised text replaces the chapter's (a versioned edit by the person who asked), and the
    new evaluation the old one; the summary, the state and the changelog are untouched."""
    board = Blackboard(outcome.blackboard)
    skill = board.as_("skill")

    def write(project: Project, run) -> None:
        chapter = _chapter(project, run.chapter)
        story_object_update(obj=chapter, editor=run.created_by, base_version=chapter.version,
                            text=skill.read_content("chapter", "draft"),
                            title=(skill.read_content("chapter", "title") or chapter.title)[:200])
        evaluation = skill.read_content("evaluation", "data")
        if evaluation and hasattr(chapter, "evaluation"):
            type(chapter.evaluation).objects.filter(pk=chapter.evaluation.pk).update(
                data=evaluation, **evaluation_columns(evaluation))
        checkpoint_update(project.pk, orchestrator_state=OrchestratorState.WRITING, inflight_chapter=None,
                          pipeline_stage=PipelineStage.COMMITTED, revision_count=0,
                          reason=f"chapter {run.chapter} revised", run=run, from_state=project.orchestrator_state)

    finish_locked(claim, outcome, write)


REVISION_STEPS: dict[str, Stage] = {"draft": Stage(_draft), "judge": Stage(_judge),
                                   "commit": Stage(_commit, _commit_finish)}
