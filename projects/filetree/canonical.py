"""Byte-exact encodings of the tree's files, so that two exports of unchanged data are identical:
UTF-8 without BOM, LF line ends, one trailing newline, JSON with sorted keys and two-space indent
(changelog lines compact, as the tool appends them; imported files keep their own form, fidelity.py).
The decoders are the strict counterparts the importer uses on outside files."""
from __future__ import annotations

import json
from typing import Any

from projects.filetree.errors import TreeError

MAX_JSON_DEPTH = 64  # deeper nesting is refused before json.loads recurses into it


def dump_json(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2) + "\n").encode()


# the tool's delta objects (facts §10.8), in the order it writes their keys
DELTA_KEYS = ("chapter", "base_state_version", "storyline_id", "ops")
OP_KEYS = ("op", "path", "value", "detail")


def dump_json_line(value: Any) -> str:
    """One changelog.jsonl line (no newline), as the tool appends it: compact, the delta's keys in
    the tool's order, then any others."""
    if isinstance(value, dict):
        value = _ordered(value, DELTA_KEYS)
        if isinstance(value.get("ops"), list):
            value["ops"] = [_ordered(op, OP_KEYS) if isinstance(op, dict) else op for op in value["ops"]]
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ordered(value: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {**{key: value[key] for key in keys if key in value}, **value}


def dump_text(text: str) -> bytes:
    """Markdown and other text: LF, exactly one trailing newline (none for an empty file)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    return (text + "\n").encode() if text else b""


def load_text(data: bytes, path: str) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # a BOM is harmless; accept and drop it
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TreeError(path, f"not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
    if "\x00" in text:
        raise TreeError(path, "contains NUL characters; not a text file")
    return text.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n")


def decode_exact(data: bytes, path: str) -> str:
    """A kept file's text exactly as it was (no newline or BOM changes), or a TreeError."""
    load_text(data, path)  # the same UTF-8 and NUL checks as every other text
    return data.decode("utf-8")


def _check_depth(text: str, path: str) -> None:
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                raise TreeError(path, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        elif char in "]}":
            depth -= 1


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def load_json(data: bytes, path: str) -> Any:
    text = load_text(data, path)
    _check_depth(text, path)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise TreeError(path, f"invalid JSON: {exc}") from exc


def load_json_lines(data: bytes, path: str) -> list[Any]:
    rows = []
    for number, line in enumerate(load_text(data, path).split("\n"), start=1):
        if line.strip():
            rows.append(load_json(line.encode(), f"{path}:{number}"))
    return rows
