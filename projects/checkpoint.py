"""The project's checkpoint in the shape of ``.checkpoint.json`` (seed 000 §9.2, facts §3).

Times are written in one fixed form, whatever the server's ``TIME_ZONE``: UTC with milliseconds
and a ``Z``, as the tool's ``new Date().toISOString()`` writes them. A time read from a tree
without an offset is taken as UTC; a time that came in a tree is written back as it came, as long
as it still names the same moment. A project that never ran has no time, and the key is left out
(the tool accepts a missing key, never ``null``).
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from projects.models import CHECKPOINT_FIELDS, Project


def checkpoint_time_text(moment: datetime) -> str:
    """``2026-03-02T14:41:07.000Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def checkpoint_moment(text: str) -> datetime | None:
    """The moment a checkpoint's time names; without an offset, UTC (never the server's zone)."""
    moment = parse_datetime(text)
    if moment is not None and timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    return moment


def checkpoint_of(project: Project, *, imported_time: str | None = None) -> dict[str, Any]:
    """Known fields in the seed's order, then the unknown keys an import preserved.
    ``imported_time``: the time as the imported tree wrote it, reused while it is still the same."""
    data: dict[str, Any] = {}
    for name in CHECKPOINT_FIELDS:
        value = getattr(project, name)
        if name == "last_checkpoint_time":
            if value is None:
                continue
            value = (imported_time if imported_time and _same_moment(imported_time, value)
                     else checkpoint_time_text(value))
        data[name] = value
    for key, value in project.checkpoint_extra.items():
        data.setdefault(key, value)
    return data


def _same_moment(text: str, moment: datetime) -> bool:
    try:
        return checkpoint_moment(text) == moment
    except ValueError:
        return False
