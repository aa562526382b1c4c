"""The project's checkpoint in the shape of ``.checkpoint.json`` (seed 000 §9.2, facts §3)."""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from projects.models import CHECKPOINT_FIELDS, Project


def checkpoint_of(project: Project) -> dict[str, Any]:
    """Known fields in the seed's order, then the unknown keys an import preserved."""
    data: dict[str, Any] = {}
    for name in CHECKPOINT_FIELDS:
        value = getattr(project, name)
        if name == "last_checkpoint_time" and value is not None:
            value = timezone.localtime(value).isoformat(timespec="seconds")
        data[name] = value
    for key, value in project.checkpoint_extra.items():
        data.setdefault(key, value)
    return data
