"""Celery tasks of the pipeline app (``app.autodiscover_tasks()`` imports this module).

``worker_ping_task`` is a deployment probe, not part of the writing pipeline: it proves that a
message sent by the web process crosses the Redis broker and runs in a worker, by leaving a short-
lived marker in Redis that the sender can look for (``tests/test_runtime.py`` uses it; an operator
can too: ``worker_ping_task.delay("hello")`` then ``GET novelsite:worker-ping:hello``).
"""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

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
