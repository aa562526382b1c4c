"""``novel status`` (text and ``--json``) says why a project is in ERROR_RETRY: the failed run's
stage and error as stored in its control zone, or the reason of the move when no run is left."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from pipeline.models import PipelineRun, RunStatus, StateTransition
from pipeline.runtime.runs import chapter_run_start, run_retry
from projects.models import OrchestratorState, Project
from projects.sample_project import sample_project_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]


def _status(*args: str) -> str:
    out = io.StringIO()
    call_command("novel", *args, stdout=out)
    return out.getvalue()


def test_status_shows_the_cause_of_error_retry_in_text_and_json(settings):
    settings.NOVELSITE_OFFLINE = {"faults": {"draft": {"kind": "permanent", "rate": 1.0}}}
    project = sample_project_create()
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.ERROR and run.error.startswith("LLMPermanentError")

    text = _status("status", project.slug)
    assert "ERROR_RETRY" in text
    error_line = next(line for line in text.splitlines() if line.strip().startswith("error:"))
    assert "draft: LLMPermanentError" in error_line and f"run {run.pk}" in error_line and "chapter 1" in error_line

    data = json.loads(_status("--json", "status", project.slug))
    error = data["data"]["error"]
    assert error["error"] == run.error and error["stage"] == "draft"
    assert (error["run_id"], error["run_kind"], error["chapter"]) == (run.pk, "chapter", 1)
    assert error["at"]

    settings.NOVELSITE_OFFLINE = {}  # once retried and written, the error is gone from the status
    run_retry(run_id=run.pk)
    assert "error:" not in _status("status", project.slug)
    assert json.loads(_status("--json", "status", project.slug))["data"]["error"] is None


def test_status_without_a_failed_run_gives_the_reason_of_the_move():
    project = sample_project_create()
    Project.objects.filter(pk=project.pk).update(orchestrator_state=OrchestratorState.ERROR_RETRY)
    StateTransition.objects.create(project=project, from_state="WRITING", to_state="ERROR_RETRY",
                                   reason="draft: retries spent: LLMOverloaded: draft: 529")
    assert not PipelineRun.objects.exists()
    assert "draft: retries spent: LLMOverloaded" in _status("status", project.slug)
    data = json.loads(_status("--json", "status", project.slug))
    assert data["data"]["error"]["error"] == "draft: retries spent: LLMOverloaded: draft: 529"


def test_status_of_a_healthy_project_has_no_error():
    project = sample_project_create()
    assert "error:" not in _status("status", project.slug)
    data = json.loads(_status("--json", "status", project.slug))
    assert data["data"]["error"] is None
