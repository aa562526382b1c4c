"""Runs that move the book rather than one chapter: the quick start, a volume's planning and its
review. They use the chapter pipeline's machinery (claims, leases, one Celery task per step,
stored LLM calls, retries, ERROR_RETRY); their steps are named by the facts §1 step ids
(``quickstart:world``, ``volume:outline``, ``review:audit`` …).

A step module offers ``execute(claim, project, board, on_text) -> StageOutcome`` (the work, no
lock held) and, where the step writes story data, ``finish(claim=, outcome=)``: its own short
durable transaction that re-locks, checks the lease, writes and advances (like the chapter commit).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.blackboard import Blackboard
from pipeline.errors import PipelineBusy
from pipeline.models import ACTIVE_RUN_STATUSES, SIDE_RUN_KINDS, PipelineRun, RunStatus
from pipeline.runtime.queueing import enqueue_stage
from pipeline.runtime.claims import Claim, StageOutcome, _holding, apply_outcome
from projects.models import Project


@dataclass(frozen=True)
class Step:
    execute: Callable[..., StageOutcome]
    finish: Callable[..., Any] | None = None  # default: stage_claims.stage_complete


def active_run(project: Project) -> PipelineRun | None:
    return (PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES)
            .exclude(kind__in=SIDE_RUN_KINDS).first())


def book_run_create(project: Project, *, kind: str, steps: list[str], meta: dict[str, Any], user=None,
                    status: str = RunStatus.QUEUED, volume: int | None = None) -> PipelineRun:
    """A new run at its first step; the caller holds the project lock. Queued runs are woken
    after commit; a run created WAITING stops at a question the caller opens."""
    if (busy := active_run(project)) is not None:
        raise PipelineBusy(f"{project.slug} is busy: {busy}", extra={"run_id": busy.pk})
    board = Blackboard()
    board.as_("orchestrator").initialise(meta={"kind": kind, **meta}, steps=steps)
    run = PipelineRun.objects.create(project=project, kind=kind, status=status, stage=steps[0],
                                     volume_number=volume, blackboard=board.to_dict(), created_by=user)
    if status == RunStatus.QUEUED:
        enqueue_stage(run.pk, steps[0])
    return run


def run_resume_at(run: PipelineRun, stage: str, board: Blackboard | None = None) -> None:
    """Send a waiting run on to ``stage`` (the caller holds the project and run locks)."""
    if board is not None:
        run.blackboard = board.to_dict()
    run.stage, run.status = stage, RunStatus.QUEUED
    run.save(update_fields=["blackboard", "stage", "status", "updated_at"])
    enqueue_stage(run.pk, stage)


def finish_locked(claim: Claim, outcome: StageOutcome, write: Callable[[Project, PipelineRun], None]) -> None:
    """The body of a step's ``finish``: inside the caller's durable transaction, re-lock (project
    then run), check the lease, ``write`` the story data, then advance the run."""
    from pipeline.runtime.locks import run_lock
    from projects.lock_objects import project_lock

    project = project_lock(claim.project_id)
    run = run_lock(claim.run_id, with_context=False)
    _holding(run, claim)
    write(project, run)
    apply_outcome(run, claim, outcome)


def staged(board: Blackboard, key: str) -> Any:
    return board.as_("skill").read_content("book", key)


def stage_content(board: Blackboard, key: str, value: Any, files: dict[str, Any] | None = None) -> None:
    """Keep a step's output on the blackboard (``content.book.<key>``), and the files the seed
    would stage for it (``content.staged_files``: exported under ``staging/`` while the run is in
    flight, pipeline/staging_export.py)."""
    worker = board.as_("worker")
    worker.write_content("book", key, value)
    for path, text in (files or {}).items():
        worker.write_content("staged_files", path, text)
