"""Validate a JSON value against one of ``projects.schemas``, with errors that name the JSON path.

One entry point for every write path: the model field (``full_clean``), services, API
serializers and the importer. A message reads ``style_profile: $.dialogue_ratio: 3 is greater
than the maximum of 1``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError

from projects import schemas
from projects.errors import InvalidData

MAX_REPORTED_ISSUES = 5


@dataclass(frozen=True)
class JsonIssue:
    path: str  # JSONPath-like, "$" for the root
    message: str
    location: tuple[str | int, ...] = ()  # the same path as keys and indexes

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def json_path(parts) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


@cache
def _validator(schema_name: str) -> Draft202012Validator:
    schema = schemas.SCHEMAS[schema_name]
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _deepest(error: SchemaError) -> SchemaError:
    # For anyOf/oneOf, the useful message is in the branch that got furthest into the data.
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.schema_path)))
    return error


def json_issues(schema_name: str, value: Any) -> list[JsonIssue]:
    """All schema violations of ``value``, most specific first, at most a handful."""
    errors = sorted(_validator(schema_name).iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    issues = []
    for error in errors[:MAX_REPORTED_ISSUES]:
        leaf = _deepest(error)
        issues.append(JsonIssue(json_path(leaf.absolute_path), leaf.message, tuple(leaf.absolute_path)))
    return issues


def validate_json(schema_name: str, value: Any, *, label: str | None = None) -> None:
    """Raise ``InvalidData`` naming the field and JSON path when ``value`` breaks its schema."""
    issues = json_issues(schema_name, value)
    if issues:
        label = label or schema_name.lower()
        text = "; ".join(str(issue) for issue in issues)
        raise InvalidData(
            f"{label}: {text}",
            extra={"field": label, "errors": [{"path": i.path, "message": i.message} for i in issues]},
        )
