"""The chapter pipeline on the real runtime: PostgreSQL, the Redis broker and ``celery worker``
subprocesses (DESIGN §4, "Locking and recovery").

Every test gets a private queue: the test process sends there (``app.conf.task_default_queue``)
and its workers consume and send there (``-- task.default_queue=<queue>`` on their command line), so
another worker on the same Redis never takes a message. Workers run with a 3 s lease
(``NOVELSITE_LEASE_SECONDS``, the test process too) so a killed worker's stage is recovered in
seconds by ``runs_reconcile`` — the recovery path, since the broker would only redeliver the killed
worker's unacknowledged message after its 2 h visibility timeout.

1. A 10-chapter batch through a worker commits 10 chapters, 10 state versions and changelog rows.
2. SIGKILL of the worker (parent and pool children) in the middle of each stage kind still ends
   with every chapter committed exactly once; later duplicate deliveries change nothing.
   A stage longer than its lease keeps it through the worker's heartbeat; SIGKILLed, it resumes
   on a standby worker within the lease plus the reconciler's period.
3. Two concurrent starts of one project: one run, one ``PipelineBusy``, never two in flight.
4. LLM faults: at 20% a batch still completes through Celery's retries; at 100% the run stops in
   ERROR_RETRY with nothing committed, and a retry (once the fault is gone) commits it once.
5. PostgreSQL cuts the workers' connections during an LLM call and inside a commit: the batch
   completes through the tasks' retries, without the reconciler and long before the lease expires.
"""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.utils import timezone

from pipeline.runtime.blackboard import Blackboard
from pipeline.errors import PipelineBusy
from pipeline.models import ACTIVE_RUN_STATUSES, LLMCall, PipelineRun, RunKind, RunStatus, StageRun
from pipeline.runtime.runs import chapter_run_start, run_retry, runs_reconcile
from projects.models import (
    Chapter,
    ChapterSummary,
    OrchestratorState,
    PipelineStage,
    Project,
    StateChange,
    StoryState,
)
from projects.state_ops import replay
from tests.worker_harness import (
    broker_redeliver_unacked,
    broker_unacked_count,
    lease_pid,
    wait_for,
    writable_project,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

STAGES = ["draft", "summarize", "refine", "judge", "commit", "maintain"]
LLM_LATENCY_MS = 1500  # long enough to see a stage running and kill it in the middle
SLOW_FINISH_SECONDS = 1.5  # commit and maintain make no LLM call: their final transaction is slowed instead


def assert_committed_once(project: Project, chapters: int) -> None:
    """Chapters 1..N exist once each, the state moved one version per chapter and equals the replay
    of its changelog, no run is still moving, and no LLM call was stored twice."""
    numbers = list(Chapter.objects.filter(project=project).order_by("number").values_list("number", flat=True))
    assert numbers == list(range(1, chapters + 1))
    assert Chapter.objects.filter(project=project).count() == chapters
    assert ChapterSummary.objects.filter(project=project).count() == chapters

    changes = list(StateChange.objects.filter(project=project).order_by("state_version"))
    assert len(changes) == chapters + 1  # the sample's initial delta, then one per chapter
    assert [c.state_version for c in changes] == list(range(1, chapters + 2))
    assert all(c.base_state_version == c.state_version - 1 for c in changes)
    assert [c.chapter for c in changes[1:]] == list(range(1, chapters + 1))
    assert {c.source for c in changes[1:]} == {"pipeline"}
    state = StoryState.objects.get(project=project)
    assert state.state_version == chapters + 1
    assert replay([c.delta for c in changes]) == state.data

    project = Project.objects.get(pk=project.pk)
    assert project.last_completed_chapter == chapters
    assert project.inflight_chapter is None
    assert project.pipeline_stage == PipelineStage.COMMITTED
    assert project.orchestrator_state == OrchestratorState.WRITING

    runs = PipelineRun.objects.filter(project=project, kind=RunKind.CHAPTER).order_by("pk")
    assert [(r.chapter, r.status) for r in runs] == [(n, RunStatus.DONE) for n in range(1, chapters + 1)]
    assert not PipelineRun.objects.filter(project=project, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).exists()
    keys = list(LLMCall.objects.filter(run__project=project).values_list("call_key", flat=True))
    assert keys and len(keys) == len(set(keys))


def batch_done(project: Project, chapters: int):
    def done() -> bool:
        return (Chapter.objects.filter(project=project).count() >= chapters
                and not PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES).exists())
    return done


# --- 1. a batch through a real worker -----------------------------------------------------------


def test_ten_chapter_batch_commits_through_a_real_worker(workers):
    project = writable_project(10)
    worker = workers.start()
    started = time.monotonic()
    first = chapter_run_start(project_id=project.pk, batch_remaining=9)
    assert first.chapter == 1 and first.status == RunStatus.QUEUED

    wait_for(batch_done(project, 10), timeout=120, what="10 chapters committed by the worker",
             diagnostics=workers.diagnostics(project))
    elapsed = time.monotonic() - started

    assert_committed_once(project, 10)
    assert StoryState.objects.get(project=project).state_version == 1 + 10
    assert StateChange.objects.filter(project=project, source="pipeline").count() == 10
    # every chapter went through every stage (in the worker: this process only sends to the broker)
    for run in PipelineRun.objects.filter(project=project):
        succeeded = set(StageRun.objects.filter(run=run, status="succeeded").values_list("stage", flat=True))
        # maintenance only where it has work: style drift at 5 and 10, the archive at 10
        expected = set(STAGES) if run.chapter % 5 == 0 else set(STAGES) - {"maintain"}
        assert succeeded == expected, (run.chapter, succeeded)
    assert worker.proc.poll() is None, worker.log_tail()
    print(f"\n10 chapters in {elapsed:.1f}s")


# --- 2. SIGKILL in the middle of every stage kind ---------------------------------------------------

SLOW_FINISH_SQL = """
CREATE OR REPLACE FUNCTION novelsite_test_slow_finish() RETURNS trigger AS $$
BEGIN
    PERFORM pg_sleep({seconds});
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS novelsite_test_slow_finish ON {table};
CREATE TRIGGER novelsite_test_slow_finish BEFORE UPDATE ON {table} FOR EACH ROW
    WHEN (NEW.stage IN ('commit', 'maintain') AND NEW.status = 'succeeded' AND OLD.status <> 'succeeded')
    EXECUTE FUNCTION novelsite_test_slow_finish();
"""


def slow_finish(on: bool) -> None:
    """commit and maintain make no LLM call; to kill them in the middle, the UPDATE that marks their
    StageRun succeeded (inside the stage's final transaction: after the chapter rows for commit,
    before the run advances) sleeps in PostgreSQL. A kill then leaves that transaction open, and
    PostgreSQL rolls it back when it sees the connection gone."""
    table = connection.ops.quote_name(StageRun._meta.db_table)
    with connection.cursor() as cursor:
        if on:
            cursor.execute(SLOW_FINISH_SQL.format(seconds=SLOW_FINISH_SECONDS, table=table))
        else:
            cursor.execute(f"DROP TRIGGER IF EXISTS novelsite_test_slow_finish ON {table}; "
                           "DROP FUNCTION IF EXISTS novelsite_test_slow_finish();")


def stage_finishing_in_database() -> bool:
    """A worker's connection is inside the slowed final transaction of commit or maintain."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() AND wait_event = 'PgSleep' AND state = 'active'")
        return cursor.fetchone()[0] > 0


def running_at(project: Project, stage: str) -> PipelineRun | None:
    """The run a worker is in the middle of ``stage`` of. The commit claims and commits in one
    transaction, so its claim is not visible from here: the run is still QUEUED at commit while a
    worker sits inside that transaction."""
    if stage == "commit":
        run = PipelineRun.objects.filter(project=project, stage=stage, status=RunStatus.QUEUED).order_by("-pk").first()
    else:
        run = PipelineRun.objects.filter(project=project, stage=stage, status=RunStatus.RUNNING).exclude(
            lease_owner="").order_by("-pk").first()
    if run is None or (stage in ("commit", "maintain") and not stage_finishing_in_database()):
        return None
    return run


@pytest.fixture
def slow_commit_and_maintain():
    """Requested before ``workers``, so it is dropped after they are killed."""
    slow_finish(True)
    try:
        yield
    finally:
        slow_finish(False)


def test_worker_killed_in_every_stage_kind_still_commits_each_chapter_once(slow_commit_and_maintain, workers):
    chapters = 5  # maintenance runs when it has work: style drift at chapter 5
    project = writable_project(chapters)
    offline = {"latency_ms": LLM_LATENCY_MS}
    diagnostics = workers.diagnostics(project)
    worker = workers.start(offline=offline)
    started = time.monotonic()
    chapter_run_start(project_id=project.pk, batch_remaining=chapters - 1)

    kills = []
    for index, stage in enumerate(STAGES):
        # the reconciler runs all along, as beat would: it re-enqueues the killed worker's stage
        # once its lease has expired (and, harmlessly, any run queued for a while)
        run = wait_for(lambda: running_at(project, stage), timeout=60, what=f"a run in {stage}",
                       every=runs_reconcile, diagnostics=diagnostics)
        owner = run.lease_owner
        if stage != "commit":
            assert worker.owns(lease_pid(owner)), f"{owner} is not a process of {worker.nodename}"
        committed_before = Chapter.objects.filter(project=project).count()
        state_before = StoryState.objects.get(project=project).state_version
        worker.kill()

        # killed in the middle: the stage did not finish, its lease is the dead worker's (the
        # commit's claim was rolled back with the rest of its transaction: the run waits, queued)
        run.refresh_from_db()
        if stage == "commit":
            assert (run.stage, run.status, run.lease_owner) == (stage, RunStatus.QUEUED, "")
        else:
            assert (run.stage, run.status, run.lease_owner) == (stage, RunStatus.RUNNING, owner)
        assert Chapter.objects.filter(project=project).count() == committed_before
        assert StoryState.objects.get(project=project).state_version == state_before
        if stage == "commit":
            assert not Chapter.objects.filter(project=project, number=run.chapter).exists()
        kills.append((run.chapter, stage))

        last = index == len(STAGES) - 1
        if last:
            slow_finish(False)
        worker = workers.start(offline={} if last else offline)  # a fresh worker; the old one's message is lost

    wait_for(batch_done(project, chapters), timeout=90, what="the batch to complete after the kills",
             every=runs_reconcile, diagnostics=diagnostics)
    elapsed = time.monotonic() - started
    assert [stage for _chapter, stage in kills] == STAGES
    assert_committed_once(project, chapters)
    # every killed stage was claimed again and then succeeded (on the same chapter); the killed
    # commit left no trace at all, its stage run included
    for chapter, stage in kills:
        attempts = StageRun.objects.filter(run__project=project, run__chapter=chapter, stage=stage)
        assert attempts.filter(status="succeeded").exists(), (chapter, stage)
        assert attempts.count() >= (1 if stage == "commit" else 2), (chapter, stage)

    # The killed workers' messages were never redelivered (the reconciler did the recovery): they
    # are still unacknowledged. Deliver them now, as the broker will after its visibility timeout,
    # with a duplicate of every stage of every run on top (a second reconciler, a resent wake-up):
    # each finds its stage moved on and changes nothing.
    from pipeline.tasks import stage_run_task

    counts = (StageRun.objects.filter(run__project=project).count(), LLMCall.objects.count())
    redelivered = broker_redeliver_unacked(workers.redis, workers.queue)
    assert redelivered >= len(kills)
    for run in PipelineRun.objects.filter(project=project):
        for stage in STAGES:
            stage_run_task.apply_async(kwargs={"run_id": run.pk, "stage": stage})
    wait_for(lambda: workers.redis.llen(workers.queue) == 0
             and broker_unacked_count(workers.redis, workers.queue) == 0,
             timeout=30, what="the duplicates to be consumed and acknowledged", diagnostics=diagnostics)
    assert (StageRun.objects.filter(run__project=project).count(), LLMCall.objects.count()) == counts
    assert_committed_once(project, chapters)
    print(f"\n{len(kills)} kills, {chapters} chapters in {elapsed:.1f}s; {redelivered} lost messages redelivered")


def test_a_live_stage_keeps_its_lease_and_a_killed_ones_resumes_within_lease_plus_reconcile_period(settings,
                                                                                                     workers):
    """Production's numbers scaled down: a 2 s lease (renewed by the worker's heartbeat) and the
    reconciler every second. A draft of 15 s is never taken over while its worker
    lives; once the worker is SIGKILLed, a standby worker resumes it within lease + period."""
    lease, period, slack = 2, 1.0, 1.5
    settings.NOVELSITE_LEASE_SECONDS = lease
    project = writable_project(1)
    diagnostics = workers.diagnostics(project)
    worker = workers.start(offline={"latency_ms": 15_000}, lease_seconds=lease)
    run = chapter_run_start(project_id=project.pk)
    drafting = wait_for(lambda: running_at(project, "draft"), timeout=60, what="the draft running",
                        diagnostics=diagnostics)
    owner = drafting.lease_owner
    workers.start(lease_seconds=lease)  # a standby, idle: the queue is empty while the draft runs

    # alive: three lease lengths pass with the reconciler running, and nobody takes the stage over
    _reconcile_for(3 * lease, period)
    drafting.refresh_from_db()
    assert (drafting.stage, drafting.status, drafting.lease_owner) == ("draft", RunStatus.RUNNING, owner)
    assert drafting.lease_expires_at > timezone.now()  # renewed all along
    assert list(StageRun.objects.filter(run=run).values_list("status", flat=True)) == ["running"]

    killed_at = timezone.now()
    worker.kill()
    resumed = wait_for(lambda: StageRun.objects.filter(run=run, stage="draft", started_at__gt=killed_at).first(),
                       timeout=30, what="the killed draft resumed", every=runs_reconcile, every_seconds=period,
                       diagnostics=diagnostics)
    waited = (resumed.started_at - killed_at).total_seconds()
    assert waited <= lease + period + slack, f"resumed {waited:.1f}s after the kill"
    assert resumed.attempt == 1  # the same attempt, resumed: its stored LLM calls are reused
    wait_for(batch_done(project, 1), timeout=60, what="the chapter committed", every=runs_reconcile,
             every_seconds=period, diagnostics=diagnostics)
    assert_committed_once(project, 1)
    print(f"\nthe killed draft resumed {waited:.1f}s after the kill (lease {lease}s, reconciler every {period}s)")


def _reconcile_for(seconds: float, period: float) -> None:
    """Run the reconciler every ``period`` seconds for ``seconds``, as beat would."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        runs_reconcile()
        time.sleep(period)


# --- 3. concurrent starts ------------------------------------------------------------------------


def test_concurrent_starts_never_put_two_chapters_in_flight(workers):
    rounds = 3
    project = writable_project(rounds)
    diagnostics = workers.diagnostics(project)
    workers.start(offline={"latency_ms": 300})  # a chapter takes seconds: the loser sees it in flight

    for round_ in range(1, rounds + 1):
        barrier = threading.Barrier(2)
        outcomes: list[tuple[str, object]] = []

        def start() -> None:
            try:
                barrier.wait(timeout=10)
                run = chapter_run_start(project_id=project.pk)
                outcomes.append(("started", run.chapter))
            except PipelineBusy as exc:
                outcomes.append(("busy", exc.extra.get("run_id")))
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                outcomes.append(("error", repr(exc)))
            finally:
                connection.close()

        threads = [threading.Thread(target=start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(kind for kind, _ in outcomes) == ["busy", "started"], outcomes
        assert ("started", round_) in outcomes
        active = list(PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES))
        assert [r.chapter for r in active] == [round_]
        assert dict(outcomes)["busy"] == active[0].pk  # the loser was told which run holds the project

        # while the worker writes it, a third start is refused too, and at no moment are two runs active
        with pytest.raises(PipelineBusy):
            chapter_run_start(project_id=project.pk)

        def finished() -> bool:
            assert PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES).count() <= 1
            return Chapter.objects.filter(project=project, number=round_).exists() and not \
                PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES).exists()

        wait_for(finished, timeout=60, what=f"chapter {round_} committed", diagnostics=diagnostics)

    assert_committed_once(project, rounds)
    runs = list(PipelineRun.objects.filter(project=project).order_by("created_at"))
    for earlier, later in zip(runs, runs[1:]):
        assert earlier.finished_at is not None and earlier.finished_at <= later.created_at


# --- 4. LLM faults ---------------------------------------------------------------------------------


def test_batch_completes_through_retries_at_a_20_percent_fault_rate(workers):
    chapters = 3
    project = writable_project(chapters)
    workers.start(offline={"faults": {"*": {"kind": "overloaded", "rate": 0.2}}}, retry_backoff=1)
    chapter_run_start(project_id=project.pk, batch_remaining=chapters - 1)

    wait_for(batch_done(project, chapters), timeout=120, what="the batch to complete through retries",
             diagnostics=workers.diagnostics(project))
    assert_committed_once(project, chapters)
    failed = StageRun.objects.filter(run__project=project, status="failed")
    assert failed.exists(), "no fault fired: the test proves nothing"
    assert all("Overloaded" in error for error in failed.values_list("error", flat=True))
    # each failure was recorded in the run's control zone and the retry got a fresh attempt
    retried = sum(sum((Blackboard(r.blackboard).as_("orchestrator").read_control("retries") or {}).values())
                  for r in PipelineRun.objects.filter(project=project))
    assert retried == failed.count()


def test_retries_spent_stop_the_run_in_error_retry_with_nothing_committed(workers):
    project = writable_project(1)
    diagnostics = workers.diagnostics(project)
    worker = workers.start(offline={"faults": {"judge": {"kind": "overloaded", "rate": 1.0}}}, retry_backoff=1)
    run = chapter_run_start(project_id=project.pk)

    wait_for(lambda: PipelineRun.objects.filter(pk=run.pk, status=RunStatus.ERROR).exists(), timeout=90,
             what="the run to stop in ERROR once its retries are spent", diagnostics=diagnostics)
    run.refresh_from_db()
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.ERROR_RETRY
    assert run.stage == "judge" and "Overloaded" in run.error
    assert StageRun.objects.filter(run=run, stage="judge", status="failed").count() == 1 + 5  # max_retries=5
    control = Blackboard(run.blackboard).as_("orchestrator").read_control("error_retry")
    assert control["stage"] == "judge"
    # the draft, summary and refinement are staged on the run; nothing reached the story
    assert Blackboard(run.blackboard).as_("skill").read_content("chapter", "draft")
    assert not Chapter.objects.filter(project=project).exists()
    assert not ChapterSummary.objects.filter(project=project).exists()
    assert StoryState.objects.get(project=project).state_version == 1
    assert StateChange.objects.filter(project=project).count() == 1
    assert project.last_completed_chapter == 0
    with pytest.raises(PipelineBusy):  # ERROR holds the project until someone retries or cancels
        chapter_run_start(project_id=project.pk)

    # once the fault is gone (a worker without it), a retry resumes at judge and commits once
    worker.kill()
    workers.start()
    run_retry(run_id=run.pk)
    wait_for(batch_done(project, 1), timeout=60, what="the retried run to commit", diagnostics=diagnostics)
    assert_committed_once(project, 1)


# --- 5. the database drops the workers' connections --------------------------------------------


def worker_connections_terminate() -> int:
    """What a PostgreSQL restart, a failover or a proxy's idle timeout does to a worker: every
    other session on the test database is cut off (pg_terminate_backend)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
                       "current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
        return cursor.fetchone()[0]


def test_connections_cut_mid_stage_cost_no_lease_wait_and_no_second_llm_call(slow_commit_and_maintain, settings,
                                                                               workers):
    """The draft's connection is cut while it waits for the LLM: the answer is stored on a new
    connection and the stage goes on. The commit's is cut inside its one transaction: it rolls back
    whole and the task's retry commits the chapter. No reconciler runs, and the lease outlives the
    test: only the retry can have recovered."""
    chapters = 2
    settings.NOVELSITE_LEASE_SECONDS = 3600
    project = writable_project(chapters)
    diagnostics = workers.diagnostics(project)
    workers.start(offline={"latency_ms": LLM_LATENCY_MS}, retry_backoff=1, lease_seconds=3600)
    chapter_run_start(project_id=project.pk, batch_remaining=chapters - 1)

    drafting = wait_for(lambda: running_at(project, "draft"), timeout=60, what="a run in draft",
                        diagnostics=diagnostics)
    time.sleep(0.3)  # past the draft's context reads (tens of ms), into its 1.5 s LLM call
    draft_cut_at = timezone.now()
    assert worker_connections_terminate() >= 1
    committing = wait_for(lambda: running_at(project, "commit"), timeout=60, what="a run inside its commit",
                          diagnostics=diagnostics)
    commit_cut_at = timezone.now()
    assert worker_connections_terminate() >= 1
    slow_finish(False)

    wait_for(batch_done(project, chapters), timeout=60, what="the batch to complete through the retries",
             diagnostics=diagnostics)
    assert_committed_once(project, chapters)
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.WRITING
    # the draft went on through the cut and was not paid twice: one stored call. (Should the cut
    # have come before the call, during the stage's reads on a slow machine, the attempt was
    # interrupted, recorded and resumed by the retry: the same one call.)
    drafts = list(StageRun.objects.filter(run=drafting, stage="draft").order_by("pk"))
    assert LLMCall.objects.filter(run=drafting, call_key__contains=":draft:").count() == 1
    if len(drafts) == 1:
        assert (drafts[0].status, drafts[0].attempt) == ("succeeded", 1)
        assert drafts[0].started_at < draft_cut_at < drafts[0].finished_at
    else:
        assert [(d.status, d.attempt) for d in drafts] == [("abandoned", 1), ("succeeded", 1)]
        assert drafts[0].error.startswith(("OperationalError", "InterfaceError")), drafts[0].error
    # the cut commit left nothing behind (its claim rolled back with it): the one that succeeded is
    # the retry's, claimed after the cut
    commit = StageRun.objects.get(run=committing, stage="commit")
    assert commit.status == "succeeded" and commit.started_at > commit_cut_at
