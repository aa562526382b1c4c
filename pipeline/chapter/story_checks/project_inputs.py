"""What the story checks compare a chapter with, read from the project (#18): the foreshadowing
ledger, the items the changelog ever moved, the names the volume plans introduce and the
platform's information-load limit. A fixed number of queries, whatever the book's length."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.chapter.story_checks import StoryInputs
from projects.models import Project, StateChange, Volume

PLATFORM_PROFILE = "platform-profile.json"
DEFAULT_UNKNOWN_LIMIT = 0  # without a platform profile, every unknown name must be registered first


def unknown_limit_of(profile: Any) -> int:
    """``info_load.max_unknown_entities_per_chapter`` of a platform profile, when it is a whole
    number ≥ 0; else the default."""
    info = profile.get("info_load") if isinstance(profile, Mapping) else None
    limit = info.get("max_unknown_entities_per_chapter") if isinstance(info, Mapping) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else DEFAULT_UNKNOWN_LIMIT


def project_unknown_limit(project: Project) -> int:
    text = project.extra_files.filter(path=PLATFORM_PROFILE).values_list("content", flat=True).first()
    try:
        return unknown_limit_of(json.loads(text)) if text else DEFAULT_UNKNOWN_LIMIT
    except ValueError:
        return DEFAULT_UNKNOWN_LIMIT


def planned_names(new_characters_lists: Iterable[Any]) -> list[str]:
    names = []
    for items in new_characters_lists:
        for item in items if isinstance(items, list) else []:
            name = item.get("name") or item.get("display_name") if isinstance(item, Mapping) else None
            if isinstance(name, str) and name.strip():
                names.append(name.strip())
    return names


def contract_names(contract: Mapping[str, Any] | None) -> list[str]:
    """Who a chapter contract names (facts §10.7: ``character_states`` and ``state_changes`` keys)."""
    if not isinstance(contract, Mapping):
        return []
    names = []
    for part, key in (("preconditions", "character_states"), ("postconditions", "state_changes")):
        section = contract.get(part)
        found = section.get(key) if isinstance(section, Mapping) else None
        names += [str(name) for name in found] if isinstance(found, Mapping) else []
    return names


def inventory_history(project: Project) -> list[dict[str, Any]]:
    """The inventory ops of every applied delta: items someone once held."""
    ops = []
    for delta in StateChange.objects.filter(project=project).values_list("delta", flat=True):
        for op in (delta or {}).get("ops") or [] if isinstance(delta, Mapping) else []:
            if isinstance(op, Mapping) and str(op.get("path", "")).endswith(".inventory"):
                ops.append(dict(op))
    return ops


def foreshadowing_ledger(project: Project) -> dict[str, str]:
    return dict(project.foreshadowing.values_list("fid", "status"))


def project_story_inputs(project: Project, *, characters: Sequence[Mapping[str, Any]], state: Mapping[str, Any],
                         place: str, delta_ops: Sequence[Mapping[str, Any]],
                         rules: Sequence[Mapping[str, Any]], contract: Mapping[str, Any] | None = None) -> StoryInputs:
    """``contract``: the chapter's L3 contract; the names its pre/postconditions give are planned."""
    return StoryInputs(
        characters=characters, state=state, place=place, delta_ops=delta_ops, rules=rules,
        ledger=foreshadowing_ledger(project), history_ops=inventory_history(project),
        planned_names=[*planned_names(Volume.objects.filter(project=project).values_list("new_characters", flat=True)),
                       *contract_names(contract)],
        unknown_limit=project_unknown_limit(project),
    )


def touched_foreshadowing(project: Project, ids: Iterable[str]) -> list[dict[str, Any]]:
    """The ledger rows of the items a chapter touches, for the judge: id, description, status,
    scope, target range, last update (facts §10.9)."""
    wanted = list(dict.fromkeys(i for i in ids if i))
    rows = project.foreshadowing.filter(fid__in=wanted).values(
        "fid", "description", "status", "scope", "target_resolve_start", "target_resolve_end", "last_updated_chapter")
    found = {row["fid"]: row for row in rows}
    return [{"id": fid, **({k: v for k, v in found[fid].items() if k != "fid"} if fid in found
                           else {"status": "未登记"})}
            for fid in wanted]
