"""The foreshadowing ledger: foreshadow ops of a committed delta become facts (facts §10.9)."""
from __future__ import annotations

from typing import Any

from django.db import transaction

from projects.lock_objects import foreshadowing_lock_many
from projects.models import STATUS_RANK, Foreshadowing, ForeshadowingEvent, Project, Volume


def foreshadowing_plan_items(volume: Volume | None) -> dict[str, dict[str, Any]]:
    """The plan's items by id, whatever shape the file has (facts §15.2: items, foreshadowing, list)."""
    if volume is None:
        return {}
    plan = volume.foreshadowing_plan
    if isinstance(plan, list):
        items = plan
    else:
        items = (plan.get("items") or []) + (plan.get("foreshadowing") or [])
    return {item["id"]: item for item in items if isinstance(item, dict) and item.get("id")}


def _backfill_from_plan(row: Foreshadowing, planned: dict[str, Any]) -> None:
    # facts §10.9: seed description, scope and range from the volume plan, and backfill them later
    # when missing; placeholders are description=id and scope=medium.
    if (not row.description or row.description == row.fid) and planned.get("description"):
        row.description = planned["description"]
    if planned.get("scope") in ("short", "medium", "long") and row.scope == "medium" and not row.pk:
        row.scope = planned["scope"]
    target = planned.get("target_resolve_range")
    if row.target_resolve_end is None and isinstance(target, list) and len(target) == 2:
        row.target_resolve_start, row.target_resolve_end = target


@transaction.atomic
def foreshadowing_apply_ops(
    *, project: Project, chapter: int, storyline_slug: str, ops: list[dict[str, Any]], volume: Volume | None = None
) -> list[Foreshadowing]:
    """Merge foreshadow ops into the ledger. The caller holds the project lock.

    Status only moves forward (planted < advanced < resolved); planted_chapter and
    planted_storyline are set once; last_updated_chapter only grows; history is unique by
    chapter and action.
    """
    if not ops:
        return []
    plan = foreshadowing_plan_items(volume)
    rows = foreshadowing_lock_many(project=project, fids=[op["path"] for op in ops])
    touched = []
    for op in ops:
        fid, action = op["path"], op["value"]
        row = rows.get(fid) or Foreshadowing(project=project, fid=fid, description=fid, status=action)
        _backfill_from_plan(row, plan.get(fid, {}))
        if STATUS_RANK[action] > STATUS_RANK[row.status]:
            row.status = action
        if action == "planted":
            row.planted_chapter = row.planted_chapter or chapter
            row.planted_storyline = row.planted_storyline or storyline_slug
        row.last_updated_chapter = max(row.last_updated_chapter or 0, chapter)
        row.save()
        rows[fid] = row
        ForeshadowingEvent.objects.get_or_create(
            foreshadowing=row, chapter=chapter, action=action, defaults={"detail": op.get("detail", "")}
        )
        touched.append(row)
    return touched
