"""Filament v2: a streaming parser for the tagged output of the LLM (seed 004 §4, DESIGN §6).

Pure Python: no Django, no database.

The protocol is a strict, flat subset of XML:

* Only the whitelisted tags a stage declares are tags. Any other ``<…>`` (``<b>``, ``a < b``, ``<3``,
  ``</unknown>``, a ``<`` at the very end of the stream) is plain text.
* A tag is exactly ``<name>`` and ``</name>``: lowercase, no attributes, no whitespace inside the brackets
  (``<reply >``, ``<Reply>`` and ``<reply/>`` are text). Tag names are case-sensitive.
* Flat: inside an open tag only its own closing tag ends it. Another whitelisted tag, or the same tag again
  (``<reply>a<reply>b</reply>`` gives the reply text ``a<reply>b``), is text. A closing tag with no open tag
  is text.
* A tag still open at the end of the stream is auto-closed (``TagClose(auto=True)``), and noted in
  ``warnings`` and ``auto_closed``: seed 004 makes auto-closing the tolerated behaviour, and a stream
  the model's token limit cut short is known from its stop reason, not from here. An auto-closed
  ``<state_update>`` gives its ops like a closed one (JSON cut in the middle is an error anyway).

``FilamentParser`` is incremental: ``feed(chunk)`` returns the events it can already decide, holding back only
the shortest tail that could still become a tag (``<rep`` waiting for ``ly>``). Positions are character
offsets in the whole stream, so the result never depends on how the stream was cut into chunks.

``<state_update>`` blocks hold Filament v2 JSON triples (``[OP, path, value]``), normalised into the op
objects of seed 000 §9.2 that ``projects.state_ops.apply_delta`` applies:

======================================  ==================================================================
Filament                                op object
======================================  ==================================================================
``["SET", path, v]``                    ``{"op": "set", "path": path, "value": v}``
``["ADD", path, n]`` (n a number)       ``{"op": "inc", "path": path, "value": n}``
``["INC", path, n]`` (n a number)       ``{"op": "inc", "path": path, "value": n}``
``["PUSH", path, v]``                   ``{"op": "add", "path": path, "value": v}`` (append to an array)
``["REMOVE", path, v]``                 ``{"op": "remove", "path": path, "value": v}``
``["FORESHADOW", id, status, detail]``  ``{"op": "foreshadow", "path": id, "value": status, "detail": …}``
======================================  ==================================================================

Op names are case-insensitive; a foreshadow status is lowercased. ``ADD`` with a value that is not a number
is an error (``ADD`` adds to a counter; ``PUSH`` appends). Seed 000 op objects (``{"op": "set", …}``, where
``add`` means append) are accepted as they are. A block may be a JSON array of triples, one triple per line
(a trailing comma is tolerated), a single triple, or an object ``{"ops": [...]}``; a Markdown code fence
around the JSON is ignored. A lone op object (``{"op": "set", …}`` not in an array) is refused: v2 wants
a list.

A block is all or nothing, like the patch engine: if anything in it is wrong (malformed JSON, an unknown
op, a bad value) the block contributes no op at all, and every problem is listed in ``errors`` with its
position in the stream. A ``<state_update>`` that was never closed (a truncated stream, which may have lost
its last ops) contributes no op either. Nothing here raises on bad model output. The semantic rules
(path depth, top-level keys, foreshadow statuses) stay with ``projects.state_ops``, which applies the ops.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Union

from projects.state_ops import KNOWN_OPS

STATE_UPDATE_TAG = "state_update"
STANDARD_TAGS = ("thought", "analysis", "state_update", "reply")  # seed 004 §4.3
TAG_NAME_PATTERN = r"[a-z][a-z0-9_\-]*"
# Stripped around each occurrence in ``FilamentResult.texts``: ASCII whitespace only, so a Chinese
# paragraph's full-width indentation (U+3000) survives.
_EDGE_WHITESPACE = " \t\r\n"

# Filament v2 op code (lowercased) -> seed 000 op name.
_FILAMENT_OPS = {"set": "set", "add": "inc", "inc": "inc", "push": "add", "remove": "remove",
                 "foreshadow": "foreshadow"}
_FILAMENT_OP_NAMES = "SET, ADD, INC, PUSH, REMOVE, FORESHADOW"
_OP_OBJECT_KEYS = ("op", "path", "value", "detail")


# --- Events and results ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TagOpen:
    """``<tag>`` starts at ``pos``."""

    tag: str
    pos: int


@dataclass(frozen=True, slots=True)
class Text:
    """Text inside ``tag`` (None: outside any tag). One stretch of text may arrive as several events."""

    tag: str | None
    text: str


@dataclass(frozen=True, slots=True)
class TagClose:
    """``</tag>`` starts at ``pos``; ``auto``: the stream ended first and ``pos`` is its length."""

    tag: str
    pos: int
    auto: bool = False


Event = Union[TagOpen, Text, TagClose]


@dataclass(frozen=True, slots=True)
class FilamentError:
    """A problem in the model's output, at a character offset of the whole stream."""

    position: int
    message: str

    def __str__(self) -> str:
        return f"at {self.position}: {self.message}"


@dataclass
class FilamentResult:
    """What a whole stream said.

    ``texts``: each whitelisted tag that occurred -> its text; each occurrence stripped of surrounding
    ASCII whitespace, several occurrences joined with a newline. ``segments``: the raw text of each
    occurrence, unstripped. ``outside``: the text outside any tag, raw. ``ops``: the normalised state ops
    of every complete, valid ``<state_update>`` block, in order.
    """

    texts: dict[str, str] = field(default_factory=dict)
    segments: dict[str, list[str]] = field(default_factory=dict)
    outside: str = ""
    ops: list[dict[str, Any]] = field(default_factory=list)
    errors: list[FilamentError] = field(default_factory=list)
    auto_closed: list[str] = field(default_factory=list)
    warnings: list[FilamentError] = field(default_factory=list)  # tolerated: auto-closed tags

    def text(self, tag: str) -> str:
        """The text of ``tag``, or "" if it did not occur."""
        return self.texts.get(tag, "")

    @property
    def ok(self) -> bool:
        return not self.errors


# --- The streaming parser -------------------------------------------------------------------------


class FilamentParser:
    """Incremental Filament parser for a fixed tag whitelist.

    ``feed(chunk)`` and ``close()`` return events; ``result()`` gives the ``FilamentResult`` of what has
    been consumed so far (after ``close()``: of the whole stream, the same as ``parse()``). Linear in
    the stream: the only text carried from one chunk to the next is a possible tag prefix, shorter than
    the longest tag.
    """

    def __init__(self, tags: Iterable[str]) -> None:
        if isinstance(tags, str):
            raise TypeError("tags must be an iterable of tag names, not a string")
        names = tuple(dict.fromkeys(tags))
        if not names:
            raise ValueError("a Filament parser needs at least one tag")
        for name in names:
            if not isinstance(name, str) or not re.fullmatch(TAG_NAME_PATTERN, name):
                raise ValueError(f"invalid Filament tag name {name!r}: expected lowercase [a-z][a-z0-9_-]*")
        self.tags: tuple[str, ...] = names
        self._open_re = re.compile("<(" + "|".join(re.escape(name) for name in names) + ")>")
        open_tokens = [f"<{name}>" for name in names]
        self._open_prefixes = frozenset(token[:k] for token in open_tokens for k in range(1, len(token)))
        self._open_hold = max(map(len, open_tokens)) - 1
        # Stream state.
        self._held = ""  # a tail that may still become a tag
        self._held_pos = 0  # stream offset of _held[0]
        self._tag: str | None = None  # the open tag
        self._close_token = ""
        self._tag_pos = 0
        self._content_pos = 0
        self._parts: list[str] = []  # text of the open tag so far
        self._closed = False
        # Result so far.
        self._segments: dict[str, list[str]] = {}
        self._outside: list[str] = []
        self._ops: list[dict[str, Any]] = []
        self._errors: list[FilamentError] = []
        self._auto_closed: list[str] = []
        self._warnings: list[FilamentError] = []

    @property
    def open_tag(self) -> str | None:
        """The tag currently open, if any."""
        return self._tag

    @property
    def position(self) -> int:
        """Characters consumed so far (held-back characters included)."""
        return self._held_pos + len(self._held)

    def feed(self, chunk: str) -> list[Event]:
        if self._closed:
            raise ValueError("feed() after close()")
        if not chunk:
            return []
        if not self._held and "<" not in chunk:  # the common case: plain text, no tag can start here
            plain: list[Event] = []
            self._text(plain, chunk)
            self._held_pos += len(chunk)
            return plain
        data = self._held + chunk if self._held else chunk
        base = self._held_pos
        events: list[Event] = []
        i = 0
        while True:
            if self._tag is None:
                match = self._open_re.search(data, i)
                if match is None:
                    break
                start, end = match.span()
                if start > i:
                    self._text(events, data[i:start])
                self._open(events, match.group(1), base + start, base + end)
                i = end
            else:
                start = data.find(self._close_token, i)
                if start < 0:
                    break
                if start > i:
                    self._text(events, data[i:start])
                i = start + len(self._close_token)
                self._close(events, base + start, auto=False)
        # No complete tag in data[i:]; keep back the shortest tail that could still start one. Every tag
        # token holds a single "<", its first character, so only the last "<" can start a prefix.
        n = len(data)
        hold_at = n
        if self._tag is None:
            k = data.rfind("<", max(i, n - self._open_hold))
            if k >= 0 and data[k:] in self._open_prefixes:
                hold_at = k
        else:
            k = data.rfind("<", max(i, n - len(self._close_token) + 1))
            if k >= 0 and self._close_token.startswith(data[k:]):
                hold_at = k
        if hold_at > i:
            self._text(events, data[i:hold_at])
        self._held = data[hold_at:]
        self._held_pos = base + hold_at
        return events

    def close(self) -> list[Event]:
        """End of stream: the held-back tail is text; an open tag is auto-closed. Idempotent."""
        if self._closed:
            return []
        self._closed = True
        events: list[Event] = []
        if self._held:
            self._text(events, self._held)
            self._held_pos += len(self._held)
            self._held = ""
        if self._tag is not None:
            tag, opened_at = self._tag, self._tag_pos
            self._auto_closed.append(tag)
            message = f"<{tag}> opened at {opened_at} was not closed; auto-closed at the end of the stream"
            self._warnings.append(FilamentError(opened_at, message))
            self._close(events, self._held_pos, auto=True)
        return events

    def result(self) -> FilamentResult:
        """The result of the stream so far; an open tag's text so far counts as an occurrence."""
        segments = {tag: list(parts) for tag, parts in self._segments.items()}
        if self._tag is not None:
            segments.setdefault(self._tag, []).append("".join(self._parts))
        return FilamentResult(
            texts={tag: "\n".join(part.strip(_EDGE_WHITESPACE) for part in parts) for tag, parts in segments.items()},
            segments=segments,
            outside="".join(self._outside),
            ops=list(self._ops),
            errors=list(self._errors),
            auto_closed=list(self._auto_closed),
            warnings=list(self._warnings),
        )

    # -- internals --

    def _text(self, events: list[Event], text: str) -> None:
        events.append(Text(self._tag, text))
        if self._tag is None:
            self._outside.append(text)
        else:
            self._parts.append(text)

    def _open(self, events: list[Event], tag: str, pos: int, content_pos: int) -> None:
        self._tag, self._tag_pos, self._content_pos = tag, pos, content_pos
        self._close_token = f"</{tag}>"
        self._parts = []
        events.append(TagOpen(tag, pos))

    def _close(self, events: list[Event], pos: int, *, auto: bool) -> None:
        tag = self._tag
        assert tag is not None
        content = "".join(self._parts)
        self._segments.setdefault(tag, []).append(content)
        if tag == STATE_UPDATE_TAG:
            ops, errors = parse_state_update(content, self._content_pos)
            self._ops.extend(ops)
            self._errors.extend(errors)
        self._tag, self._close_token, self._parts = None, "", []
        events.append(TagClose(tag, pos, auto))


def parse(text: str, tags: Iterable[str] = STANDARD_TAGS) -> FilamentResult:
    """Parse a whole Filament stream (the same as feeding it in any chunks and closing)."""
    parser = FilamentParser(tags)
    parser.feed(text)
    parser.close()
    return parser.result()


# --- <state_update> -------------------------------------------------------------------------------


class _BadJson(Exception):
    def __init__(self, position: int, message: str) -> None:
        super().__init__(message)
        self.position = position
        self.message = message


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_FENCE_OPEN = re.compile(r"\s*```[^\n]*\n")
_FENCE_CLOSE = re.compile(r"\n?```\s*$")


def _loads(text: str) -> Any:
    """json.loads without NaN/Infinity; every failure as _BadJson(position in text, message)."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as error:
        raise _BadJson(error.pos, f"malformed JSON: {error.msg}") from None
    except RecursionError:
        raise _BadJson(0, "malformed JSON: nested too deeply") from None
    except ValueError as error:  # NaN/Infinity, an integer with too many digits
        raise _BadJson(0, f"malformed JSON: {error}") from None


def parse_state_update(content: str, offset: int = 0) -> tuple[list[dict[str, Any]], list[FilamentError]]:
    """Normalise the content of one ``<state_update>`` block: (ops, errors), all or nothing.

    ``offset``: the stream position of ``content[0]``, so that error positions are stream positions.
    """
    body, body_offset = content, offset
    fence = _FENCE_OPEN.match(body)
    if fence:
        closing = _FENCE_CLOSE.search(body, fence.end())
        body_offset += fence.end()
        body = body[fence.end():closing.start() if closing else len(body)]
    if not body.strip():
        return [], []
    errors: list[FilamentError] = []
    values: list[tuple[int, Any]] = []  # (stream position, JSON value)
    try:
        values.append((body_offset + _first_non_space(body), _loads(body)))
    except _BadJson as whole_error:
        lines = _json_lines(body, body_offset)
        if len(lines) > 1 and _parses(lines[0][1]):  # one triple (or op object) per line
            for position, line in lines:
                try:
                    values.append((position, _loads(line)))
                except _BadJson as error:
                    errors.append(_json_error(body, body_offset, position + error.position, error.message))
        else:
            errors.append(_json_error(body, body_offset, body_offset + whole_error.position, whole_error.message))
    ops: list[dict[str, Any]] = []
    index = 0
    one_per_line = len(values) > 1
    for position, value in values:
        items, problem = _items_of(value, one_per_line=one_per_line)
        if problem:
            errors.append(FilamentError(position, f"state_update: {problem}"))
            continue
        for item in items:
            op, problem = _normalise(item)
            if problem:
                errors.append(FilamentError(position, f"state_update op {index} ({_show(item)}): {problem}"))
            else:
                ops.append(op)
            index += 1
    if errors:
        return [], errors
    return ops, []


def normalise_ops(value: Any) -> list[dict[str, Any]]:
    """Normalise an already-decoded state update (list of triples, op objects, or {"ops": [...]}).

    Raises ValueError naming every problem; used by callers that got the JSON some other way.
    """
    items, problem = _items_of(value)
    if problem:
        raise ValueError(problem)
    ops, problems = [], []
    for index, item in enumerate(items):
        op, problem = _normalise(item)
        if problem:
            problems.append(f"op {index} ({_show(item)}): {problem}")
        else:
            ops.append(op)
    if problems:
        raise ValueError("; ".join(problems))
    return ops


def _json_error(body: str, body_offset: int, position: int, message: str) -> FilamentError:
    """A JSON error at stream ``position``, with its line and column in the block."""
    relative = position - body_offset
    line = body.count("\n", 0, relative) + 1
    column = relative - (body.rfind("\n", 0, relative) + 1) + 1
    return FilamentError(position, f"state_update: {message} (line {line}, column {column} of the block)")


def _first_non_space(text: str) -> int:
    return len(text) - len(text.lstrip())


def _json_lines(body: str, offset: int) -> list[tuple[int, str]]:
    """The non-blank lines of ``body`` with their stream positions, a trailing comma dropped."""
    lines = []
    position = offset
    for line in body.splitlines(keepends=True):
        stripped = line.strip()
        if stripped:
            lead = len(line) - len(line.lstrip())
            lines.append((position + lead, stripped.removesuffix(",").rstrip()))
        position += len(line)
    return lines


def _parses(text: str) -> bool:
    try:
        value = _loads(text)
    except _BadJson:
        return False
    return isinstance(value, (list, dict))


def _items_of(value: Any, *, one_per_line: bool = False) -> tuple[list[Any], str | None]:
    """The op items of one decoded JSON value, or an explanation. A lone op object is an item only
    as one line of a one-op-per-line block."""
    if isinstance(value, list):
        if value and isinstance(value[0], str):  # a single triple
            return [value], None
        return value, None
    if isinstance(value, dict):
        if "ops" in value:
            if not isinstance(value["ops"], list):
                return [], f'"ops" must be an array, got {_json_type(value["ops"])}'
            return value["ops"], None
        if "op" in value and one_per_line:
            return [value], None
        if "op" in value:
            return [], 'a lone op object; Filament v2 wants a JSON array of [OP, path, value] triples'
        return [], 'expected an array of [OP, path, value] triples or an object with "ops"'
    return [], f"expected an array of [OP, path, value] triples, got {_json_type(value)}"


def _normalise(item: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(item, list):
        return _normalise_triple(item)
    if isinstance(item, dict):
        return _normalise_object(item)
    return {}, f"expected an [OP, path, value] triple or an op object, got {_json_type(item)}"


def _normalise_triple(item: list[Any]) -> tuple[dict[str, Any], str | None]:
    if not item or not isinstance(item[0], str):
        return {}, "the first element of a triple must be the op name, a string"
    code = item[0]
    name = code.lower()
    if name not in _FILAMENT_OPS:
        return {}, f"unknown op {code!r}, expected one of {_FILAMENT_OP_NAMES}"
    arity = (3, 4) if name == "foreshadow" else (3,)
    if len(item) not in arity:
        shape = "[FORESHADOW, id, status] or [FORESHADOW, id, status, detail]" if name == "foreshadow" \
            else f"[{code}, path, value]"
        return {}, f"expected {shape}, got {len(item)} elements"
    path, value = item[1], item[2]
    if not isinstance(path, str) or not path:
        return {}, f"the path must be a non-empty string, got {_json_type(path)}"
    if name in ("add", "inc") and not _is_number(value):
        if name == "add":
            return {}, (f"ADD adds a number to a counter, but {json.dumps(value, ensure_ascii=False)} is not a "
                        "number; use PUSH to append to an array or SET to replace a value")
        return {}, f"INC needs a number, got {_json_type(value)}"
    if name == "foreshadow":
        if not isinstance(value, str):
            return {}, f"the foreshadow status must be a string (planted, advanced, resolved), got {_json_type(value)}"
        op: dict[str, Any] = {"op": "foreshadow", "path": path, "value": value.lower()}
        if len(item) == 4 and item[3] is not None:
            if not isinstance(item[3], str):
                return {}, f"the foreshadow detail must be a string, got {_json_type(item[3])}"
            op["detail"] = item[3]
        return op, None
    return {"op": _FILAMENT_OPS[name], "path": path, "value": value}, None


def _normalise_object(item: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    name = item.get("op")
    if not isinstance(name, str):
        return {}, 'an op object needs "op", a string'
    if name.lower() not in KNOWN_OPS:
        return {}, f"unknown op {name!r}, expected one of {', '.join(KNOWN_OPS)}"
    unknown = [key for key in item if key not in _OP_OBJECT_KEYS]
    if unknown:
        return {}, f"unexpected key(s) {', '.join(map(repr, unknown))}; an op object has {', '.join(_OP_OBJECT_KEYS)}"
    path = item.get("path")
    if not isinstance(path, str) or not path:
        return {}, f"the path must be a non-empty string, got {_json_type(path)}"
    if "value" not in item:
        return {}, 'missing "value"'
    if "detail" in item and not isinstance(item["detail"], str):
        return {}, f"the detail must be a string, got {_json_type(item['detail'])}"
    return {**item, "op": name.lower()}, None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
             dict: "an object"}
    return kinds.get(type(value), type(value).__name__)


def _show(item: Any) -> str:
    text = json.dumps(item, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."
