"""Row locks for the pipeline's records. Lock order (projects/lock_objects.py): Project ->
PipelineRun -> StoryState -> other rows by pk. Take the project lock first.

The project lock every stage hop takes, and the run lock, are plain SQL loaded into model
instances (``projects.lock_objects.fetch_instances``): the ORM's query building cost more than the
queries themselves (bench/README.md, part 1). A stage's lease is taken and released by conditional
``UPDATE … RETURNING`` statements in ``pipeline/runtime/claims.py``, which lock the run as they change it."""
from __future__ import annotations

from functools import cache

from django.db import connection

from projects.lock_objects import fetch_instances, for_update, quoted_columns, row_order, set_clause
from projects.models import Project

from pipeline.models import PipelineRun, PromptTemplate, StageRun


def project_lock_of_run(run_id: int) -> Project | None:
    """Lock 1 (the run's project) found through the run in one query; None if there is no such run.
    Only the project row is locked (``OF p``), so the order project -> run still holds. The row
    also says whether the project overrides any prompt template (``has_prompt_overrides``), so
    that a stage of a project without overrides (most) needs no lookup per LLM call."""
    rows = fetch_instances(Project, _project_of_run_sql(connection.vendor), [run_id], _CLAIMED_PROJECT_FIELDS,
                           extra=("has_prompt_overrides",))
    return rows[0] if rows else None


# The project as a stage reads it. Not the brief, the relationship graph, the storyline specs or
# the checkpoint's extras: they grow with the book and no chapter stage reads them (one that
# does, a quick start's, loads them on first access as from any deferred field).
_CLAIM_SKIPS = {"brief", "relationships", "storyline_spec", "storylines_meta", "pending_actions", "checkpoint_extra"}
_CLAIMED_PROJECT_FIELDS = [f.name for f in Project._meta.concrete_fields if f.name not in _CLAIM_SKIPS]


@cache
def _project_of_run_sql(vendor: str) -> str:
    overrides = f"EXISTS (SELECT 1 FROM {PromptTemplate._meta.db_table} t WHERE t.project_id = p.id)"
    return (f"SELECT {quoted_columns(Project, _CLAIMED_PROJECT_FIELDS, alias='p')}, "
            f"{overrides} AS has_prompt_overrides FROM {Project._meta.db_table} p "
            f"JOIN {PipelineRun._meta.db_table} r ON r.project_id = p.id WHERE r.id = %s{for_update(of='p')}")


def run_lock(run_id: int, *, with_context: bool = True, with_blackboard: bool = True) -> PipelineRun:
    """The run, locked. Without its context snapshot (or its blackboard) those fields are
    deferred, and the run saves only its other fields unless one assigns them: a stage completing
    leaves the snapshot as it is, unread and unwritten, and writes a blackboard it need not read
    first. ``PipelineRun.DoesNotExist`` if there is no such run."""
    names = _run_fields(with_context, with_blackboard)
    rows = fetch_instances(PipelineRun, _run_lock_sql(connection.vendor, names), [run_id], list(names))
    if not rows:
        raise PipelineRun.DoesNotExist(f"no pipeline run {run_id}")
    return rows[0]


@cache
def _run_fields(with_context: bool, with_blackboard: bool) -> tuple[str, ...]:
    skipped = {name for name, wanted in (("context", with_context), ("blackboard", with_blackboard)) if not wanted}
    return tuple(f.name for f in PipelineRun._meta.concrete_fields if f.name not in skipped)


@cache
def _run_lock_sql(vendor: str, names: tuple[str, ...]) -> str:
    return (f"SELECT {quoted_columns(PipelineRun, list(names))} FROM {PipelineRun._meta.db_table} "
            f"WHERE id = %s{for_update()}")


def stage_finish_statement(*, project_id: int, run_id: int, lease: tuple[str, str, str], run_values: dict,
                           returning: list[str], stage_run_id: int, stage_run_values: dict,
                           checkpoint: dict) -> PipelineRun | None:
    """PostgreSQL: a stage's completion in ONE statement, which is its own short transaction
    (outside an atomic block). Lock 1, the project row, is taken first; then, only if the run is
    still at ``lease`` (stage, owner, status), the run gets ``run_values``, its stage run
    ``stage_run_values`` and the project the ``checkpoint``. Returns the run with the fields
    ``returning``, or None with nothing written when the lease was lost.

    The transaction a completion needs elsewhere (BEGIN, lock, three writes, COMMIT) costs six
    round trips to the database; this costs one. Every row it writes it has locked, so it acts on
    their latest versions (the snapshot of the statement's start reads nothing else)."""
    names = row_order(PipelineRun, returning)
    run_set, run_params = set_clause(PipelineRun, run_values)
    stage_run_set, stage_run_params = set_clause(StageRun, stage_run_values)
    project_table, run_table = Project._meta.db_table, PipelineRun._meta.db_table
    columns = quoted_columns(PipelineRun, names)
    sql = (f"WITH locked AS (SELECT id FROM {project_table} WHERE id = %s FOR UPDATE), "
           f"run AS (UPDATE {run_table} SET {run_set} WHERE id = %s AND stage = %s AND lease_owner = %s "
           f"AND status = %s AND EXISTS (SELECT 1 FROM locked) RETURNING {columns}), "
           f"stage_run AS (UPDATE {StageRun._meta.db_table} SET {stage_run_set} "
           f"WHERE id = %s AND EXISTS (SELECT 1 FROM run))")
    params = [project_id, *run_params, run_id, *lease, *stage_run_params, stage_run_id]
    if checkpoint:
        checkpoint_set, checkpoint_params = set_clause(Project, checkpoint)
        sql += (f", checkpoint AS (UPDATE {project_table} SET {checkpoint_set} "
                f"WHERE id = %s AND EXISTS (SELECT 1 FROM run))")
        params += [*checkpoint_params, project_id]
    rows = fetch_instances(PipelineRun, f"{sql} SELECT {columns} FROM run", params, names)
    return rows[0] if rows else None
