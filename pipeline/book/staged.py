"""What the steps of runs that move the book (the quick start, a volume's planning and its
review, a rewrite, a promotion, a style analysis) keep on the blackboard while they work.

These runs use the chapter pipeline's machinery (``pipeline/runtime/``: claims, leases, one
Celery task per step, stored LLM calls, retries, ERROR_RETRY); their steps are named by the
facts §1 step ids (``quickstart:world``, ``volume:outline``, ``review:audit`` …) and registered
in ``pipeline/runtime/registry.py``.
"""
from __future__ import annotations

from typing import Any

from pipeline.runtime.blackboard import Blackboard


def staged(board: Blackboard, key: str) -> Any:
    return board.as_("skill").read_content("book", key)


def stage_content(board: Blackboard, key: str, value: Any, files: dict[str, Any] | None = None) -> None:
    """Keep a step's output on the blackboard (``content.book.<key>``), and the files the seed
    would stage for it (``content.staged_files``: exported under ``staging/`` while the run is in
    flight, pipeline/steps/staging_export.py)."""
    worker = board.as_("worker")
    worker.write_content("book", key, value)
    for path, text in (files or {}).items():
        worker.write_content("staged_files", path, text)
