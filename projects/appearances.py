"""Which characters were really in a chapter (#18), from what the chapter's own records say:
the cast its contract names and the state ops its delta applied to ``characters.<slug>…``.
Pure Python (the service and the backfill migration share it); names are resolved to slugs
against the project's characters, case-insensitively, as facts §12 matches contract keys.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def character_index(characters: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{slug or display name, lowercased: slug}`` of ``(slug, display_name)`` pairs."""
    index: dict[str, str] = {}
    for slug, name in characters:
        index.setdefault(slug.lower(), slug)
        if name:
            index.setdefault(name.lower(), slug)
    return index


def contract_cast(contract: Any, index: dict[str, str]) -> set[str]:
    """The slugs of the characters a chapter contract names: its preconditions' character states
    and its postconditions' state changes (keys that are no known character are left out)."""
    if not isinstance(contract, dict):
        return set()
    keys: list[Any] = []
    for part, key in (("preconditions", "character_states"), ("postconditions", "state_changes")):
        section = contract.get(part)
        named = section.get(key) if isinstance(section, dict) else None
        if isinstance(named, dict):
            keys += list(named)
    return {index[k.lower()] for k in keys if isinstance(k, str) and k.lower() in index}


def delta_cast(delta: Any, index: dict[str, str]) -> set[str]:
    """The slugs of the characters whose state the delta's ops touched (``characters.<slug>…``)."""
    ops = delta.get("ops") if isinstance(delta, dict) else None
    slugs = set()
    for op in ops if isinstance(ops, list) else []:
        path = op.get("path") if isinstance(op, dict) and op.get("op") != "foreshadow" else None
        if isinstance(path, str) and path.startswith("characters."):
            slug = path.split(".")[1].lower()
            if slug in index:
                slugs.add(index[slug])
    return slugs
