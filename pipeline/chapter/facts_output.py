"""The summarizer's ``<facts>``: the chapter's new lasting facts and the open ones it closed
(issue #18), checked strictly before they reach the staging.

The model's answer is never trusted as it is and never fails the stage: whatever does not hold
(malformed JSON, an unknown kind, a character or a fact id the book does not have, a text too
long) is dropped with a note saying why, and the rest is kept. A missing ``<facts>`` means no
facts. The shape kept is what ``projects.services.facts.story_facts_apply_commit`` stores:
``{"new": [{kind, text, characters, storyline, foreshadowing}], "closed": [{id, status, note}]}``.
"""
from __future__ import annotations

import json
import re
from typing import Any

from projects.schemas import SLUG_PATTERN, STORY_FACT_KINDS, STORY_FACT_TEXT_MAX

MAX_NEW_FACTS = 8  # a chapter establishes a few lasting facts, not a list of everything that happened
CLOSING = ("fulfilled", "cancelled")
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")
_SLUG = re.compile(SLUG_PATTERN)


def _strings(value: Any) -> list[str] | None:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


def _new_fact(raw: Any, index: int, *, characters: dict[str, str], storylines: set[str], storyline: str,
              notes: list[str]) -> dict[str, Any] | None:
    where = f"new[{index}]"
    if not isinstance(raw, dict):
        notes.append(f"{where}: not an object; dropped")
        return None
    kind, text = raw.get("kind"), raw.get("text")
    if kind not in STORY_FACT_KINDS:
        notes.append(f"{where}: unknown kind {kind!r}; dropped")
        return None
    if not isinstance(text, str) or not text.strip() or len(text.strip()) > STORY_FACT_TEXT_MAX:
        notes.append(f"{where}: the text must be 1 to {STORY_FACT_TEXT_MAX} characters; dropped")
        return None
    names = _strings(raw.get("characters"))
    foreshadowing = _strings(raw.get("foreshadowing"))
    if names is None or foreshadowing is None:
        notes.append(f"{where}: characters and foreshadowing must be lists of strings; dropped")
        return None
    by_name = {display: slug for slug, display in characters.items()}
    slugs, unknown = [], []
    for name in names:  # ids are asked for; a display name is forgiven
        slug = name if name in characters else by_name.get(name)
        if slug is None:
            unknown.append(name)
        elif slug not in slugs:
            slugs.append(slug)
    if unknown:
        notes.append(f"{where}: unknown characters {', '.join(map(repr, unknown))} left out")
        if not slugs:
            notes.append(f"{where}: it binds no character of this book; dropped")
            return None
    line = raw.get("storyline") or storyline
    if not isinstance(line, str) or (storylines and line not in storylines):
        notes.append(f"{where}: unknown storyline {line!r}; the chapter's line {storyline!r} is used")
        line = storyline
    return {"kind": kind, "text": text.strip(), "characters": slugs, "storyline": line,
            "foreshadowing": [f for f in foreshadowing if len(f) <= 200][:20]}


def _closed_fact(raw: Any, index: int, *, open_ids: set[str], seen: set[str], notes: list[str]) -> dict | None:
    where = f"closed[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        notes.append(f"{where}: needs an id; dropped")
        return None
    fid, status, note = raw["id"].strip(), raw.get("status"), raw.get("note") or ""
    if fid not in open_ids or not _SLUG.match(fid):
        notes.append(f"{where}: {fid!r} is not an open fact; dropped")
        return None
    if status not in CLOSING:
        notes.append(f"{where}: status must be fulfilled or cancelled, not {status!r}; dropped")
        return None
    if fid in seen:
        notes.append(f"{where}: {fid} is closed twice; the first is kept")
        return None
    seen.add(fid)
    return {"id": fid, "status": status, "note": note[:STORY_FACT_TEXT_MAX] if isinstance(note, str) else ""}


def facts_from_output(text: str | None, *, characters: dict[str, str], storylines: set[str], storyline: str,
                      open_ids: set[str]) -> tuple[dict[str, list[dict]], list[str]]:
    """``(facts, notes)`` from the ``<facts>`` text. ``characters`` maps the book's slugs to display
    names; ``open_ids`` are the facts the summarizer was shown as open (the only ones it may close)."""
    facts: dict[str, list[dict]] = {"new": [], "closed": []}
    notes: list[str] = []
    if not text or not text.strip():
        return facts, notes
    try:
        body = json.loads(_FENCE.sub("", text.strip()))
    except json.JSONDecodeError as exc:
        return facts, [f"<facts> is not JSON ({exc.msg}); no facts taken"]
    if not isinstance(body, dict) or not isinstance(body.get("new", []), list) \
            or not isinstance(body.get("closed", []), list):
        return facts, ['<facts> must be {"new": [...], "closed": [...]}; no facts taken']
    raw_new = body.get("new") or []
    if len(raw_new) > MAX_NEW_FACTS:
        notes.append(f"{len(raw_new)} new facts; only the first {MAX_NEW_FACTS} are kept")
    for index, raw in enumerate(raw_new[:MAX_NEW_FACTS]):
        if (fact := _new_fact(raw, index, characters=characters, storylines=storylines, storyline=storyline,
                              notes=notes)) is not None:
            facts["new"].append(fact)
    seen: set[str] = set()
    for index, raw in enumerate(body.get("closed") or []):
        if (closing := _closed_fact(raw, index, open_ids=open_ids, seen=seen, notes=notes)) is not None:
            facts["closed"].append(closing)
    return facts, notes
