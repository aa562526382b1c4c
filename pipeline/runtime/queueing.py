"""Waking the next stage up once the current transaction commits.

With a broker, that is ``stage_run_task.delay`` from ``transaction.on_commit``. In eager mode (no
broker: a laptop, the demo) a task queued from inside a task would run inside it, and a batch of
chapters would nest deeper with every stage; instead, eager wake-ups go on a per-thread queue
drained by a loop in the outermost caller, one stage after another, each retried and failed as a
worker would (``_apply_eagerly``). A web request does not run that loop itself: it leaves the
wake-up to the background thread of its process (``pipeline.runtime.background``), so that it answers
at once while the stages go on.
"""
from __future__ import annotations

import threading
from collections import deque
from functools import partial

from django.conf import settings
from django.db import transaction

from pipeline.runtime.background import request_jobs

_local = threading.local()


STAGE_TASK = "pipeline.tasks.stage_run_task"


def task_named(name: str):
    """A Celery task, found by its name in the app's registry (``pipeline/apps.py`` imports the
    tasks at start-up). The tasks are the top of the pipeline: they import the runtime in their
    bodies, and the runtime finds them by name instead of importing them back."""
    from novelsite.celery import app

    return app.tasks[name]


def enqueue_stage(run_id: int, stage: str) -> None:
    transaction.on_commit(lambda: _send(run_id, stage))


def _send(run_id: int, stage: str) -> None:
    stage_run_task = task_named(STAGE_TASK)
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        stage_run_task.apply_async(kwargs={"run_id": run_id, "stage": stage})
        return
    if (jobs := request_jobs()) is not None:  # a web request: the stages run once it has answered
        jobs.append(partial(_drain, run_id, stage))
        return
    _drain(run_id, stage)


def _drain(run_id: int, stage: str) -> None:
    """Run the stage, and the stages it wakes, one after another in this thread (see the module
    docstring); a stage woken from inside the loop joins its queue."""
    if not hasattr(_local, "pending"):  # (an empty deque is falsy: never "or" it)
        _local.pending = deque()
    pending: deque = _local.pending
    pending.append((run_id, stage))
    if getattr(_local, "draining", False):
        return  # the loop below, further up this thread's stack, will run it
    _local.draining = True
    try:
        while pending:
            queued_run, queued_stage = pending.popleft()
            _apply_eagerly(task_named(STAGE_TASK), {"run_id": queued_run, "stage": queued_stage})
    finally:
        _local.draining = False
        pending.clear()


def _apply_eagerly(task, kwargs: dict) -> None:
    """Run a task the way a worker would, without the wait: retried at once on the errors it
    declares (up to its ``max_retries``), then its ``on_failure`` (ERROR_RETRY) when it gives up.

    Celery's eager ``apply`` cannot do this while ``task_eager_propagates`` is on (the setting):
    it raises the first ``Retry`` to the caller and never calls ``on_failure``. So each try is
    its own propagating ``apply`` and this loop does the rest. An LLM error ends here, recorded on
    the run, as on a worker; any other error (a bug) is recorded, then raised to the caller.
    """
    from celery.exceptions import Retry

    from pipeline.llm.types import LLMError

    retries = 0
    while True:
        try:
            task.apply(kwargs=kwargs, retries=retries, throw=True)
            return
        except Retry:
            retries += 1  # a worker would wait for the backoff countdown first
        except Exception as exc:  # retries spent (the task re-raises the cause), or not retryable
            task.on_failure(exc, None, (), kwargs, None)
            if not isinstance(exc, LLMError):
                raise
            return
