"""Waking the next stage up once the current transaction commits.

With a broker, that is ``stage_run_task.delay`` from ``transaction.on_commit``. In eager mode (no
broker: a laptop, the demo) a task queued from inside a task would run inside it, and a batch of
chapters would nest deeper with every stage; instead, eager wake-ups go on a per-thread queue
drained by a loop in the outermost caller, one stage after another.
"""
from __future__ import annotations

import threading
from collections import deque

from django.conf import settings
from django.db import transaction

_local = threading.local()


def enqueue_stage(run_id: int, stage: str) -> None:
    transaction.on_commit(lambda: _send(run_id, stage))


def _send(run_id: int, stage: str) -> None:
    from pipeline.tasks import stage_run_task

    if not settings.CELERY_TASK_ALWAYS_EAGER:
        stage_run_task.apply_async(kwargs={"run_id": run_id, "stage": stage})
        return
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
            stage_run_task.apply(kwargs={"run_id": queued_run, "stage": queued_stage}, throw=True)
    finally:
        _local.draining = False
        pending.clear()
