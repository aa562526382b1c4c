"""In-process progress events of stages (start, streamed text, done, failed), for the ``novel
write`` command's progress display in eager mode. Workers on a broker do not share a process with
the command, which then follows the runs in the database instead."""
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
