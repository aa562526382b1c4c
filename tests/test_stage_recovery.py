"""A stage keeps its short lease while the model answers, loses it only to a takeover, and the
recovery around it holds (DESIGN §4, "Locking and recovery"; issue #15 item 10):

1. A stage three leases long keeps its lease through its heartbeat: the reconciler never sees it
   as dead, nobody takes it over, it completes once.
2. A stage taken over while it waited on the model writes nothing over the new owner's work.
3. A reconciler cycle whose database connection was cut is retried, not lost.
4. A stage task whose retries run out after a twin committed the run (or while a twin holds the
   stage) marks nothing failed.

Lease renewals run on a second connection and wake-ups are sent on commit: the tests commit
their rows (``transaction=True``).
Worker deaths with real workers and their timing are in ``tests/test_pipeline_worker.py``.
"""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.utils import timezone

from pipeline.models import LLMCall, PipelineRun, RunStatus, StageRun
from pipeline.runtime.runs import chapter_run_start, runs_reconcile
from pipeline.runtime.claims import stage_claim
from pipeline.runtime.runner import stage_run
from pipeline.tasks import runs_reconcile_task, stage_run_task
from projects.models import Chapter, OrchestratorState, Project
from tests.worker_harness import writable_project

pytestmark = [pytest.mark.postgres]

MODEL_SECONDS = 3


@pytest.fixture
def slow_model_short_lease(settings):
    settings.NOVELSITE_LEASE_SECONDS = 1  # renewed every third of a second
    settings.NOVELSITE_OFFLINE = {"latency_ms": MODEL_SECONDS * 1000}


class Beside(threading.Thread):
    """Runs ``step`` every 0.1 s in its own thread (its own database connection) while the test's
    stage runs in the main thread."""

    def __init__(self, step) -> None:
        super().__init__(daemon=True)
        self.step, self.halt, self.error = step, threading.Event(), None

    def run(self) -> None:
        try:
            while not self.halt.is_set():
                self.step()
                time.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 - re-raised in the test by stop()
            self.error = exc
        finally:
            connection.close()

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=10)
        if self.error is not None:
            raise self.error


@pytest.mark.django_db(transaction=True)
def test_a_stage_three_leases_long_keeps_its_lease_while_the_model_answers(slow_model_short_lease, sent):
    run = chapter_run_start(project_id=writable_project(1).pk)
    sent.clear()
    woken, expiries = [], []

    def reconcile_and_watch() -> None:  # beat running the reconciler, as fast as it could
        woken.extend(runs_reconcile())
        expiries.append(PipelineRun.objects.values_list("lease_expires_at", flat=True).get(pk=run.pk))

    watcher = Beside(reconcile_and_watch)
    watcher.start()
    started = time.monotonic()
    stage_run(run_id=run.pk, stage="draft")
    elapsed = time.monotonic() - started
    watcher.stop()

    assert elapsed >= MODEL_SECONDS  # three times the lease
    assert woken == [] and sent == [(run.pk, "summarize")]  # never taken for dead, never handed out again
    renewed = sorted({at for at in expiries if at is not None})
    assert len(renewed) >= 5 and renewed[-1] - renewed[0] >= timedelta(seconds=MODEL_SECONDS - 1)
    run.refresh_from_db()
    assert (run.stage, run.status, run.lease_owner) == ("summarize", RunStatus.QUEUED, "")
    assert list(StageRun.objects.filter(run=run).values_list("stage", "status")) == [("draft", "succeeded")]


@pytest.mark.django_db(transaction=True)
def test_a_stage_taken_over_while_the_model_answers_writes_nothing(slow_model_short_lease, sent):
    run = chapter_run_start(project_id=writable_project(1).pk)
    sent.clear()
    taken = []

    def take_over_once() -> None:  # its worker looked dead: the lease expired, another worker claimed it
        if taken or not StageRun.objects.filter(run=run, status="running").exists():
            return
        time.sleep(0.5)
        PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        taken.append(stage_claim(run_id=run.pk, stage="draft", owner="worker-b:2:takeover"))

    thief = Beside(take_over_once)
    thief.start()
    stage_run(run_id=run.pk, stage="draft")
    thief.stop()

    assert taken and taken[0] is not None
    run.refresh_from_db()
    # the new owner's stage, untouched: still running under its lease, nothing advanced or queued
    assert (run.stage, run.status, run.lease_owner) == ("draft", RunStatus.RUNNING, "worker-b:2:takeover")
    assert sent == []
    assert list(StageRun.objects.filter(run=run).order_by("pk").values_list("status", flat=True)) == [
        "abandoned", "running"]
    # what the first worker paid for is stored for the new owner (same attempt, same key)
    assert LLMCall.objects.filter(run=run).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_reconciler_cycle_whose_connection_was_cut_is_retried(sent):
    run = chapter_run_start(project_id=writable_project(1).pk)
    sent.clear()  # its wake-up was lost
    PipelineRun.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]

    def cut() -> None:  # a PostgreSQL restart or a proxy's idle timeout, seen from the worker
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        connection.close()

    cutter = threading.Thread(target=cut)
    cutter.start()
    cutter.join()

    result = runs_reconcile_task.apply(throw=False)  # as a worker runs it, retries included

    assert result.successful(), result.traceback
    assert result.get() == 1
    assert sent == [(run.pk, "draft")]


def drive(sent) -> None:
    """Run the recorded wake-ups one after another, as a worker would."""
    while sent:
        run_id, stage = sent.pop(0)
        stage_run(run_id=run_id, stage=stage)


def spend_retries(run: PipelineRun, stage: str) -> None:
    """What Celery calls once a stage task's last retry failed."""
    error = OperationalError("server closed the connection unexpectedly")
    stage_run_task.on_failure(error, "task-id", (), {"run_id": run.pk, "stage": stage}, None)


@pytest.mark.django_db(transaction=True)
def test_retries_spent_after_a_redelivered_twin_committed_the_run_mark_nothing_failed(sent):
    project = writable_project(1)
    run = chapter_run_start(project_id=project.pk)
    drive(sent)  # the redelivered twin wrote and committed the chapter
    run.refresh_from_db()
    assert run.status == RunStatus.DONE

    spend_retries(run, "commit")

    run.refresh_from_db()
    project = Project.objects.get(pk=project.pk)
    assert (run.status, run.error) == (RunStatus.DONE, "")
    assert project.orchestrator_state == OrchestratorState.WRITING and project.last_completed_chapter == 1
    assert not StageRun.objects.filter(run=run, status="failed").exists()
    assert Chapter.objects.filter(project=project).count() == 1


@pytest.mark.django_db(transaction=True)
def test_retries_spent_while_a_twin_holds_the_stage_leave_it_to_the_twin(sent):
    project = writable_project(1)
    run = chapter_run_start(project_id=project.pk)
    assert stage_claim(run_id=run.pk, stage="draft", owner="twin:1:redelivered")  # working on it, lease live

    spend_retries(run, "draft")

    run.refresh_from_db()
    assert (run.status, run.stage, run.lease_owner, run.error) == (RunStatus.RUNNING, "draft",
                                                                   "twin:1:redelivered", "")
    assert Project.objects.get(pk=project.pk).orchestrator_state == OrchestratorState.WRITING
    assert list(StageRun.objects.filter(run=run).values_list("status", flat=True)) == ["running"]
    # once that lease expires without the twin finishing (its worker died), the reconciler resumes the run
    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert runs_reconcile() == [run.pk]
