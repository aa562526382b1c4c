"""``logs/unknown-entities.jsonl`` (facts §10.10, §10.14): an append-only stream of the named
entities a chapter brought in that the roster does not know, one line per committed chapter,
``{"chapter": N, "unknown_entities": [{mention, context, suggested_type}]}``. It is kept as an
extra file of the tree, so the export writes it where the original tool does."""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from projects.models import ExtraFile, Project

UNKNOWN_ENTITIES_PATH = "logs/unknown-entities.jsonl"
SUGGESTED_TYPES = ("character", "location", "item", "faction")
MAX_ENTRIES = 50  # per chapter: the stream stays readable however wrong a chapter went
MAX_FIELD_CHARS = 200


def _entry(raw: Any) -> dict[str, str] | None:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("mention"), str) or not raw["mention"].strip():
        return None
    kind = raw.get("suggested_type")
    return {"mention": raw["mention"].strip()[:MAX_FIELD_CHARS],
            "context": str(raw.get("context") or "")[:MAX_FIELD_CHARS],
            "suggested_type": kind if kind in SUGGESTED_TYPES else "character"}


def unknown_entities_append(*, project: Project, chapter: int, entities: Sequence[Any]) -> bool:
    """Append the chapter's line; nothing when there are no entities or the chapter has its line
    already (a repeated commit of the same chapter writes it once). The caller holds the project
    lock (the chapter commit). True when a line was written."""
    entries = [e for e in (_entry(raw) for raw in list(entities or [])[:MAX_ENTRIES]) if e]
    if not entries:
        return False
    row, _created = ExtraFile.objects.get_or_create(project=project, path=UNKNOWN_ENTITIES_PATH,
                                                    defaults={"content": ""})
    for line in row.content.splitlines():
        try:
            if json.loads(line).get("chapter") == chapter:
                return False
        except (ValueError, AttributeError):
            continue  # an imported stream may hold lines of another shape: kept as they are
    text = row.content if not row.content or row.content.endswith("\n") else row.content + "\n"
    row.content = text + json.dumps({"chapter": chapter, "unknown_entities": entries}, ensure_ascii=False) + "\n"
    row.save(update_fields=["content"])
    return True
