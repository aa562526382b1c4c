"""What a stage is, for the runtime: one shape for every step of every kind of run.

A stage's ``execute(claim, subject, board, *, on_text)`` does the work with no lock held (the LLM
call) and returns a ``StageOutcome``; ``subject`` is the chapter's story context for a chapter
stage (``reads=CHAPTER``) and the project row for every other step. Its ``finish(claim=, outcome=)``
then writes the outcome in its own short durable transaction; the default,
``claims.stage_complete``, advances the run, and a step that writes story data brings its own
(re-lock, check the lease, write, advance: ``claims.finish_locked``). A stage with no model call
to wait for (the chapter's commit) is ``in_one_transaction(run_id=, owner=)`` instead: it claims,
works and finishes in one transaction, so no lease outlives it.

The registry (``pipeline/runtime/registry.py``) maps (run kind, stage name) to these.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROJECT = "project"  # execute gets the project row
CHAPTER = "chapter"  # execute gets the chapter's ChapterContext (read by the draft, restored after)


@dataclass(frozen=True)
class Stage:
    execute: Callable[..., Any] | None = None
    finish: Callable[..., Any] | None = None  # None: claims.stage_complete
    reads: str = PROJECT
    in_one_transaction: Callable[..., Any] | None = None  # claims and finishes at once: (claim, result) | None

    def __post_init__(self) -> None:
        if (self.execute is None) == (self.in_one_transaction is None):
            raise ValueError("a stage either executes with no lock held or runs in one transaction")
        if self.reads not in (PROJECT, CHAPTER):
            raise ValueError(f"a stage reads {PROJECT!r} or {CHAPTER!r}, not {self.reads!r}")
