"""The foreshadowing ledger: foreshadow ops of a committed delta become facts (facts §10.9)."""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext as _

from projects.errors import ForeshadowingAlreadyResolved, InvalidData, VersionConflict
from projects.lock_objects import foreshadowing_lock_many, project_lock
from projects.models import STATUS_RANK, Foreshadowing, ForeshadowingEvent, Project, Volume
from projects.services.editing import full_clean_or_raise
from projects.state_ops import FORBIDDEN_SEGMENTS, MAX_FORESHADOW_ID_LENGTH

# What a person may change on the web; status, planted_*, last_updated_chapter and the events are the
# pipeline's (facts §10.9: they follow the foreshadow ops of committed chapters).
HUMAN_FIELDS = ("description", "scope", "target_resolve_start", "target_resolve_end")
# An id is used as a foreshadow op's path and in web addresses: no whitespace, no slash (schemas
# _GLOBAL_ITEM: a string of 1…200 characters; state_ops: no forbidden dotted segment).
FORESHADOW_ID_RE = re.compile(r"[^\s/\\]{1,%d}" % MAX_FORESHADOW_ID_LENGTH)


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
    chapter and action. An item already resolved in an earlier chapter is not resolved again:
    ``ForeshadowingAlreadyResolved`` before anything is written (#18).
    """
    if not ops:
        return []
    plan = foreshadowing_plan_items(volume)
    rows = foreshadowing_lock_many(project=project, fids=[op["path"] for op in ops])
    foreshadowing_resolve_check(rows=rows, chapter=chapter, ops=ops)
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


def foreshadowing_resolve_check(*, rows: dict[str, Foreshadowing], chapter: int, ops: list[dict[str, Any]]) -> None:
    """Refuse ``resolved`` ops on items resolved in another chapter (the same chapter's op applied
    again is the same fact, facts §10.9's history de-duplication, and passes)."""
    again = sorted({op["path"] for op in ops if op.get("value") == "resolved" and op["path"] in rows
                    and rows[op["path"]].status == "resolved"})
    if not again:
        return
    earlier = dict(ForeshadowingEvent.objects.filter(foreshadowing__in=[rows[f] for f in again], action="resolved")
                   .exclude(chapter=chapter).values_list("foreshadowing__fid", "chapter"))
    refused = [f for f in again if f in earlier or not ForeshadowingEvent.objects.filter(
        foreshadowing=rows[f], chapter=chapter, action="resolved").exists()]
    if refused:
        where = ", ".join(f"{f} ({earlier[f]})" if f in earlier else f for f in refused)
        raise ForeshadowingAlreadyResolved(
            _("These foreshadowing items were already resolved (in the chapter shown) and cannot be resolved "
              "again: %(items)s") % {"items": where},
            extra={"foreshadowing": refused, "chapter": chapter})


def foreshadowing_digest(row: Foreshadowing) -> str:
    """A fingerprint of the fields a person edits: the ledger has no edit version, and a pipeline
    backfill of the description must refuse a human save that started before it."""
    values = [getattr(row, name) for name in HUMAN_FIELDS]
    return hashlib.sha256(json.dumps(values, ensure_ascii=False).encode()).hexdigest()


def foreshadowing_id_check(fid: str) -> None:
    if fid == "new" or not FORESHADOW_ID_RE.fullmatch(fid or "") \
            or any(s in FORBIDDEN_SEGMENTS for s in fid.split(".")):
        raise InvalidData(_("The id must be 1 to %(n)s characters without spaces or slashes, like F-001.")
                          % {"n": MAX_FORESHADOW_ID_LENGTH}, extra={"field": "fid"})


def foreshadowing_range_check(start: int | None, end: int | None) -> None:
    if (start is None) != (end is None):
        raise InvalidData(_("Give both chapters of the target range, or neither."))
    if start is not None and start > end:
        raise InvalidData(_("The target range ends (chapter %(end)s) before it starts (chapter %(start)s).")
                          % {"start": start, "end": end})


@transaction.atomic
def foreshadowing_create(*, project: Project, editor: AbstractBaseUser | None, fid: str, description: str,
                         scope: str, target_resolve_start: int | None, target_resolve_end: int | None
                         ) -> Foreshadowing:
    """A new ledger item planned by a person: status "planted" with no planted chapter (the
    pipeline sets it when a chapter plants it). Takes the project lock. ``editor`` is accepted for
    symmetry with other human edits; the ledger has no history table (its events are the history)."""
    foreshadowing_id_check(fid)
    foreshadowing_range_check(target_resolve_start, target_resolve_end)
    project_lock(project.pk)
    if project.foreshadowing.filter(fid=fid).exists():
        raise InvalidData(_("There is already a foreshadowing item %(fid)s.") % {"fid": fid}, extra={"field": "fid"})
    row = Foreshadowing(project=project, fid=fid, description=description, scope=scope,
                        target_resolve_start=target_resolve_start, target_resolve_end=target_resolve_end)
    full_clean_or_raise(row)
    row.save()
    return row


@transaction.atomic
def foreshadowing_update(*, item: Foreshadowing, editor: AbstractBaseUser | None, base_digest: str,
                         **changes: Any) -> Foreshadowing:
    """Change the human fields (``HUMAN_FIELDS``) of ``item`` if nobody changed them since
    ``base_digest`` (``foreshadowing_digest``); status and history are left to the pipeline. Takes
    the project lock, then the row lock."""
    unknown = set(changes) - set(HUMAN_FIELDS)
    if unknown:
        raise InvalidData(f"not editable here: {', '.join(sorted(unknown))}")
    project_lock(item.project_id)
    row = foreshadowing_lock_many(project=item.project, fids=[item.fid]).get(item.fid)
    if row is None:
        raise InvalidData(_("This foreshadowing item no longer exists."))
    if foreshadowing_digest(row) != base_digest:
        raise VersionConflict(f"{row.fid} was changed by someone else after this edit started.",
                              extra={"fid": row.fid})
    for name, value in changes.items():
        setattr(row, name, value)
    foreshadowing_range_check(row.target_resolve_start, row.target_resolve_end)
    full_clean_or_raise(row)
    row.save(update_fields=[*changes, "updated_at"])
    return row
