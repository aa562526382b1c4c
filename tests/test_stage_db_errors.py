"""A stage whose database connection dies under it (a server restart, a failover, a proxy's idle
timeout while the stage waited for the LLM), on PostgreSQL, in this process: the connection is cut
with ``pg_terminate_backend`` from a second one.

What a user relies on: an answer already paid for is stored anyway; a failed attempt is recorded
and its lease released on a new connection, so the task's retry claims the stage at once instead
of the run standing still until its lease expires, and resumes the same attempt (its stored calls
are reused); nothing of a caller's transaction is touched.
(``tests/test_pipeline_worker.py`` has the same through a real worker, the retries included.)
"""
from __future__ import annotations

from decimal import Decimal

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from pipeline.runtime import runner as stage_runner
from pipeline.runtime.blackboard import Blackboard
from pipeline.llm.call_store import DbCallStore
from pipeline.runtime.db_connection import connection_drop_if_broken
from pipeline.llm.types import LLMResult, Usage
from pipeline.models import LLMCall, PipelineRun, RunStatus, StageRun
from pipeline.runtime.runs import chapter_run_start
from pipeline.tasks import STAGE_RETRYABLE_ERRORS, stage_run_task
from projects.sample_project import sample_project_create

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def connection_cut() -> None:
    """Terminate this process's database session from another one, and wait until it is gone."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    s = connection.settings_dict
    with psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"],
                         password=s["PASSWORD"] or None, dbname=s["NAME"], autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()[0]


@pytest.fixture
def run(sent) -> PipelineRun:
    project = sample_project_create(slug="cut")
    return chapter_run_start(project_id=project.pk)


def a_result() -> LLMResult:
    return LLMResult(text="答复", stop_reason="end_turn", usage=Usage(input_tokens=10, output_tokens=5),
                     cost_usd=Decimal("0.001"), duration_ms=1200, request_id="req_1", model="m", backend="offline")


def test_an_answer_is_stored_on_a_new_connection_when_the_old_one_died_during_the_call(run):
    connection_cut()  # while the LLM was answering, the idle connection was cut

    DbCallStore(run_id=run.pk, stage_run_id=None).put("run1:draft:1:1", a_result(), {"prompt_sha256": "x"})

    stored = LLMCall.objects.get(call_key="run1:draft:1:1")
    assert (stored.output_text, stored.duration_ms, stored.run_id) == ("答复", 1200, run.pk)


def test_a_stage_whose_connection_died_records_its_failure_and_releases_the_lease(run, sent, monkeypatch):
    reads = stage_runner._stage_context

    def cut_then_read(claim):  # the connection dies after the claim, before the stage's first read
        connection_cut()
        return reads(claim)

    monkeypatch.setattr(stage_runner, "_stage_context", cut_then_read)
    with pytest.raises(OperationalError):
        stage_runner.stage_run(run_id=run.pk, stage="draft")

    run.refresh_from_db()
    # recorded on a new connection: the run waits, unleased, for the task's retry
    assert (run.status, run.stage, run.lease_owner, run.lease_expires_at) == (RunStatus.QUEUED, "draft", "", None)
    interrupted = StageRun.objects.get(run=run, stage="draft")
    # the database's failure, not the stage's: the attempt stays open, so that its retry would reuse
    # an LLM call it had stored
    assert interrupted.status == "running" and interrupted.error.startswith("OperationalError: ")
    assert Blackboard(run.blackboard).as_("orchestrator").read_control("retries") == {"draft": 1}

    # the retry claims at once (no lease to wait for) and the stage goes on in the same attempt
    monkeypatch.setattr(stage_runner, "_stage_context", reads)
    stage_runner.stage_run(run_id=run.pk, stage="draft")
    run.refresh_from_db()
    assert (run.stage, run.status) == ("summarize", RunStatus.QUEUED)
    assert list(StageRun.objects.filter(run=run).order_by("pk").values_list("status", "attempt")) == [
        ("abandoned", 1), ("succeeded", 1)]
    assert sent[-1] == (run.pk, "summarize")


def test_database_errors_are_what_the_stage_task_retries():
    assert issubclass(OperationalError, STAGE_RETRYABLE_ERRORS)
    assert set(stage_run_task.autoretry_for) == set(STAGE_RETRYABLE_ERRORS)


def test_a_connection_inside_a_transaction_is_left_to_its_owner():
    with pytest.raises(OperationalError), transaction.atomic():
        connection_cut()
        assert connection_drop_if_broken() is False  # the caller's transaction decides, not the stage
        assert connection.connection is not None
        PipelineRun.objects.count()  # and the caller finds out by itself
    # the transaction's end dropped the dead connection; the next query opens a new one
    assert PipelineRun.objects.count() == 0


def test_a_working_connection_is_kept(run):
    connection.ensure_connection()
    raw = connection.connection
    assert connection_drop_if_broken() is False
    assert connection.connection is raw
