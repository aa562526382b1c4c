"""A person answers a paused chapter's NOVEL_ASK question: accept it as is, revise with notes, or
rewrite it. The answer is stored as an AnswerSpec (seed 003, ``pipeline.gates``) and the run resumes."""
from __future__ import annotations

from pipeline.blackboard import Blackboard
from pipeline.gates import gate_answer_submit, gate_handler
from pipeline.models import GateAnswer, RunStatus
from pipeline.queueing import enqueue_stage
from pipeline.checkpoint import checkpoint_update
from projects.models import PipelineStage, Project

CHOICES = ("accept", "revise", "rewrite")


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
    # an outside executor's chapter (pipeline.import_step) waits for its next draft to be imported
    external = next_stage == "draft" and board.as_("slicer").read_meta("external")
    run.blackboard, run.stage = board.to_dict(), next_stage
    run.status = RunStatus.WAITING if external else RunStatus.QUEUED
    run.save(update_fields=["blackboard", "stage", "status", "updated_at"])
    if checkpoint:
        checkpoint_update(project.pk, **checkpoint)
    if not external:
        enqueue_stage(run.pk, next_stage)
