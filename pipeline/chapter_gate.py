"""A person answers a paused chapter's NOVEL_ASK question: accept it as is, revise with notes, or
rewrite it. The answer is stored as an AnswerSpec (seed 003) and the run resumes."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from pipeline.blackboard import Blackboard
from pipeline.errors import PipelineNotReady
from pipeline.lock_objects import run_lock
from pipeline.models import GateAnswer, GateQuestion, GateStatus, RunStatus
from pipeline.queueing import enqueue_stage
from pipeline.runs import checkpoint_update
from projects.errors import InvalidData
from projects.lock_objects import project_lock
from projects.models import PipelineStage, Project

CHOICES = ("accept", "revise", "rewrite")


@transaction.atomic(durable=True)
def chapter_pause_resolve(*, question_id: int, choice: str, notes: str = "", user) -> GateAnswer:
    """Answer the judge's pause and send the run on: accept → commit (force-passed by a person),
    revise → draft with the notes as required fixes, rewrite → draft from scratch."""
    if choice not in CHOICES:
        raise InvalidData(f"decision: {choice!r} is not one of {', '.join(CHOICES)}")
    question = GateQuestion.objects.select_related("run").get(pk=question_id)
    project = project_lock(question.project_id)
    run = run_lock(question.run_id)
    if question.status != GateStatus.OPEN or run.status != RunStatus.WAITING:
        raise PipelineNotReady("this question is no longer waiting for an answer")
    answers = {"decision": choice, **({"notes": notes} if notes.strip() else {})}
    answer = GateAnswer.objects.create(question=question, answered_by=user, answered_at=timezone.now(), answer={
        "version": 1, "topic": question.topic, "answers": answers,
        "answered_at": timezone.now().isoformat(timespec="seconds"), "answered_by": user.get_username()})
    GateQuestion.objects.filter(pk=question.pk).update(status=GateStatus.ANSWERED)
    board = Blackboard(run.blackboard)
    skill = board.as_("skill")
    if choice == "accept":
        gate = skill.read_content("gate", "result") or {}
        skill.write_content("gate", "result", {**gate, "decision": "force_passed", "force_passed": True,
                                               "accepted_by": user.get_username()})
        next_stage, checkpoint = "commit", {}
    else:
        fixes = [notes.strip()] if notes.strip() else []
        if choice == "rewrite":
            fixes = ["整章重写：保留契约目标，换一种写法"] + fixes
        skill.write_content("revision", "required_fixes", fixes or ["按评审意见修订"])
        next_stage = "draft"
        checkpoint = {"pipeline_stage": PipelineStage.REVISING, "revision_count": _revisions(project) + 1}
    run.blackboard, run.stage, run.status = board.to_dict(), next_stage, RunStatus.QUEUED
    run.save(update_fields=["blackboard", "stage", "status", "updated_at"])
    if checkpoint:
        checkpoint_update(project.pk, **checkpoint)
    enqueue_stage(run.pk, next_stage)
    return answer


def _revisions(project: Project) -> int:
    return Project.objects.filter(pk=project.pk).values_list("revision_count", flat=True).first() or 0
