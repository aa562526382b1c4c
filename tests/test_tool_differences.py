"""``novel next`` says where its step is not the one novel-writer-cli would take for the same
checkpoint, and why (#20 item 6; the README's list "Where Novelsite deliberately differs")."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.book.orchestrator import TOOL_DIFFERENCES, next_step
from projects.models import Project


def checkpoint(project: Project, **fields) -> Project:
    Project.objects.filter(pk=project.pk).update(**fields)
    project.refresh_from_db()
    return project


@pytest.mark.django_db
def test_an_ordinary_next_chapter_is_where_the_tool_goes_too(sample_project):
    assert "differs_from_tool" not in next_step(sample_project).evidence


@pytest.mark.django_db
def test_planning_the_rest_of_a_partly_planned_volume_is_explained(sample_project, capsys):
    project = checkpoint(sample_project, last_completed_chapter=3)  # the F0 seed is written, the volume is not
    upcoming = next_step(project)
    assert upcoming.step == "volume:outline"
    assert upcoming.evidence["differs_from_tool"] == TOOL_DIFFERENCES["plan_rest_of_volume"]
    call_command("novel", "next", project.slug)
    out = capsys.readouterr().out
    assert "next: volume:outline" in out and "unlike novel-writer-cli: novel-writer-cli would review" in out
    call_command("novel", "--json", "next", project.slug)
    assert json.loads(capsys.readouterr().out)["data"]["evidence"]["differs_from_tool"].startswith(
        "novel-writer-cli would review")


@pytest.mark.django_db
def test_a_volume_with_no_plan_at_all_is_planned_before_its_first_chapter(sample_project):
    project = checkpoint(sample_project, current_volume=2, last_completed_chapter=30)
    upcoming = next_step(project)
    assert upcoming.step == "volume:outline" and upcoming.evidence["plan_range"][0] == 31
    assert upcoming.evidence["differs_from_tool"] == TOOL_DIFFERENCES["plan_next_volume"]


@pytest.mark.django_db
def test_a_polished_chapter_going_to_commit_is_explained(sample_project):
    PipelineRun.objects.create(project=sample_project, kind=RunKind.CHAPTER, chapter=1, stage="commit",
                               status=RunStatus.QUEUED,
                               blackboard={"content": {"gate": {"result": {"decision": "polish"}}}})
    upcoming = next_step(checkpoint(sample_project, inflight_chapter=1, pipeline_stage="refined"))
    assert upcoming.step == "chapter:001:commit"
    assert upcoming.evidence["differs_from_tool"] == TOOL_DIFFERENCES["polish_then_commit"]


@pytest.mark.django_db(transaction=True)
def test_a_chapter_paused_before_its_judge_is_explained(settings, make_user):
    from tests.sample_pages import paused_demo

    settings.CELERY_TASK_ALWAYS_EAGER = True
    demo, _question = paused_demo(settings, make_user("owner"))
    assert "differs_from_tool" not in next_step(demo).evidence  # the judge paused it: the tool's review too
    upcoming = next_step(checkpoint(demo, pipeline_stage="refined"))  # as refine's hard-lint pause leaves it
    assert upcoming.step == "chapter:002:review"
    assert upcoming.evidence["differs_from_tool"] == TOOL_DIFFERENCES["pause_before_judge"]
