"""NOVEL_ASK gates (seed 003, facts §14): a step stops at a QuestionSpec, a person with a role that
may decide answers it, the AnswerSpec is validated by the seed's rules and stored, and the run the
question belongs to goes on according to the answer.

What an answer does depends on the step that asked (``GATE_HANDLERS``, keyed by the step id's
kind: ``chapter``, ``quickstart``, ``volume``). A handler runs inside the answering transaction,
with the project and the run locked, and moves the run on (it enqueues the next stage on commit).
A valid answer given earlier to the same step and topic is reused instead of asking again; an
invalid stored answer blocks the step with the reason (``question_reuse``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from pipeline.questions.spec import answer_spec, check_answer, parse_step_id
from pipeline.errors import PipelineNotReady
from pipeline.runtime.locks import run_lock
from pipeline.models import GateAnswer, GateQuestion, GateStatus, PipelineRun, RunStatus
from projects.errors import InvalidData
from projects.lock_objects import project_lock
from projects.models import Project

# step kind -> handler(project=, run=, question=, answers=, user=)
GateHandler = Callable[..., None]
GATE_HANDLERS: dict[str, GateHandler] = {}


def gate_handler(kind: str) -> Callable[[GateHandler], GateHandler]:
    def register(handler: GateHandler) -> GateHandler:
        GATE_HANDLERS[kind] = handler
        return handler
    return register


@transaction.atomic(durable=True)
def gate_answer_submit(*, question_id: int, answers: dict[str, Any], user) -> GateAnswer:
    """Validate ``answers`` against the question (facts §14.3–14.4), store the AnswerSpec with
    ``answered_by`` = the user and ``answered_at`` in RFC 3339, and resume the run. Raises
    InvalidData naming every problem (nothing is stored) or PipelineNotReady when the question is
    no longer open. The caller checks that ``user`` may answer (reviewer or above)."""
    question = GateQuestion.objects.filter(pk=question_id).first()
    if question is None:
        raise PipelineNotReady("no such question")
    project = project_lock(question.project_id)
    run = run_lock(question.run_id) if question.run_id else None
    question = GateQuestion.objects.get(pk=question_id)  # re-read under the lock
    if question.status == GateStatus.CANCELLED:
        raise PipelineNotReady("this question was cancelled with its run")
    if question.status != GateStatus.OPEN or (run is not None and run.status != RunStatus.WAITING):
        raise PipelineNotReady("this question is no longer waiting for an answer")
    if not isinstance(answers, dict):
        raise InvalidData("answers: must be an object of question id -> answer")
    try:
        record = answer_spec(question_spec=question.spec, answers=answers, answered_by=user.get_username(),
                             answered_at=timezone.localtime())
    except ValueError as exc:
        raise InvalidData(str(exc)) from exc
    answer = GateAnswer.objects.create(question=question, answer=record, answered_by=user,
                                       answered_at=timezone.now())
    GateQuestion.objects.filter(pk=question.pk).update(status=GateStatus.ANSWERED)
    if run is not None:
        handler = GATE_HANDLERS.get(parse_step_id(question.step).kind)
        if handler is None:
            raise PipelineNotReady(f"no step handles answers to {question.step}")
        handler(project=project, run=run, question=question, answers=record["answers"], user=user)
    return answer


def question_reuse(*, project: Project, step: str, spec: dict[str, Any]) -> tuple[dict | None, str]:
    """An earlier answer to the same step and topic: (its answers, "") when still valid for
    ``spec``, (None, why) when it is not (the step is blocked with that reason), (None, "") when
    there is none."""
    earlier = (GateAnswer.objects.filter(question__project=project, question__step=step,
                                         question__topic=spec["topic"]).order_by("-answered_at", "-pk").first())
    if earlier is None:
        return None, ""
    errors = check_answer(earlier.answer, spec)
    if errors:
        return None, "the stored answer is invalid: " + "; ".join(errors)
    return dict(earlier.answer["answers"]), ""


def question_open(*, run: PipelineRun, step: str, spec: dict[str, Any], answer_path: str) -> GateQuestion:
    """Open the question a waiting run stops at (idempotent for a run, step and topic). A question
    asked again (a chapter paused a second time after "revise") gets an answer path of its own, so
    an outside executor following seed 003 does not take the earlier answer, still exported at the
    old path, for an answer to the new question (#20)."""
    question = GateQuestion.objects.filter(project_id=run.project_id, run=run, step=step, topic=spec["topic"],
                                           status=GateStatus.OPEN).first()
    if question is not None:
        return question
    return GateQuestion.objects.create(project_id=run.project_id, run=run, step=step, topic=spec["topic"],
                                       status=GateStatus.OPEN, spec=spec,
                                       answer_path=fresh_answer_path(run.project_id, answer_path))


def fresh_answer_path(project_id: int, path: str) -> str:
    """``path``, or ``…-2.answers.json``, ``…-3…`` when an earlier question of the project used it."""
    taken = set(GateQuestion.objects.filter(project_id=project_id, answer_path__startswith=path.split(".")[0])
                .values_list("answer_path", flat=True))
    if path not in taken:
        return path
    stem, dot, suffix = path.partition(".")
    number = 2
    while f"{stem}-{number}{dot}{suffix}" in taken:
        number += 1
    return f"{stem}-{number}{dot}{suffix}"


def answer_path_for(step: str) -> str:
    """Where an answer is exported (facts §14.5: staging/novel-ask/…)."""
    return f"staging/novel-ask/{step.replace(':', '-')}.answers.json"
