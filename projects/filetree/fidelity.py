"""Round-trip fidelity: a tree imported and exported unchanged comes back byte for byte (#20).

Novelsite stores what a tree means, not how its files were written: PostgreSQL's ``jsonb`` keeps
neither key order nor number forms, and timestamps become moments. So the importer keeps every
JSON file it reads as it was (``ImportedFile``), and the exporter compares: a file whose data is
unchanged (or that an import reads the same, ``parse.file_meaning``) is written back as the original
text; a changed one keeps the original's key order,
item order (items matched by ``id``) and indentation, with new keys and items after the known
ones. ``changelog.jsonl`` is matched line by line: imported lines keep their form, new lines are
written compactly, as the tool appends them.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any

from projects.filetree.canonical import dump_json_line
from projects.filetree.parse import file_meaning

JSON_LINES = ".jsonl"
_INDENT = re.compile(r"\n( +)\S")


def is_kept_as_imported(path: str) -> bool:
    """The files whose original text the importer keeps."""
    return path.endswith((".json", JSON_LINES))


def canonical(value: Any) -> str:
    """One text per value: equal data, equal text (and 1, 1.0 and true stay different)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def reorder_like(value: Any, original: Any) -> Any:
    """``value`` with the original's key order and item order where they share keys and items."""
    if isinstance(value, dict) and isinstance(original, dict):
        keys = [key for key in original if key in value] + [key for key in value if key not in original]
        return {key: reorder_like(value[key], original.get(key)) for key in keys}
    if isinstance(value, list) and isinstance(original, list):
        return _reorder_items(value, original)
    return value


def _item_id(item: Any) -> str | None:
    return item.get("id") if isinstance(item, dict) and isinstance(item.get("id"), str) else None


def _reorder_items(items: list[Any], original: list[Any]) -> list[Any]:
    positions = {_item_id(item): index for index, item in enumerate(original) if _item_id(item) is not None}
    if not positions or any(_item_id(item) is None for item in items):
        # no identities: pair by position, keep the order
        return [reorder_like(item, original[i] if i < len(original) else None) for i, item in enumerate(items)]
    known = sorted((item for item in items if _item_id(item) in positions), key=lambda item: positions[_item_id(item)])
    new = [item for item in items if _item_id(item) not in positions]
    return [reorder_like(item, original[positions[_item_id(item)]]) for item in known] + new


def _same_meaning(path: str, data: bytes, original: str) -> bool:
    meaning = file_meaning(path, data)
    return meaning is not None and meaning == file_meaning(path, original.encode())


def _indent_of(text: str) -> int:
    match = _INDENT.search(text)
    return len(match[1]) if match else 2


def faithful_json(path: str, data: bytes, original: str) -> bytes:
    """The exported file ``data`` as the original was written, as far as the data allows: the
    original itself when both hold the same data or mean the same to an import."""
    try:
        value, before = json.loads(data), json.loads(original)
    except ValueError:
        return data
    if canonical(value) == canonical(before) or _same_meaning(path, data, original):
        return original.encode()
    if isinstance(before, list) and isinstance(value, dict) and len(value) == 1:
        (inner,) = value.values()  # the tool's bare-list shape ({"foreshadowing": [...]} as [...])
        value = inner if isinstance(inner, list) else value
    ending = "\n" if original.endswith("\n") else ""
    return (json.dumps(reorder_like(value, before), ensure_ascii=False, indent=_indent_of(original)) + ending).encode()


def faithful_json_lines(data: bytes, original: str) -> bytes:
    """Each line that was imported keeps its text; the others are new lines in the tool's form."""
    kept: dict[str, deque[str]] = defaultdict(deque)
    for line in original.splitlines():
        try:
            kept[canonical(json.loads(line))].append(line)
        except ValueError:
            continue
    lines = []
    for line in data.decode().splitlines():
        value = json.loads(line)
        same = kept.get(canonical(value))
        lines.append(same.popleft() if same else dump_json_line(value))
    ending = "\n" if not original or original.endswith("\n") else ""
    return ("\n".join(lines) + ending).encode() if lines else b""


def faithful_files(files: Iterator[tuple[str, bytes]], originals: dict[str, str]) -> Iterator[tuple[str, bytes]]:
    """The export's files, each JSON file written as its imported original where one exists."""
    for path, data in files:
        original = originals.get(path) if is_kept_as_imported(path) else None
        if original is None:
            yield path, data
        elif path.endswith(JSON_LINES):
            yield path, faithful_json_lines(data, original)
        else:
            yield path, faithful_json(path, data, original)
