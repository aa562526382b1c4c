"""Celery tasks of the pipeline app (``app.autodiscover_tasks()`` imports this module).

``worker_ping_task`` is a deployment probe, not part of the writing pipeline: it proves that a
message sent by the web process crosses the Redis broker and runs in a worker, by leaving a short-
lived marker in Redis that the sender can look for (``tests/test_runtime.py`` uses it; an operator
can too: ``worker_ping_task.delay("hello")`` then ``GET novelsite:worker-ping:hello``).
"""
from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from pipeline.llm.types import LLMTransientError

# What a stage task retries with backoff: a transient LLM error, and a database that went away or
# gave up on a statement (a restart, a failover, a dropped connection, a deadlock). The stage has
# recorded the failure and released its lease by then (pipeline.runtime.runner), so the retry claims
# at once instead of waiting for the lease to expire.
STAGE_RETRYABLE_ERRORS = (LLMTransientError, OperationalError, InterfaceError)

WORKER_PING_KEY_PREFIX = "novelsite:worker-ping:"
WORKER_PING_TTL_SECONDS = 120


def worker_ping_key(token: str) -> str:
    """The Redis key ``worker_ping_task(token)`` writes."""
    return f"{WORKER_PING_KEY_PREFIX}{token}"


@shared_task(ignore_result=True)
def worker_ping_task(token: str) -> None:
    """Write ``token`` to Redis under ``novelsite:worker-ping:<token>`` (expires after 2 minutes)."""
    if not settings.REDIS_URL:
        raise RuntimeError("worker_ping_task needs REDIS_URL: it reports back through Redis.")
    import redis

    with redis.Redis.from_url(settings.REDIS_URL) as client:
        client.set(worker_ping_key(token), token, ex=WORKER_PING_TTL_SECONDS)


def _stage_run_failure(self, exc, task_id, args, kwargs, einfo) -> None:
    from pipeline.runtime.db_connection import connection_drop_if_broken
    from pipeline.runtime.runner import stage_run_failed

    connection_drop_if_broken()
    # ERROR_RETRY, retryable from the UI
    stage_run_failed(run_id=kwargs["run_id"], stage=kwargs.get("stage"), error=exc)


@shared_task(bind=True, acks_late=True, autoretry_for=STAGE_RETRYABLE_ERRORS,
             retry_backoff=settings.NOVELSITE_STAGE_RETRY_BACKOFF,
             retry_backoff_max=600, retry_jitter=True, max_retries=5, on_failure=_stage_run_failure,
             ignore_result=True)
def stage_run_task(self, *, run_id: int, stage: str) -> None:
    """One stage of one run. Ids only: a redelivered message re-reads the current rows, and a stage
    that already advanced makes this a no-op. The backoff stays under NOVELSITE_MAX_RETRY_COUNTDOWN."""
    # Imported here because the stage runner imports the queueing code that sends this task.
    from pipeline.runtime.runner import stage_run

    stage_run(run_id=run_id, stage=stage)


# The database errors a reconciler cycle retries instead of losing the cycle.
DATABASE_ERRORS = (OperationalError, InterfaceError)


@shared_task(ignore_result=True, autoretry_for=DATABASE_ERRORS, retry_backoff=2, retry_backoff_max=30,
             retry_jitter=False, max_retries=5)
def runs_reconcile_task() -> int:
    """Beat, every NOVELSITE_RECONCILE_SECONDS: wake runs whose worker died or whose message was
    lost. A database error (a restart, a connection cut while the worker was idle) is retried on a
    new connection within the minute, so the cycle is not lost."""
    from pipeline.runtime.db_connection import connection_drop_if_broken
    from pipeline.runtime.runs import runs_reconcile

    try:
        return len(runs_reconcile())
    except DATABASE_ERRORS:
        connection_drop_if_broken()  # or the retry would fail again on the dead connection
        raise


@shared_task(acks_late=True, ignore_result=True)
def nightly_batches_task() -> int:
    """Beat, at NOVELSITE_NIGHTLY_AT: start tonight's batch of every project on autopilot. Safe to
    run twice: one batch per project and night."""
    from pipeline.nightly.batches import nightly_batches_start

    return len(nightly_batches_start())


@shared_task(acks_late=True, ignore_result=True, autoretry_for=(OSError,), retry_backoff=60, max_retries=5)
def batch_summary_email_task(*, batch_id: int) -> int:
    """After a nightly batch ends: its morning summary to the members who opted in. SMTP errors
    (``OSError``s) are retried; a batch already mailed is not mailed again."""
    from pipeline.nightly.morning_summary import batch_summary_email_send

    return batch_summary_email_send(batch_id=batch_id)
