"""The runtime's one table of stages: every step a run of any kind is created with has code to run
it, and a task naming a stage its run does not have ends the run in a clear error instead of
hanging or running the wrong code."""
from __future__ import annotations

import pytest

from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.promotion import run as promotion
from pipeline.book.rewrite import REWRITE_STAGES
from pipeline.runtime.registry import STAGES, UnknownStage, stage_for
from pipeline.runtime.stage import CHAPTER, PROJECT, Stage
from pipeline.book import plan, quickstart, review, voice
from projects.vocabulary import CHAPTER_RUN_STEPS

RUN_STEPS = {  # the steps each kind of run is created with
    RunKind.CHAPTER: CHAPTER_RUN_STEPS,
    RunKind.REWRITE: REWRITE_STAGES,
    RunKind.QUICKSTART: quickstart.STEPS,
    RunKind.PLAN: plan.STEPS,
    RunKind.REVIEW: review.STEPS,
    RunKind.PROMOTION: promotion.STEPS,
    RunKind.STYLE: voice.STEPS,
}


def test_every_kind_of_run_is_covered():
    assert set(RUN_STEPS) == set(RunKind.values)


@pytest.mark.parametrize("kind", list(RUN_STEPS))
def test_every_step_a_run_is_created_with_has_exactly_one_stage(kind):
    registered = {name for registered_kind, name in STAGES if registered_kind == kind}
    assert registered == set(RUN_STEPS[kind])
    for name in RUN_STEPS[kind]:
        assert isinstance(stage_for(kind, name), Stage)


def test_chapter_stages_read_the_chapter_and_book_steps_the_project():
    for name in ("draft", "summarize", "refine", "judge", "maintain"):
        assert stage_for(RunKind.CHAPTER, name).reads == CHAPTER
    commit = stage_for(RunKind.CHAPTER, "commit")
    assert commit.in_one_transaction is not None and commit.execute is None  # no model call: one transaction
    assert stage_for(RunKind.REWRITE, "commit").execute is not None  # a rewrite commits through its own step
    assert all(stage_for(kind, name).reads == PROJECT for kind in RUN_STEPS if kind != RunKind.CHAPTER
               for name in RUN_STEPS[kind])


def test_a_stage_has_one_way_to_run():
    with pytest.raises(ValueError, match="either"):
        Stage()
    with pytest.raises(ValueError, match="either"):
        Stage(execute=print, in_one_transaction=print)
    with pytest.raises(ValueError, match="reads"):
        Stage(execute=print, reads="book")


def test_an_unknown_stage_is_named():
    with pytest.raises(UnknownStage, match="a plan run has no stage 'draft'"):
        stage_for(RunKind.PLAN, "draft")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("sent")
def test_a_task_for_a_stage_the_run_does_not_have_ends_the_run_in_error_with_the_cause():
    from pipeline.runtime.runs import chapter_run_start
    from pipeline.tasks import stage_run_task
    from projects.sample_project import sample_project_create

    project = sample_project_create(slug="unknown-stage")
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()
    PipelineRun.objects.filter(pk=run.pk).update(stage="volume:outline")  # a message from another version

    with pytest.raises(UnknownStage):
        stage_run_task.apply(kwargs={"run_id": run.pk, "stage": "volume:outline"}, throw=True)
    stage_run_task.on_failure(UnknownStage("a chapter run has no stage 'volume:outline'"), None, (),
                              {"run_id": run.pk, "stage": "volume:outline"}, None)

    run.refresh_from_db()
    assert run.status == RunStatus.ERROR and "no stage 'volume:outline'" in run.error
