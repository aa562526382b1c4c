"""The gate reads an evaluation from outside as the original tool does (#20 item 4): the stated
``overall_final``, then ``overall``, then ``judges.overall_final``; Novelsite's own judge keeps
recomputing from the weights and writes ``overall_final``; an evaluation missing a dimension is
asked again (or refused on import), never a forced rewrite."""
from __future__ import annotations

import pytest

from pipeline.chapter.quality_gate import GateSettings, decide, stated_overall
from pipeline.models import GateQuestion, RunStatus
from pipeline.runtime.runs import chapter_run_start
from projects.models import OrchestratorState
from projects.sample_project import sample_project_create
from projects.schemas import SCORE_DIMENSIONS


def scores(value: float, *, missing: int = 0) -> dict:
    dims = SCORE_DIMENSIONS[:len(SCORE_DIMENSIONS) - missing]
    return {dim: {"score": value} for dim in dims}


@pytest.mark.parametrize(("evaluation", "expected"), [
    ({"overall_final": 4.2, "overall": 3.1}, 4.2),
    ({"overall": 3.1, "judges": {"overall_final": 4.5}}, 3.1),
    ({"judges": {"overall_final": 4.5}}, 4.5),
    ({"overall_final": "4.2", "overall": 3.6}, 3.6),  # a string is not a number
    ({"overall_final": True}, None),
    ({"eval_used": {"overall": 3.9}}, 3.9),
    ({}, None),
])
def test_the_stated_overall_follows_the_tools_precedence(evaluation, expected):
    assert stated_overall(evaluation) == expected


def test_an_outside_evaluation_is_gated_on_what_it_states_ours_on_the_weights():
    evaluation = {"overall_final": 4.3, "scores": scores(3.0)}
    assert decide(evaluation, revision_count=0, outside=True).decision == "pass"  # as the tool decides
    assert decide(evaluation, revision_count=0).decision == "revise"  # Novelsite's own: the scores, 3.0


def test_an_outside_evaluation_with_seven_dimensions_and_a_stated_overall_is_usable():
    evaluation = {"overall": 3.7, "scores": scores(4.0, missing=1)}
    assert decide(evaluation, revision_count=0, outside=True).decision == "polish"
    # without a stated overall the scores are all there is: unusable, as before
    assert decide({"scores": scores(4.0, missing=1)}, revision_count=0,
                  settings=GateSettings()).decision == "pause_for_user_force_rewrite"


@pytest.mark.django_db(transaction=True)
def test_our_judge_missing_a_dimension_is_asked_again_not_a_rewrite(settings, make_user):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {"score_mode": "incomplete"}
    project = sample_project_create(owner=make_user("owner"))
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()
    project.refresh_from_db()
    assert (run.status, run.stage) == (RunStatus.ERROR, "judge")  # retried, then parked: not paused
    assert "scores are incomplete" in run.error
    assert project.orchestrator_state == OrchestratorState.ERROR_RETRY
    assert not GateQuestion.objects.filter(project=project).exists()


@pytest.mark.django_db(transaction=True)
def test_our_judge_writes_overall_final_as_the_tool_reads_it(settings, make_user):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
    project = sample_project_create(owner=make_user("owner"))
    chapter_run_start(project_id=project.pk)
    evaluation = project.evaluations.get(chapter__number=1)
    assert evaluation.data["overall_final"] == float(evaluation.overall)


@pytest.mark.django_db(transaction=True)
def test_a_chapter_paused_again_asks_on_a_new_answer_path(settings, make_user):
    """After "revise" the chapter pauses again: the new question must not share its answer path
    with the old, answered one (still exported there), or an adapter following seed 003 would take
    the old answer for the new question (#20 item 5)."""
    from projects.filetree.export import tree_files
    from tests.sample_pages import paused_demo

    settings.CELERY_TASK_ALWAYS_EAGER = True
    demo, question = paused_demo(settings, make_user("owner"))
    first = GateQuestion.objects.filter(project=demo).exclude(pk=question.pk).get()
    assert first.answer_path == "staging/novel-ask/chapter-002-review.answers.json"
    assert question.answer_path == "staging/novel-ask/chapter-002-review-2.answers.json"
    files = dict(tree_files(demo))
    assert first.answer_path in files  # the old answer, exported where it was
    assert question.answer_path not in files  # the new question: no answer yet
