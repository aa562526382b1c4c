"""The writer's foreshadowing tasks (facts §12, #18): for each item the contract names, what the
item is (description), its scope (planted chapter, target resolve range) and its history (events
with chapters), so that the writer can plant, advance or resolve a thread set up 200 chapters
earlier without guessing from a bare id; then overdue and dormant items, as the CLI gives them.

Bounded whatever the book's length: the contract names a handful of items, each keeps only its
latest ``HISTORY_KEPT`` events with short details, and at most ``ATTENTION_KEPT`` overdue and
dormant items follow. Three queries: the named rows, their events, the unresolved rows.
"""
from __future__ import annotations

from typing import Any

from projects.models import Foreshadowing, ForeshadowingEvent, Project, Volume
from projects.selectors import foreshadowing_attention
from projects.services.foreshadowing import foreshadowing_plan_items

FORESHADOW_VERBS = {"planted": "埋设", "advanced": "推进", "resolved": "回收"}
HISTORY_KEPT = 6  # the latest events of a named item; its planting is always kept
DETAIL_CHARS = 80  # of one event's detail
DESCRIPTION_CHARS = 300  # of an item's description (a description is one or two sentences)
ATTENTION_KEPT = 5  # facts §12: light-touch top 5


def _clip(text: Any, limit: int) -> str:
    text = str(text or "").strip()
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _range(start: int | None, end: int | None) -> list[int] | None:
    return [start, end] if start is not None and end is not None else None


def _history(events: list[ForeshadowingEvent]) -> list[dict[str, Any]]:
    """The planting and the latest events, oldest first."""
    if len(events) > HISTORY_KEPT:
        planted = [e for e in events if e.action == "planted"][:1]
        latest = events[-(HISTORY_KEPT - len(planted)):]
        events = planted + [e for e in latest if e not in planted]
    history = []
    for event in events:
        entry = {"chapter": event.chapter, "action": event.action}
        if event.detail:
            entry["detail"] = _clip(event.detail, DETAIL_CHARS)
        history.append(entry)
    return history


def _named_task(fid: str, status: str, row: Foreshadowing | None, planned: dict[str, Any],
                events: list[ForeshadowingEvent]) -> dict[str, Any]:
    verb = FORESHADOW_VERBS.get(status, status)
    task: dict[str, Any] = {"id": fid, "instruction": f"本章需要{verb}此伏笔"}
    if row is not None:
        description = row.description if row.description and row.description != row.fid else ""
        task.update({"description": _clip(description or planned.get("description"), DESCRIPTION_CHARS),
                     "scope": row.scope, "status": row.status, "planted_chapter": row.planted_chapter,
                     "target_resolve_range": _range(row.target_resolve_start, row.target_resolve_end),
                     "history": _history(events)})
    else:  # not in the ledger yet (planted by this chapter): what the volume plan says
        target = planned.get("target_resolve_range")
        task.update({"description": _clip(planned.get("description"), DESCRIPTION_CHARS),
                     "scope": planned.get("scope") if planned.get("scope") in ("short", "medium", "long") else None,
                     "status": None, "planted_chapter": None,
                     "target_resolve_range": target if isinstance(target, list) and len(target) == 2 else None,
                     "history": []})
    return {key: value for key, value in task.items() if value not in (None, "", [])}


def foreshadowing_tasks(project: Project, contract: dict, chapter: int, volume: Volume | None = None) -> list[dict]:
    updates = (contract.get("postconditions") or {}).get("foreshadowing_updates") or {}
    if not isinstance(updates, dict):
        updates = {}
    named = {str(fid): str(status) for fid, status in updates.items()}
    rows = {row.fid: row for row in project.foreshadowing.filter(fid__in=list(named))} if named else {}
    events: dict[int, list[ForeshadowingEvent]] = {row.pk: [] for row in rows.values()}
    if rows:
        for event in ForeshadowingEvent.objects.filter(foreshadowing__in=list(rows.values())).order_by(
                "foreshadowing", "chapter", "pk"):
            events[event.foreshadowing_id].append(event)
    try:
        plan = foreshadowing_plan_items(volume) if named else {}
    except (AttributeError, TypeError):  # a hand-edited plan of another shape: no plan details
        plan = {}
    tasks = []
    for fid, status in named.items():
        row = rows.get(fid)
        tasks.append(_named_task(fid, status, row, plan.get(fid) or {}, events[row.pk] if row else []))
    attention = foreshadowing_attention(project=project, as_of=chapter - 1)
    for item in [i for i in attention.overdue if i.fid not in named][:ATTENTION_KEPT]:
        tasks.append({"id": item.fid, "scope": item.scope, "status": item.status,
                      "instruction": f"已超期（应在第{item.target_resolve_end}章前回收）："
                                     f"{_clip(item.description, DESCRIPTION_CHARS)}"})
    for dormant in [d for d in attention.dormant if d.foreshadowing.fid not in named][:ATTENTION_KEPT]:
        item = dormant.foreshadowing
        tasks.append({"id": item.fid, "scope": item.scope, "status": item.status,
                      "chapters_since_last_update": dormant.chapters_since_last_update,
                      "instruction": f"已沉寂{dormant.chapters_since_last_update}章，轻点一笔："
                                     f"{_clip(item.description, DESCRIPTION_CHARS)}"})
    return tasks
