"""Apply state deltas (the Summarizer's "state patch") to the story state, all or nothing.

Pure Python: no Django, no database. The format and the op semantics come from seed 000 §9.2
("状态变更 Patch") and facts §10.8; the forbidden path segments from facts §1.

Where novel-writer-cli drops an invalid or colliding op with a warning (facts §10.8), Novelsite
refuses the WHOLE delta by raising a ``PatchError``: a silently half-applied patch would let the
stored state drift from the chapter text without anyone noticing. Every error names the op index
and the rule it broke, so the Summarizer (or a human) can fix the delta and try again.
"""
from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable
from typing import Any

from projects.errors import NovelsiteError
from projects.json_validation import JsonIssue, json_issues, json_path
from projects.schemas import FORESHADOW_STATUSES, SLUG_PATTERN, STATE_TOP_LEVEL_OP_KEYS

FORBIDDEN_SEGMENTS = frozenset({"__proto__", "constructor", "prototype"})  # facts §1
MIN_PATH_DEPTH = 2  # facts §10.8
MAX_PATH_DEPTH = 4
MAX_FORESHADOW_ID_LENGTH = 200  # same bound as a foreshadow plan item id (schemas._FORESHADOW_PLAN_ITEM)
PATH_OPS = ("set", "add", "remove", "inc")
KNOWN_OPS = (*PATH_OPS, "foreshadow")

_MISSING = object()


def empty_state() -> dict[str, Any]:
    """A fresh state for a project with no committed chapter (a new dict each call)."""
    return {
        "schema_version": 1,
        "state_version": 0,
        "last_updated_chapter": 0,
        "characters": {},
        "world_state": {},
        "active_foreshadowing": [],
    }


# --- Errors ---------------------------------------------------------------------------------------


class PatchError(NovelsiteError):
    """The state delta cannot be applied."""

    code = "invalid_patch"
    http_status = 400
    rule = "invalid_patch"

    def __init__(
        self,
        message: str = "",
        *,
        op_index: int | None = None,
        rule: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.op_index = op_index
        self.rule = rule or type(self).rule
        super().__init__(message, extra={**(extra or {}), "op_index": op_index, "rule": self.rule})


class StalePatch(PatchError):
    """The delta was written against another state version; re-run the Summarizer."""

    code = "stale_state_version"
    http_status = 409
    rule = "stale_state_version"


class MalformedDelta(PatchError):
    """The delta does not have the shape of a state delta."""

    rule = "malformed_delta"


class UnknownOp(PatchError):
    """The op is not one of set, add, remove, inc, foreshadow."""

    rule = "unknown_op"


class ForbiddenPath(PatchError):
    """A path segment is __proto__, constructor or prototype."""

    rule = "forbidden_segment"


class EmptyPathSegment(PatchError):
    """A path has an empty segment."""

    rule = "empty_segment"


class PathDepthError(PatchError):
    """A path has fewer than 2 or more than 4 segments."""

    rule = "path_depth"


class TopLevelError(PatchError):
    """A path starts outside the keys an op may touch."""

    rule = "top_level"


class PathCollision(PatchError):
    """A path runs into a value of the wrong type."""

    rule = "path_collision"


class BadOpValue(PatchError):
    """An op's value is missing or unusable."""

    rule = "bad_value"


class StateSchemaError(PatchError):
    """The state does not match the story state schema."""

    rule = "state_schema"


# --- Public API -----------------------------------------------------------------------------------


def apply_delta(state: dict[str, Any], delta: dict[str, Any], *, state_checked: bool = False) -> dict[str, Any]:
    """Return the state after ``delta``; raise a ``PatchError`` and change nothing if any op fails.

    Neither argument is mutated: the work happens on deep copies, so a failure half-way
    leaves no trace (all-or-nothing, unlike the CLI's drop-and-warn, facts §10.8).
    ``state_checked`` skips re-validating an input that a previous apply_delta returned.
    """
    if not state_checked:
        _check_state(state, rule="stored_state_schema", context="stored state")
    _check_delta_shape(delta)
    base = delta["base_state_version"]
    if base != state["state_version"]:  # seed 000 §9.2: checked before writing anything
        raise StalePatch(
            f"delta base_state_version {base} does not match state_version {state['state_version']}",
            extra={"base_state_version": base, "state_version": state["state_version"]},
        )
    new_state = copy.deepcopy(state)
    ops = copy.deepcopy(delta["ops"])  # values inserted into the state must not alias the delta
    for index, op in enumerate(ops):
        _apply_op(new_state, index, op)
    new_state["state_version"] = base + 1  # seed 000 §9.2: state_version += 1
    new_state["last_updated_chapter"] = delta["chapter"]
    _check_result(new_state, ops)
    return new_state


def replay(deltas: Iterable[dict[str, Any]], start: dict[str, Any] | None = None) -> dict[str, Any]:
    """Apply ``deltas`` in order (e.g. the lines of changelog.jsonl) from ``start`` or an empty state."""
    state = empty_state() if start is None else start
    for position, delta in enumerate(deltas):
        try:  # every state after the first came out of apply_delta, already validated
            state = apply_delta(state, delta, state_checked=position > 0)
        except PatchError as error:  # say which delta of the sequence failed
            raise type(error)(
                f"delta {position}: {error.message}",
                op_index=error.op_index,
                rule=error.rule,
                extra={**error.extra, "delta_index": position},
            ) from error
    return state


def foreshadow_ops(delta: dict[str, Any]) -> list[dict[str, Any]]:
    """The foreshadow ops of ``delta``, in order (copies), for the foreshadowing ledger (facts §10.9)."""
    ops = delta.get("ops") if isinstance(delta, dict) else None
    if not isinstance(ops, list):
        return []
    return [copy.deepcopy(op) for op in ops if isinstance(op, dict) and op.get("op") == "foreshadow"]


# --- Delta and state validation -------------------------------------------------------------------


def _check_delta_shape(delta: Any) -> None:
    if not isinstance(delta, dict):
        raise MalformedDelta(f"malformed delta at $: expected an object, got {type(delta).__name__}")
    _check_unknown_ops(delta.get("ops"))  # before the schema, whose enum would hide the op name
    issues = json_issues("STATE_DELTA", delta)
    if issues:
        issue = issues[0]
        index = _op_index_of_json_path(issue.path)
        prefix = f"op {index}: " if index is not None else ""
        raise MalformedDelta(f"{prefix}malformed delta at {issue}", op_index=index)
    for key in ("chapter", "base_state_version"):
        # JSON Schema counts 48.0 as an integer; a version number must be a real int.
        if type(delta[key]) is not int:
            raise MalformedDelta(f"malformed delta at $.{key}: {delta[key]!r} is not an integer")
    # The schema pattern goes through re.search, where "$" also matches before a final newline.
    if not re.fullmatch(SLUG_PATTERN.removeprefix("^").removesuffix("$"), delta["storyline_id"]):
        raise MalformedDelta(f"malformed delta at $.storyline_id: {delta['storyline_id']!r} is not a slug")


def _check_unknown_ops(ops: Any) -> None:
    if not isinstance(ops, list):
        return
    for index, op in enumerate(ops):
        name = op.get("op") if isinstance(op, dict) else None
        if isinstance(name, str) and name not in KNOWN_OPS:
            raise UnknownOp(
                f"op {index} ({_describe(op)}): unknown op {name!r}, expected one of {', '.join(KNOWN_OPS)}",
                op_index=index,
            )


def _op_index_of_json_path(path: str) -> int | None:
    match = re.match(r"^\$\.ops\[(\d+)\]", path)
    return int(match.group(1)) if match else None


def _check_state(state: Any, *, rule: str, context: str) -> None:
    """Reject a stored state that is already corrupt (op_index None: no op is to blame)."""
    if not isinstance(state, dict):
        raise StateSchemaError(f"{context} at $: expected an object, got {type(state).__name__}", rule=rule)
    issues = json_issues("STORY_STATE", state)
    if issues:
        raise StateSchemaError(f"{context} breaks the schema at {issues[0]}", rule=rule)


def _check_result(new_state: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    issues = json_issues("STORY_STATE", new_state)
    if not issues:
        return
    issue = issues[0]
    index = _last_op_touching(ops, issue)
    prefix = f"op {index} ({_describe(ops[index])}): " if index is not None else ""
    raise StateSchemaError(f"{prefix}resulting state breaks the schema at {issue}", op_index=index)


def _last_op_touching(ops: list[dict[str, Any]], issue: JsonIssue) -> int | None:
    """The op to blame: the last one that wrote at or above the error path, else the last one
    below it (a ``propertyNames`` error sits on the parent object; prefer the op whose key the
    message quotes)."""
    above, below, quoted = None, None, None
    for index, op in enumerate(ops):
        op_path = _json_path_of_op(op)
        if _is_path_prefix(op_path, issue.path):
            above = index
        elif _is_path_prefix(issue.path, op_path):
            below = index
            key = op_path[len(issue.path) + 1:].split(".")[0].split("[")[0]
            if repr(key) in issue.message:
                quoted = index
    return next((i for i in (above, quoted, below) if i is not None), None)


def _json_path_of_op(op: dict[str, Any]) -> str:
    if op["op"] == "foreshadow":
        return json_path(["active_foreshadowing"])
    return json_path(op["path"].split("."))


def _is_path_prefix(prefix: str, path: str) -> bool:
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


# --- Ops ------------------------------------------------------------------------------------------


def _describe(op: dict[str, Any]) -> str:
    return f"{op.get('op')} {op.get('path')}"


def _apply_op(state: dict[str, Any], index: int, op: dict[str, Any]) -> None:
    if op["op"] == "foreshadow":
        _apply_foreshadow(state, index, op)
        return
    segments = _check_path(index, op)
    if op["op"] == "remove":
        _apply_remove(state, index, op, segments)
        return
    value = _require_value(index, op)
    container = _walk(state, index, op, segments[:-1], create=True)
    key = segments[-1]
    if op["op"] == "set":
        container[key] = value
    elif op["op"] == "add":
        _apply_add(container, key, index, op, value)
    else:
        _apply_inc(container, key, index, op, value)


def _fail(error_class: type[PatchError], index: int, op: dict[str, Any], reason: str, **kwargs: Any) -> PatchError:
    return error_class(f"op {index} ({_describe(op)}): {reason}", op_index=index, **kwargs)


def _check_path(index: int, op: dict[str, Any]) -> list[str]:
    """Path rules of facts §10.8 (and §1); the forbidden segments first, so they always show."""
    segments = op["path"].split(".")
    for segment in segments:
        if segment in FORBIDDEN_SEGMENTS:
            raise _fail(ForbiddenPath, index, op, f'forbidden path segment "{segment}"')
    if any(segment == "" for segment in segments):
        raise _fail(EmptyPathSegment, index, op, "empty path segment")
    if not MIN_PATH_DEPTH <= len(segments) <= MAX_PATH_DEPTH:
        raise _fail(
            PathDepthError, index, op,
            f"path depth {len(segments)} is outside {MIN_PATH_DEPTH}..{MAX_PATH_DEPTH}",
        )
    if segments[0] not in STATE_TOP_LEVEL_OP_KEYS:
        raise _fail(
            TopLevelError, index, op,
            f"top-level key {segments[0]!r} is not one of {', '.join(STATE_TOP_LEVEL_OP_KEYS)}",
        )
    return segments


def _require_value(index: int, op: dict[str, Any]) -> Any:
    value = op.get("value", _MISSING)
    if value is _MISSING:
        raise _fail(BadOpValue, index, op, "missing value", rule="missing_value")
    if op["op"] == "inc":  # facts §10.8: a finite number; bool is not a number here
        if not (_is_number(value) and _is_finite(value)):
            raise _fail(BadOpValue, index, op, f"inc value {value!r} is not a finite number", rule="inc_value")
    elif not _is_json_value(value):
        # The state is stored as JSON (JSONB refuses NaN); keep it storable.
        raise _fail(BadOpValue, index, op, f"value {value!r} is not a plain JSON value", rule="not_json")
    return value


def _is_json_value(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json_value(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _is_json_value(item) for key, item in value.items())
    return False


def _walk(
    state: dict[str, Any], index: int, op: dict[str, Any], segments: list[str], *, create: bool
) -> dict[str, Any] | None:
    """The object at ``segments``; missing objects are created (facts §10.8) or, if not ``create``, None."""
    node: dict[str, Any] = state
    for depth, segment in enumerate(segments):
        if segment not in node:
            if not create:
                return None
            node[segment] = {}
        node = node[segment]
        if not isinstance(node, dict):
            where = ".".join(segments[: depth + 1])
            raise _fail(PathCollision, index, op, f"{where} is {_kind(node)}, not an object")
    return node


def _kind(value: Any) -> str:
    """'an array', 'a string'…, for messages."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def _apply_add(container: dict[str, Any], key: str, index: int, op: dict[str, Any], value: Any) -> None:
    target = container.setdefault(key, [])  # facts §10.8: the array is created if missing
    if not isinstance(target, list):
        raise _fail(PathCollision, index, op, f"target is {_kind(target)}, not an array")
    target.append(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite(value: int | float) -> bool:
    # math.isfinite would convert a huge int to float and overflow; ints are always finite.
    return isinstance(value, int) or math.isfinite(value)


def _apply_inc(container: dict[str, Any], key: str, index: int, op: dict[str, Any], value: Any) -> None:
    current = container.get(key, 0)  # facts §10.8: the base defaults to 0
    if not _is_number(current):
        raise _fail(PathCollision, index, op, f"target is {_kind(current)}, not a number")
    try:
        result = current + value  # int + int stays an int
    except OverflowError:  # a huge int plus a float
        result = math.inf
    if not _is_finite(result):
        raise _fail(BadOpValue, index, op, f"inc overflows to {result}", rule="inc_value")
    container[key] = result


def _apply_remove(state: dict[str, Any], index: int, op: dict[str, Any], segments: list[str]) -> None:
    """Delete the first strictly-equal element (facts §10.8). Nothing to delete (no such element, no
    array yet) is a no-op, as in the tool: it harms nothing, and refusing it would send the whole
    delta back to the model. Only a target that is not an array is refused."""
    value = _require_value(index, op)
    container = _walk(state, index, op, segments[:-1], create=False)
    target = _MISSING if container is None else container.get(segments[-1], _MISSING)
    if target is _MISSING:
        return
    if not isinstance(target, list):
        raise _fail(BadOpValue, index, op, f"target is {_kind(target)}, not an array", rule="remove_not_array")
    for position, item in enumerate(target):
        if strict_equal(item, value):
            del target[position]
            return


def strict_equal(left: Any, right: Any) -> bool:
    """Equality that also compares types, so 1, 1.0 and True are three different values."""
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(map(strict_equal, left, right))
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(strict_equal(left[key], right[key]) for key in left)
    return left == right


def _apply_foreshadow(state: dict[str, Any], index: int, op: dict[str, Any]) -> None:
    """Keep active_foreshadowing in step (seed 000 §9.2); the ledger itself lives elsewhere."""
    foreshadow_id = op["path"]
    for segment in foreshadow_id.split("."):
        if segment in FORBIDDEN_SEGMENTS:
            raise _fail(ForbiddenPath, index, op, f'forbidden path segment "{segment}"')
    if len(foreshadow_id) > MAX_FORESHADOW_ID_LENGTH:
        raise _fail(
            BadOpValue, index, op,
            f"foreshadow id is {len(foreshadow_id)} characters, more than {MAX_FORESHADOW_ID_LENGTH}",
            rule="foreshadow_id",
        )
    status = op.get("value", _MISSING)
    if status not in FORESHADOW_STATUSES:  # strings only: the tuple holds strings
        shown = "missing" if status is _MISSING else repr(status)
        raise _fail(
            BadOpValue, index, op,
            f"foreshadow value {shown} is not one of {', '.join(FORESHADOW_STATUSES)}",
            rule="foreshadow_status",
        )
    active = state["active_foreshadowing"]
    if status == "resolved":
        if foreshadow_id in active:
            active.remove(foreshadow_id)
    elif foreshadow_id not in active:
        active.append(foreshadow_id)
