"""Row locks for story data. Lock order, always: Project -> PipelineRun (pipeline/runtime/locks.py)
-> StoryState -> other rows by pk. With one order, two writers may wait, but never deadlock.

These are the only places that call ``select_for_update()`` in ``projects``. On SQLite the
lock is a no-op, and IMMEDIATE transactions serialise writers instead.
"""
from __future__ import annotations

from functools import cache
from typing import TypeVar

from django.db import connection, models

from projects.models import Foreshadowing, Project, Storyline, StoryState
from projects.state_ops import empty_state

M = TypeVar("M", bound=models.Model)


def project_lock(project_id: int) -> Project:
    return Project.objects.select_for_update(of=("self",)).get(pk=project_id)


def project_lock_id(project_id: int) -> None:
    """The same lock as ``project_lock`` without loading the row: for callers that only need to
    hold it (the pipeline's stage transactions, several times per chapter). Plain SQL: building
    the ORM query cost more than running it."""
    with connection.cursor() as cursor:
        cursor.execute(_project_lock_id_sql(connection.vendor), [project_id])
        cursor.fetchall()


@cache
def _project_lock_id_sql(vendor: str) -> str:
    return f"SELECT {quoted_columns(Project, ['id'])} FROM {Project._meta.db_table} WHERE id = %s{for_update()}"


def quoted_columns(model: type[models.Model], names: list[str] | None = None, *, alias: str = "") -> str:
    """The columns of ``model``'s fields ``names`` (all concrete fields by default), quoted, for
    the plain-SQL lock helpers of the hottest paths (``pipeline/runtime/locks.py``)."""
    fields = model._meta.concrete_fields if names is None else [model._meta.get_field(n) for n in names]
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + connection.ops.quote_name(f.column) for f in fields)


def fetch_instances(model: type[M], sql: str, params: list, names: list[str],
                    extra: tuple[str, ...] = ()) -> list[M]:
    """The rows of ``sql`` as ``model`` instances, their values converted as the ORM converts
    them: ``sql`` selects the columns of the fields ``names`` (in the model's field order; the
    other fields are deferred), then one column per ``extra`` attribute. For the plain-SQL lock
    helpers of the hottest paths: ``Model.objects.raw`` resolves its columns again on every call,
    which cost more than the query."""
    attnames, converters = _row_converters(model, tuple(names), connection.vendor)
    width = len(attnames)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    instances = []
    for row in rows:
        values = list(row[:width])
        for index, functions, expression in converters:
            for function in functions:
                values[index] = function(values[index], expression, connection)
        instance = model.from_db(connection.alias, attnames, values)
        for name, value in zip(extra, row[width:]):
            setattr(instance, name, value)
        instances.append(instance)
    return instances


def update_returning(model: type[M], values: dict, where: str, where_params: list, names: list[str],
                     extra: dict[str, tuple[str, list]] | None = None) -> M | None:
    """``UPDATE`` the row of ``model`` matching ``where`` (one row, by its id) with ``values`` (field
    name -> Python value, adapted as the ORM adapts them) and return it as an instance with the
    fields ``names``, or None when no row matched. One statement where a locked read and a save
    would be two: it locks the row as it changes it, and ``where`` states the conditions a
    read-then-check would have checked. ``extra`` (attribute -> SQL expression and its params)
    returns more values with the row, as attributes of the instance."""
    names = row_order(model, names)
    assignments, params = set_clause(model, values)
    extra = extra or {}
    returning = ", ".join([quoted_columns(model, names), *(f"({sql})" for sql, _params in extra.values())])
    sql = f"UPDATE {model._meta.db_table} SET {assignments} WHERE {where} RETURNING {returning}"
    extra_params = [param for _sql, sql_params in extra.values() for param in sql_params]
    rows = fetch_instances(model, sql, params + where_params + extra_params, names, extra=tuple(extra))
    return rows[0] if rows else None


def set_clause(model: type[models.Model], values: dict) -> tuple[str, list]:
    """``"col" = %s, …`` for ``values`` (field name -> Python value) and its params, adapted as the
    ORM adapts them on save."""
    fields = [model._meta.get_field(name) for name in values]
    assignments = ", ".join(f"{connection.ops.quote_name(field.column)} = %s" for field in fields)
    return assignments, [field.get_db_prep_save(value, connection) for field, value in zip(fields, values.values())]


def row_order(model: type[models.Model], names: list[str]) -> list[str]:
    """``names`` in the model's field order (the order ``fetch_instances`` reads columns in)."""
    wanted = set(names)
    return [field.name for field in model._meta.concrete_fields if field.name in wanted]


def db_value(model: type[models.Model], name: str, value):
    """``value`` of the field ``name`` as the database takes it (a datetime for SQLite, JSON …)."""
    return model._meta.get_field(name).get_db_prep_value(value, connection, prepared=False)


@cache
def _row_converters(model: type[models.Model], names: tuple[str, ...], vendor: str):
    fields = [field for field in model._meta.concrete_fields if field.name in names]
    if len(fields) != len(names):
        raise ValueError(f"{model.__name__}: {names} are not all concrete fields")
    converters = []
    for index, field in enumerate(fields):
        expression = field.get_col(model._meta.db_table)
        functions = connection.ops.get_db_converters(expression) + expression.get_db_converters(connection)
        if functions:
            converters.append((index, functions, expression))
    return [field.attname for field in fields], converters


def for_update(of: str = "") -> str:
    """``FOR UPDATE [OF alias]`` where the database has row locks; nothing on SQLite, whose
    IMMEDIATE transactions serialise writers instead (as the ORM's ``select_for_update`` does)."""
    if not connection.features.has_select_for_update:
        return ""
    return f" FOR UPDATE OF {of}" if of and connection.features.has_select_for_update_of else " FOR UPDATE"


def story_state_lock(project: Project) -> StoryState:
    """The project's state row, created empty (seed 000 / facts §7.4 initial state) on first use.
    The caller must hold the project lock, which makes the create race-free."""
    state = StoryState.objects.select_for_update().filter(project=project).first()
    if state is None:
        state = StoryState.objects.create(project=project, data=empty_state())
    return state


def storyline_lock(*, project: Project, slug: str) -> Storyline | None:
    """The project's storyline ``slug``, locked (after the project and the state: its memory is
    about to be overwritten by a commit); None if there is no such line."""
    return Storyline.objects.select_for_update(of=("self",)).filter(project=project, slug=slug).first()


def row_lock(instance: M) -> M:
    """Re-read one row under a lock (any story model)."""
    return type(instance)._default_manager.select_for_update(of=("self",)).get(pk=instance.pk)


def foreshadowing_lock_many(*, project: Project, fids: list[str]) -> dict[str, Foreshadowing]:
    rows = project.foreshadowing.select_for_update(of=("self",)).filter(fid__in=fids).order_by("pk")
    return {row.fid: row for row in rows}
