"""What django-jsonform's editor is given for a schema of ``projects.schemas``, and what its output
means when it comes back.

The schemas in ``projects.schemas`` are written for validation (draft 2020-12). The editor
(react-json-form) reads a narrower dialect: every array needs ``items``, every object ``properties``,
a value must have a type, ``null`` is not a type of its own, and ``propertyNames``/``contains``
are unknown. ``editor_schema`` translates; validation keeps using the original schema.

The editor also changes data it never showed the user. On load it fills every declared property
the value lacks (``""``, ``null``, ``[]``, ``{}``, arrays padded to ``minItems``) and replaces an
enum value it does not know, or a null one, with ``""``. ``merge_editor_output`` undoes that against
the value the form started from, so a save that changed nothing stores exactly what was there.
A value the editor cannot show faithfully (a free-form key holding an object, a list of numbers
where the form expects text) is edited as plain JSON instead: ``fits_editor`` tells which.
"""
from __future__ import annotations

import copy
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from projects import schemas
from projects.json_validation import JsonIssue

Schema = dict[str, Any]
EDITOR_HINT = "x-editor"

# Keywords that only constrain values: the server checks them; the editor ignores or misreads them.
_VALUE_ONLY_KEYWORDS = ("propertyNames", "contains", "uniqueItems", "format", "$schema")
# A value the schema leaves open (``{}``): text, a number or yes/no are what a form can show.
_ANY_SCALAR: Schema = {
    "anyOf": [
        {"type": "string", "title": "text"},
        {"type": "number", "title": "number"},
        {"type": "boolean", "title": "yes / no"},
    ]
}


def _first_type(node: Schema) -> str | None:
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def _to_editor(node: Schema) -> Schema:
    # "x-editor" in a schema (ignored by validation) says how the form should draw a value the
    # schema leaves open, e.g. a map of names to objects.
    hint = node.get(EDITOR_HINT, {})
    node = {**node, **hint, "properties": {**node.get("properties", {}), **hint.get("properties", {})}}
    if not node["properties"]:
        del node["properties"]
    node = {k: v for k, v in node.items() if k not in _VALUE_ONLY_KEYWORDS and k != EDITOR_HINT}
    for key in ("anyOf", "oneOf"):
        if key in node:
            branches = [b for b in node[key] if b.get("type") != "null"]
            if len(branches) == 1:  # "X or null" is X for a form; a blank field means null
                del node[key]
                node = {**_to_editor(branches[0]), **{k: v for k, v in node.items() if k != "title"},
                        **({"title": node["title"]} if "title" in node else {})}
            else:
                node[key] = [_to_editor(b) for b in branches]
    if "enum" in node:
        node["enum"] = [v for v in node["enum"] if v is not None]
    kind = _first_type(node)
    if kind is None and not any(k in node for k in ("anyOf", "oneOf", "const", "properties", "items")):
        return {**_ANY_SCALAR, **{k: v for k, v in node.items() if k == "title"}}
    if kind is not None:
        node["type"] = kind
    if kind == "object" or "properties" in node:
        node["properties"] = {name: _to_editor(sub) for name, sub in node.get("properties", {}).items()}
        extra = node.pop("additionalProperties", None)
        if isinstance(extra, dict):
            node["additionalProperties"] = _to_editor(extra)
        elif not node["properties"] and extra is not False:
            node["additionalProperties"] = True  # a free-form object: keys of text
        # Otherwise keys the schema does not declare are not drawn: the editor keeps them as they
        # are, where drawing them would show every one as text.
    if kind == "array":
        node["items"] = _to_editor(node.get("items") or {"type": "string"})
    return node


@cache
def editor_schema(schema_name: str) -> Schema:
    """The schema django-jsonform draws for ``schema_name`` (a fresh copy is safe to mutate)."""
    return _to_editor(copy.deepcopy(schemas.SCHEMAS[schema_name]))


def _shape(node: Schema) -> Schema:
    """The editor schema as a check of what the editor can show: types, keys and choices, without
    the limits a user is there to fix (lengths, ranges, required keys)."""
    out: Schema = {}
    for key, value in node.items():
        if key in ("anyOf", "oneOf"):
            out["anyOf"] = [_shape(b) for b in value]
        elif key == "properties":
            out[key] = {name: _shape(sub) for name, sub in value.items()}
        elif key == "items":
            out[key] = _shape(value)
        elif key == "additionalProperties":
            # drawn keys: a free-form object (True) shows each of its keys as a text box
            out[key] = _shape(value) if isinstance(value, dict) else {"type": "string"}
        elif key in ("type", "enum", "const"):
            out[key] = value
    # Null fits anywhere: the form shows it blank, and merge_editor_output gives it back unchanged.
    if "enum" in out or "const" in out or "anyOf" in out:
        return {"anyOf": [out, {"type": "null"}]}
    if "type" in out:
        out["type"] = [out["type"], "null"]
    return out


@cache
def _shape_validator(schema_name: str) -> Draft202012Validator:
    return Draft202012Validator(_shape(editor_schema(schema_name)))


def fits_editor(schema_name: str, value: Any) -> bool:
    """Can the form editor show ``value`` without changing it? Empty values always fit."""
    if value in (None, {}, []):
        return True
    return _shape_validator(schema_name).is_valid(value)


def _is_blank(value: Any) -> bool:
    """What the editor puts where nothing was: empty text, null, and containers of those."""
    if value is None or value == "":
        return True
    if isinstance(value, dict):
        return all(_is_blank(v) for v in value.values())
    if isinstance(value, list):
        return all(_is_blank(v) for v in value)
    return False


_ABSENT = object()


def _merge(value: Any, initial: Any, node: Schema) -> Any:
    if _is_blank(value) and initial is not _ABSENT and _is_blank(initial):
        return copy.deepcopy(initial)  # untouched, or emptied to what it was: keep it as it was
    if isinstance(value, dict):
        before = initial if isinstance(initial, dict) else {}
        properties = node.get("properties", {})
        required = set(node.get("required", ()))
        extra = node.get("additionalProperties")
        merged = {}
        for key, sub in value.items():
            old = before.get(key, _ABSENT)
            if old is _ABSENT and _is_blank(sub) and key not in required:
                continue  # a placeholder the editor added for an optional key
            child = properties.get(key) or (extra if isinstance(extra, dict) else {})
            merged[key] = _merge(sub, old, child)
        return merged
    if isinstance(value, list):
        before = initial if isinstance(initial, list) else []
        items = node.get("items", {})
        return [_merge(sub, before[i] if i < len(before) else _ABSENT, items) for i, sub in enumerate(value)]
    if value == "" and (_first_type(node) in ("integer", "number", "boolean") or "enum" in node):
        return None  # a cleared number or choice means "no value", not an empty string
    return value


def merge_editor_output(schema_name: str, value: Any, initial: Any) -> Any:
    """The value to store for what the editor posted, given the value the form started from.

    Placeholders the editor added for optional keys are dropped, blank values the user did not
    fill keep the spelling they had (``null`` stays ``null``), and the rest is the user's. Starting
    from nothing (``None``: a new object, or an empty nullable field), a post that is still blank
    is ``None`` again.
    """
    node = schemas.SCHEMAS[schema_name]
    if initial is None and _is_blank(value):
        return None
    if initial is None:
        initial = _ABSENT
    return _merge(value, initial, _resolve(node, value))


def _resolve(node: Schema, value: Any) -> Schema:
    """The branch of a top-level ``anyOf`` that describes ``value`` (for required keys)."""
    for branch in node.get("anyOf", ()):
        kind = _first_type(branch)
        if (kind == "object" and isinstance(value, dict)) or (kind == "array" and isinstance(value, list)):
            return branch
    return node


def editor_error_map(issues: list[JsonIssue]) -> dict[str, list[str]]:
    """Schema errors keyed the way the editor places them next to the field they concern."""
    from django_jsonform.utils import join_coords

    errors: dict[str, list[str]] = {}
    for issue in issues:
        errors.setdefault(join_coords(*issue.location), []).append(issue.message)
    return errors
