"""Helpers for tests that drive the pipeline through a real ``celery worker`` subprocess on the
Redis broker (``tests/test_pipeline_worker.py``): start, ping and SIGKILL workers on a private
queue, clean the broker keys of that queue, build a writable project and poll the database.

Also a pytest plugin (``pytest_plugins`` in tests/conftest.py) for its ``workers`` fixture: the
workers of one test on that test's private queue, killed at its end.

Each worker runs in its own session (``start_new_session=True``), so its pid is the id of a
process group that holds the prefork parent and its pool children: ``os.killpg`` takes them all.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")
LEASE_SECONDS = 3  # the lease of the ``workers`` fixture's workers and of the test process


def worker_database_url() -> str:
    """The URL of the database this test process uses (pytest-django's ``test_<name>``)."""
    from django.db import connection

    s = connection.settings_dict
    auth = ""
    if s.get("USER"):
        auth = quote(s["USER"], safe="")
        if s.get("PASSWORD"):
            auth += ":" + quote(s["PASSWORD"], safe="")
        auth += "@"
    return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


class Worker:
    """One ``celery -A novelsite worker`` (prefork, 2 processes) consuming ``queue`` only."""

    def __init__(self, queue: str, log_dir: Path, *, offline: dict[str, Any] | None = None,
                 lease_seconds: int = 3, retry_backoff: int | None = None, label: str = "w") -> None:
        from django.conf import settings

        self.queue = queue
        self.nodename = f"{label}-{uuid.uuid4().hex[:8]}@{queue}"
        self.log_path = log_dir / f"{self.nodename.split('@')[0]}.log"
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "novelsite.settings", "PYTHONDONTWRITEBYTECODE": "1",
               "DATABASE_URL": worker_database_url(), "REDIS_URL": settings.REDIS_URL,
               "NOVELSITE_LEASE_SECONDS": str(lease_seconds),
               "NOVELSITE_OFFLINE_JSON": json.dumps(offline or {})}
        if retry_backoff is not None:
            env["NOVELSITE_STAGE_RETRY_BACKOFF"] = str(retry_backoff)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "novelsite", "worker", "--pool=prefork", "--concurrency=2",
                 "-Q", queue, "-n", self.nodename, "--without-heartbeat", "--without-gossip", "--without-mingle",
                 "-l", "warning",
                 # Celery's command-line configuration: the stages this worker enqueues itself (the
                 # next stage, the next chapter, a retry) go to the private queue, not to "celery"
                 "--", f"task.default_queue={queue}"],
                cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        self.pid = self.proc.pid  # == its process group id

    def log_tail(self, chars: int = 3000) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return f"--- {self.nodename} (exit {self.proc.poll()}) ---\n{text[-chars:]}"

    def wait_ready(self, timeout: float = 30) -> None:
        """Until the worker answers a ping on its control channel (it then consumes its queue)."""
        from novelsite.celery import app

        deadline = time.monotonic() + timeout
        while True:
            assert self.proc.poll() is None, f"the worker exited at start:\n{self.log_tail()}"
            if app.control.ping(destination=[self.nodename], timeout=0.5):
                return
            assert time.monotonic() < deadline, f"the worker did not come up in {timeout}s:\n{self.log_tail()}"

    def owns(self, pid: int) -> bool:
        """Whether ``pid`` (a pool child, from a lease owner) belongs to this worker."""
        try:
            return os.getpgid(pid) == self.pid
        except ProcessLookupError:
            return False

    def kill(self) -> None:
        """SIGKILL the parent and every pool child at once; no warm shutdown, no message restored."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass
        deadline = time.monotonic() + 3  # the orphaned pool children are reaped by init
        while time.monotonic() < deadline:
            try:
                os.killpg(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def lease_pid(lease_owner: str) -> int:
    """``host:pid:token`` (pipeline.runtime.claims.new_lease_owner) → pid."""
    return int(lease_owner.rsplit(":", 2)[1])


def broker_queue_clean(client, queue: str, nodenames: list[str] = ()) -> None:
    """Delete the Redis keys of ``queue`` (its lists, priority lists and bindings) and forget the
    messages killed workers left unacknowledged (they would come back after the visibility
    timeout, into a queue nobody consumes). Best effort: the broker is shared."""
    keys = [*client.scan_iter(match=f"{queue}*", count=500), f"_kombu.binding.{queue}",
            f"_kombu.binding_permanent.{queue}"]
    for node in nodenames:
        keys += list(client.scan_iter(match=f"{node}.celery.pidbox*", count=500))
    if keys:
        client.delete(*keys)
    client.zrem("_kombu.binding_deadlines", queue)
    for member in client.smembers("_kombu.binding.celery.pidbox"):
        if any(node.encode() in member for node in nodenames):
            client.srem("_kombu.binding.celery.pidbox", member)
    for tag, _message in list(_unacked_of(client, queue)):
        client.hdel("unacked", tag)
        client.zrem("unacked_index", tag)


def _unacked_of(client, queue: str):
    """(tag, message) of the messages of ``queue`` delivered to a worker and not acknowledged yet
    (kombu's Redis transport keeps them in the ``unacked`` hash until the ack)."""
    for tag, payload in client.hscan_iter("unacked", count=500):
        try:
            message, exchange, routing_key = json.loads(payload)
        except (ValueError, TypeError):
            continue
        if queue in (exchange, routing_key):
            yield tag, message


def broker_unacked_count(client, queue: str) -> int:
    return sum(1 for _ in _unacked_of(client, queue))


def broker_redeliver_unacked(client, queue: str) -> int:
    """What the broker does once the visibility timeout has passed (kombu's ``restore_visible``):
    put the unacknowledged messages back on the queue, marked redelivered. Only safe when the
    workers that held them are dead. Returns how many came back."""
    restored = 0
    for tag, message in list(_unacked_of(client, queue)):
        message.setdefault("headers", {})["redelivered"] = True
        message.setdefault("properties", {}).setdefault("delivery_info", {})["redelivered"] = True
        with client.pipeline() as pipe:
            pipe.rpush(queue, json.dumps(message))
            pipe.hdel("unacked", tag)
            pipe.zrem("unacked_index", tag)
            pipe.execute()
        restored += 1
    return restored


def wait_for(predicate: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05,
             every: Callable[[], None] | None = None, every_seconds: float = 0.5,
             diagnostics: Callable[[], str] = lambda: "") -> T:
    """Poll ``predicate`` until it returns something truthy; call ``every`` (e.g. the reconciler)
    every ``every_seconds`` meanwhile."""
    deadline = time.monotonic() + timeout
    next_every = time.monotonic()
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        if now > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{diagnostics()}")
        if every is not None and now >= next_every:
            every()
            next_every = now + every_seconds
        time.sleep(interval)


def writable_project(chapters: int, *, slug: str = "demo"):
    """The sample novel (WRITING, volume 1 planned) with contracts for chapters 1..``chapters``,
    made the way a planner's are: through ``story_object_create``, in the sample's shape."""
    from projects.models import ChapterContract, Volume
    from projects.sample_project import _contract, sample_project_create
    from projects.services.editing import story_object_create

    project = sample_project_create(slug=slug)
    volume = Volume.objects.get(project=project, number=1)
    have = set(project.chapter_contracts.values_list("chapter", flat=True))
    for number in range(1, chapters + 1):
        if number not in have:
            story_object_create(instance=ChapterContract(project=project, volume=volume, chapter=number,
                                                         data=_contract(number, f"第{number}章")), editor=None)
    return project


def pipeline_snapshot(project) -> str:
    """A readable dump of the project's runs and stage attempts, for failure messages."""
    from pipeline.models import PipelineRun, StageRun
    from projects.models import Chapter, Project

    p = Project.objects.get(pk=project.pk)
    lines = [f"project {p.slug}: {p.orchestrator_state} stage={p.pipeline_stage} inflight={p.inflight_chapter} "
             f"last_completed={p.last_completed_chapter} chapters="
             f"{list(Chapter.objects.filter(project=p).values_list('number', flat=True))}"]
    for run in PipelineRun.objects.filter(project=p).order_by("pk"):
        lines.append(f"  run {run.pk} ch{run.chapter} {run.status}/{run.stage} attempt={run.attempt} "
                     f"lease={run.lease_owner!r}@{run.lease_expires_at} error={run.error[:200]!r}")
        for sr in StageRun.objects.filter(run=run).order_by("pk"):
            lines.append(f"    {sr.stage} #{sr.attempt} {sr.status} {sr.error[:120]!r}")
    return "\n".join(lines)


class Workers:
    """Workers on one private queue, and the broker and database views the tests need."""

    def __init__(self, tmp_path) -> None:
        import redis
        from django.conf import settings

        self.queue = f"novelsite-test-pipeline-{uuid.uuid4().hex[:12]}"
        self.tmp_path = tmp_path
        self.redis = redis.Redis.from_url(settings.REDIS_URL)
        self.started: list[Worker] = []

    def start(self, **options) -> Worker:
        options.setdefault("lease_seconds", LEASE_SECONDS)
        worker = Worker(self.queue, self.tmp_path, label=f"w{len(self.started)}", **options)
        self.started.append(worker)
        worker.wait_ready()
        return worker

    def logs(self) -> str:
        return "\n".join(worker.log_tail(1500) for worker in self.started)

    def diagnostics(self, project) -> Callable[[], str]:
        return lambda: f"{pipeline_snapshot(project)}\nqueue length {self.redis.llen(self.queue)}\n{self.logs()}"

    def close(self) -> None:
        for worker in self.started:
            worker.kill()
        broker_queue_clean(self.redis, self.queue, [w.nodename for w in self.started])
        self.redis.close()


@pytest.fixture
def workers(settings, tmp_path):
    from novelsite.celery import app

    assert app.conf.task_always_eager is False, "REDIS_URL is set: tasks must go to the broker"
    settings.NOVELSITE_LEASE_SECONDS = LEASE_SECONDS  # runs_reconcile in this process uses it too
    pool = Workers(tmp_path)
    default_queue = app.conf.task_default_queue
    try:
        broker_queue_clean(pool.redis, pool.queue)
        app.conf.task_default_queue = pool.queue  # the router reads it at every send
        yield pool
    finally:
        app.conf.task_default_queue = default_queue
        pool.close()
