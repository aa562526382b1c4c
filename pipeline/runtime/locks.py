"""Row locks for a run. Lock order (projects/lock_objects.py): Project -> PipelineRun ->
StoryState -> other rows by pk; every helper here takes the project first.

Each helper locks with ``select_for_update`` and returns ORM rows; none of them writes. A stage's
work happens with no lock held (the LLM call); these locks are held only by the short transactions
around it: the claim, the completion, a failure, a person's answer.
"""
from __future__ import annotations

from django.db.models import Exists, OuterRef

from pipeline.errors import LeaseLost
from pipeline.models import PipelineRun, PromptTemplate, RunStatus
from projects.models import Project

# The project as the runtime reads it. Not the brief, the relationship graph, the storyline specs or
# the checkpoint's extras: they grow with the book and no chapter stage reads them (one that does,
# a quick start's, loads them on first access as from any deferred field).
PROJECT_FIELDS_DEFERRED = ("brief", "relationships", "storyline_spec", "storylines_meta", "pending_actions",
                           "checkpoint_extra")


def project_lock_of_run(run_id: int) -> Project | None:
    """Lock 1, the run's project, found through the run; None if there is no such run. Only the
    project's row is locked. The row also says whether the project overrides any prompt template
    (``has_prompt_overrides``), so that a stage of a project without overrides (most) needs no
    lookup per LLM call."""
    overrides = PromptTemplate.objects.filter(project=OuterRef("pk"))
    return (Project.objects.select_for_update(of=("self",)).defer(*PROJECT_FIELDS_DEFERRED)
            .annotate(has_prompt_overrides=Exists(overrides)).filter(runs__pk=run_id).first())


def run_lock(run_id: int, *, with_context: bool = True, with_blackboard: bool = True) -> PipelineRun:
    """Lock 2, the run. Without its context snapshot (or its blackboard) those fields are deferred,
    and the run saves only its other fields unless one assigns them: a stage completing leaves the
    snapshot as it is, unread and unwritten, and writes a blackboard it need not read first.
    ``PipelineRun.DoesNotExist`` if there is no such run."""
    deferred = [name for name, wanted in (("context", with_context), ("blackboard", with_blackboard)) if not wanted]
    return PipelineRun.objects.select_for_update().defer(*deferred).get(pk=run_id)


def run_lock_pair(run_id: int, *, with_context: bool = True,
                  with_blackboard: bool = True) -> tuple[Project, PipelineRun] | None:
    """The run's project and the run, locked in that order; None if there is no such run. What
    every change to a run starts with: a person's retry, cancel or answer, a failure, a finish."""
    project = project_lock_of_run(run_id)
    if project is None:
        return None
    return project, run_lock(run_id, with_context=with_context, with_blackboard=with_blackboard)


def lease_check(run: PipelineRun, claim) -> None:
    """``LeaseLost`` unless ``run`` (locked) is still running at the stage ``claim`` took, under
    the claim's owner: otherwise another worker took the stage over or a person cancelled the run
    while the stage worked, and what it brings back must not be written."""
    if run.stage != claim.stage or run.lease_owner != claim.owner or run.status != RunStatus.RUNNING:
        raise LeaseLost(f"run {run.pk} moved on from {claim.stage} (now {run.status}/{run.stage})")


def claimed_run_lock(claim, *, with_blackboard: bool = True) -> tuple[Project, PipelineRun]:
    """The project and the run of ``claim``, locked, once the lease is checked (``LeaseLost``
    otherwise): the start of every stage's finish. The context snapshot is not read."""
    locked = run_lock_pair(claim.run_id, with_context=False, with_blackboard=with_blackboard)
    if locked is None:
        raise LeaseLost(f"run {claim.run_id} is gone")
    lease_check(locked[1], claim)
    return locked
