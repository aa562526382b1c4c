"""A paused chapter's NOVEL_ASK question: how it is asked and how a person's answer moves the run.

Asked (``chapter_pause_gate``): the judge's gate (2.0–2.99, below 2.0, a high violation with the
revisions spent), refine's hard craft findings with the revisions spent, a rewrite's judge and an
outside executor's imported evaluation all stop the run at one question, under the step the
original tool gives a paused chapter: ``chapter:NNN:review`` (facts §7.3: ``pause_for_user`` and
``pause_for_user_force_rewrite`` → ``:review``). The run's own stage stays ``gate`` inside Novelsite.

Answered (``chapter_pause_apply``): accept it as is, revise with notes, or rewrite it. The answer is
stored as an AnswerSpec (seed 003, ``pipeline.questions.answers``) and the run resumes."""
from __future__ import annotations

from typing import Any

from pipeline.questions.spec import format_step_id
from pipeline.runtime.blackboard import Blackboard
from pipeline.questions.answers import answer_path_for, gate_answer_submit, gate_handler
from pipeline.models import GateAnswer, GateQuestion, GateStatus, RunStatus
from pipeline.runtime.queueing import enqueue_stage
from pipeline.runtime.checkpoint_moves import checkpoint_update
from projects.models import PipelineStage, Project

CHOICES = ("accept", "revise", "rewrite")
PAUSE_OPTIONS = [
    {"label": "accept", "description": "按现状接受并提交本章"},
    {"label": "revise", "description": "按备注修订后重新评审"},
    {"label": "rewrite", "description": "整章重写"},
]
PAUSE_STAGE = "review"  # facts §7.3: the tool's step for a chapter waiting on a person
LEGACY_PAUSE_STAGE = "judge"  # questions opened before #20 item 5 named the judge's step


def _pause_spec(chapter: int, question_text: str, default: str) -> dict[str, Any]:
    question = {"id": "decision", "header": f"第 {chapter} 章需要人工决定", "question": question_text[:500],
                "kind": "single_choice", "required": True, "options": PAUSE_OPTIONS, "default": default}
    notes = {"id": "notes", "header": "修改说明", "question": "给作者的具体修改意见（可选）", "kind": "free_text",
             "required": False}
    return {"version": 1, "topic": f"chapter.{chapter:03d}.judge_pause", "questions": [question, notes]}


def pause_question(chapter: int, decision: str, overall) -> dict[str, Any]:
    """The QuestionSpec (seed 003) of a chapter the judge's gate paused."""
    return _pause_spec(chapter, f"评审得分 {overall}，门控结果 {decision}。如何处理？",
                       "rewrite" if decision == "pause_for_user_force_rewrite" else "revise")


def lint_pause_question(chapter: int, fixes: list[str]) -> dict[str, Any]:
    """The QuestionSpec of a chapter whose hard craft findings outlived its revisions."""
    listed = "；".join(fixes[:3])
    return _pause_spec(chapter, f"修订次数已用完，仍有必须修改的问题：{listed}。如何处理？", "revise")


def chapter_pause_gate(chapter: int, spec: dict[str, Any]) -> dict[str, Any]:
    """The question a stage's outcome opens (``StageOutcome.question``, ``gates.question_open``) for a
    paused chapter: the tool's step ``chapter:NNN:review`` and its seed 003 answer path
    (``staging/novel-ask/chapter-NNN-review.answers.json``; ``question_open`` makes it ``…-2…`` when
    the chapter was paused before, so an adapter never finds the earlier answer there)."""
    step = format_step_id("chapter", chapter, PAUSE_STAGE)
    return {"step": step, "topic": spec["topic"], "spec": spec, "answer_path": answer_path_for(step)}


def open_pause_question(project: Project, chapter: int) -> GateQuestion | None:
    """The open question a paused ``chapter`` of ``project`` waits on, if any (reads only)."""
    questions = GateQuestion.objects.filter(project=project, status=GateStatus.OPEN, run__chapter=chapter)
    return next((q for q in questions.order_by("-pk") if is_pause_step(q.step)), None)


def is_pause_step(step: str) -> bool:
    """A chapter pause's step id, including the judge-named ones of questions opened before #20."""
    parts = step.split(":")
    return len(parts) == 3 and parts[0] == "chapter" and parts[2] in (PAUSE_STAGE, LEGACY_PAUSE_STAGE)


def chapter_pause_resolve(*, question_id: int, choice: str, notes: str = "", user) -> GateAnswer:
    """Answer the judge's pause (the form of the web page and the API): see ``chapter_pause_apply``."""
    answers = {"decision": choice, **({"notes": notes.strip()} if notes.strip() else {})}
    return gate_answer_submit(question_id=question_id, answers=answers, user=user)


@gate_handler("chapter")
def chapter_pause_apply(*, project: Project, run, question, answers: dict, user) -> None:
    """accept → commit (force-passed by a person), revise → draft with the notes as required fixes,
    rewrite → draft from scratch. Runs in the answering transaction (project and run locked)."""
    choice, notes = answers["decision"], str(answers.get("notes") or "").strip()
    board = Blackboard(run.blackboard)
    skill = board.as_("skill")
    if choice == "accept":
        gate = skill.read_content("gate", "result") or {}
        skill.write_content("gate", "result", {**gate, "decision": "force_passed", "force_passed": True,
                                               "accepted_by": user.get_username()})
        next_stage, checkpoint = "commit", {}
    else:
        fixes = [notes] if notes else []
        if choice == "rewrite":
            fixes = ["整章重写：保留契约目标，换一种写法"] + fixes
        skill.write_content("revision", "required_fixes", fixes or ["按评审意见修订"])
        next_stage = "draft"
        checkpoint = {"pipeline_stage": PipelineStage.REVISING, "revision_count": project.revision_count + 1}
    # an outside executor's chapter (pipeline.steps.import_step) waits for its next draft to be imported
    external = next_stage == "draft" and board.as_("slicer").read_meta("external")
    run.blackboard, run.stage = board.to_dict(), next_stage
    run.status = RunStatus.WAITING if external else RunStatus.QUEUED
    run.save(update_fields=["blackboard", "stage", "status", "updated_at"])
    if checkpoint:
        checkpoint_update(project.pk, **checkpoint)
    if not external:
        enqueue_stage(run.pk, next_stage)
