"""Progress events of stages (start, streamed text, done, failed). In the process that runs a
stage they reach the listeners registered there (``listening``): the ``novel write`` command's
display in eager mode, and ``cache_listener``, which keeps the stage, the characters streamed so
far and the tail of the text in the cache, where the dashboard's progress fragment reads them. For
that to cross from workers to the web processes the cache must be shared (``CACHE_URL``, e.g. a
Redis database); with the default per-process cache a page sees only runs its own process ran."""
from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

Listener = Callable[[dict[str, Any]], None]
_local = threading.local()


def emit(event: dict[str, Any]) -> None:
    for listener in getattr(_local, "listeners", ()):
        listener(event)


@contextmanager
def listening(listener: Listener):
    listeners = getattr(_local, "listeners", [])
    _local.listeners = [*listeners, listener]
    try:
        yield
    finally:
        _local.listeners = listeners


PROGRESS_TTL_SECONDS = 300
TAIL_CHARS = 600  # the end of the text being written, shown as it streams in
WRITE_EVERY_CHARS = 200  # streamed text is written to the cache in steps, not per chunk


def progress_cache_key(project_id: int) -> str:
    return f"novelsite:progress:{project_id}"


def cache_listener(project_id: int) -> Listener:
    """A listener that keeps the project's live progress in the cache (see the module docstring)."""
    from django.core.cache import cache

    key, seen = progress_cache_key(project_id), {"stage": None, "chars": 0, "tail": ""}

    def listener(event: dict[str, Any]) -> None:
        chars = event.get("chars") or 0
        if event["event"] == "text":
            seen["tail"] = (seen["tail"] + (event.get("chunk") or ""))[-TAIL_CHARS:]
        new_stage = event.get("stage") != seen["stage"]
        if new_stage and event["event"] == "start":
            seen["tail"] = ""
        if new_stage or event["event"] != "text" or chars - seen["chars"] >= WRITE_EVERY_CHARS:
            seen.update(stage=event.get("stage"), chars=chars)
            cache.set(key, {"run_id": event.get("run_id"), "stage": event.get("stage"), "chapter": event.get("chapter"),
                            "chars": chars, "event": event["event"], "tail": seen["tail"]}, PROGRESS_TTL_SECONDS)

    return listener
