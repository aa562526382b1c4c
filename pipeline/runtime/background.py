"""Eager mode's stand-in for a worker: the runs a web request starts go on in a background thread
of the web process, so that the request answers at once and the page follows the run's progress.

Without a broker (a laptop, ``make run``) Celery runs tasks eagerly, inside the caller. For the CLI
and the tests that is what they want: ``novel write`` waits and prints each stage. A web request
must not wait for the model (minutes with a real one; a proxy gives up first), so
``RunsInBackgroundMiddleware`` collects the wake-ups its request queues (``pipeline.runtime.queueing``)
and, once the view has answered, hands them to one thread per process (``_Lane``). It runs them
one after another, each stage as the eager queue would in the request (retries, then ``on_failure``:
ERROR_RETRY with the cause), and closes its database connection after each job.

One thread keeps the laptop's SQLite to one writer of stages at a time; runs of other projects
queue behind the one running. The thread is a daemon: stopping the server leaves a run mid-stage,
as a killed worker would (its lease expires; retry it from the dashboard). With a broker, or with
``NOVELSITE_EAGER_IN_BACKGROUND`` off (the tests that drive the pipeline through the web client),
the middleware does nothing.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar

from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)

Job = Callable[[], None]

# The wake-ups queued by the request being served, when they are to run in the background.
_request_jobs: ContextVar[list[Job] | None] = ContextVar("novelsite_request_jobs", default=None)


def request_jobs() -> list[Job] | None:
    """Where a wake-up queued now should go instead of running here: the current request's list
    (run in the background once it has answered), or None (run it in this thread)."""
    return _request_jobs.get()


def background_wanted() -> bool:
    return bool(settings.CELERY_TASK_ALWAYS_EAGER and settings.NOVELSITE_EAGER_IN_BACKGROUND)


class RunsInBackgroundMiddleware:
    """In eager mode, a request's pipeline work runs after the view has answered, in the
    background thread (see the module docstring). Wake-ups queued by a transaction that committed
    are handed on even when the view then fails: the rows they wake are committed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not background_wanted():
            return self.get_response(request)
        jobs: list[Job] = []
        token = _request_jobs.set(jobs)
        try:
            return self.get_response(request)
        finally:
            _request_jobs.reset(token)
            for job in jobs:
                _lane.submit(job)


def _run_job(job: Job) -> None:
    """One job with its own database connection, closed after it. A job records a failed stage
    on its run itself (``queueing._apply_eagerly`` calls the task's ``on_failure``); an error that
    escapes it anyway (a bug, the database gone) is logged, never lost with the thread."""
    try:
        job()
    except Exception:
        log.exception("a background pipeline job failed")
    finally:
        connection.close()


class _Lane:
    """One daemon thread running jobs in order, started when the first job arrives."""

    def __init__(self) -> None:
        self._jobs: deque[Job] = deque()
        self._unfinished = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def submit(self, job: Job) -> None:
        with self._cond:
            self._jobs.append(job)
            self._unfinished += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="novelsite-background-runs", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._jobs))
                job = self._jobs.popleft()
            try:
                _run_job(job)
            finally:
                with self._cond:
                    self._unfinished -= 1
                    self._cond.notify_all()

    def idle_wait(self, timeout: float) -> bool:
        """Wait until every submitted job has finished; False if ``timeout`` seconds passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._unfinished == 0, timeout)


_lane = _Lane()


def _lane_reset_after_fork() -> None:
    global _lane
    _lane = _Lane()  # a forked child (gunicorn's workers) has no thread yet and no jobs of its parent


os.register_at_fork(after_in_child=_lane_reset_after_fork)


def background_idle_wait(timeout: float = 60) -> bool:
    """For tests and shutdown hooks: wait until the background jobs of this process are done."""
    return _lane.idle_wait(timeout)
