"""JSON from outside (an API body, a JSON textarea of a web or admin form), checked before anything
else sees it: nested at most ``MAX_JSON_DEPTH`` levels (a deeper document makes the parser, the
schema validator or the encoder recurse until Python gives up: a 500), and no string that
PostgreSQL cannot store (a NUL character, an unpaired surrogate)."""
from __future__ import annotations

import json
from typing import Any

from projects.errors import InvalidData

MAX_JSON_DEPTH = 64  # our deepest schema (a blackboard) is about 6 levels; this leaves room for free-form JSON


def json_problem(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``value`` (parsed JSON) may not be accepted, or None. Iterative, so any depth is safe."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                return problem
        elif isinstance(item, (dict, list)):
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, child in item.items():
                    problem = _string_problem(key) if isinstance(key, str) else None
                    if problem:
                        return problem
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def _string_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (\\ud800-\\udfff), which is not valid text"
    return None


def json_loads_checked(text: str | bytes) -> Any:
    """``json.loads`` with the checks above; InvalidData (400) says what is wrong."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidData(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:
        raise InvalidData(f"not valid JSON: {exc}") from exc
    problem = json_problem(value)
    if problem:
        raise InvalidData(f"JSON {problem}")
    return value
