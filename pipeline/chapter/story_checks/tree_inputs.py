"""The story checks against an exported tree (#18, ``novel validate --tree`` for a chapter's judge
and commit steps): the roster from ``characters/{active,retired}/*.json`` (``aliases`` an extra key,
absent in older trees), ``state/current-state.json``, ``foreshadowing/global.json``,
``world/rules.json``, the outline's Location, the volume plans' new characters, the changelog's
inventory ops and ``platform-profile.json``'s info-load limit. Missing files make the check that
needs them find nothing; reads are quiet, so they never add validation errors of their own."""
from __future__ import annotations

import json
from typing import Any

from pipeline.book.plan_validation import outline_blocks, outline_value
from pipeline.chapter.story_checks import StoryInputs
from pipeline.chapter.story_checks.project_inputs import planned_names, unknown_limit_of
from pipeline.steps.tree_reader import TreeReader
from projects.filetree import paths


def _roster(reader: TreeReader) -> list[dict[str, Any]]:
    roster = []
    for status in ("active", "retired"):
        for name in reader.list_files(f"characters/{status}", ".json", quiet=True) or []:
            body = reader.json_object(f"characters/{status}/{name}", quiet=True)
            if body is None:
                continue
            aliases = body.get("aliases") if isinstance(body.get("aliases"), list) else []
            roster.append({"slug": name.removesuffix(".json"), "display_name": body.get("display_name"),
                           "status": status, "aliases": aliases})
    return roster


def _ledger(reader: TreeReader) -> dict[str, str]:
    body = reader.json(paths.GLOBAL_FORESHADOWING, quiet=True)
    items = body if isinstance(body, list) else body.get("foreshadowing") if isinstance(body, dict) else None
    return {str(i["id"]): str(i.get("status")) for i in items or [] if isinstance(i, dict) and i.get("id")}


def _rules(reader: TreeReader) -> list[dict[str, Any]]:
    body = reader.json_object(paths.WORLD_RULES, quiet=True)
    rules = body.get("rules") if body else None
    return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []


def _history(reader: TreeReader) -> list[dict[str, Any]]:
    ops = []
    for line in (reader.text(paths.STATE_CHANGELOG, quiet=True) or "").splitlines():
        try:
            delta = json.loads(line)
        except ValueError:
            continue
        for op in delta.get("ops") or [] if isinstance(delta, dict) else []:
            if isinstance(op, dict) and str(op.get("path", "")).endswith(".inventory"):
                ops.append(op)
    return ops


def _place_and_plans(reader: TreeReader, chapter: int) -> tuple[str, list[str]]:
    place, plans = "", []
    for volume in reader.list_files("volumes", "", quiet=True) or []:
        for base in (f"volumes/{volume}", f"staging/volumes/{volume}"):
            outline = reader.text(f"{base}/outline.md", quiet=True) if reader.exists(f"{base}/outline.md") else None
            if outline and not place and chapter in outline_blocks(outline):
                place = outline_value(outline_blocks(outline)[chapter], "Location") or ""
            if reader.exists(f"{base}/new-characters.json"):
                plans.append(reader.json(f"{base}/new-characters.json", quiet=True))
    return place, planned_names(plans)


def tree_story_inputs(reader: TreeReader, chapter: int, delta: Any) -> StoryInputs:
    ops = delta.get("ops") if isinstance(delta, dict) else None
    state = reader.json_object(paths.CURRENT_STATE, quiet=True) or {}
    place, planned = _place_and_plans(reader, chapter)
    profile = (reader.json_object("platform-profile.json", quiet=True) if reader.exists("platform-profile.json")
               else None)
    return StoryInputs(characters=_roster(reader), state=state, place=place,
                       delta_ops=[op for op in ops if isinstance(op, dict)] if isinstance(ops, list) else [],
                       ledger=_ledger(reader), history_ops=_history(reader), rules=_rules(reader),
                       planned_names=planned, unknown_limit=unknown_limit_of(profile))
