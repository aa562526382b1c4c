"""JSON documents (the story state, a storyline schedule, a chapter contract, check findings …) as
HTML a reader can read: objects as definition lists, lists of objects with the same keys as tables,
lists of plain values as lists. No braces or quotes reach the page; every string is escaped.

Keys are shown through the ``field`` labels (``projects.labels``) and, when ``names`` maps an id to
a display name (a character's slug to 林枫), as that name; the raw key stays in ``title``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from projects.labels import label, yes_no

MAX_DEPTH = 8  # deeper than this is shown as text: a reading view, not an editor
MAX_ITEMS = 200  # a list longer than this is cut (the raw JSON stays in the "advanced" details)
VALUE_KINDS = {  # a key whose plain value is a code of a known vocabulary (projects.labels)
    "status": "check_status", "confidence": "confidence", "scope": "foreshadow_scope",
    "constraint_type": "constraint", "excitement_type": "excitement", "type": "objective_type",
    "canon_status": "canon", "severity": "confidence",
}


def json_as_html(value: Any, *, names: Mapping[str, str] | None = None) -> SafeString:
    """``value`` as escaped HTML (``dl``/``table``/``ul``); see the module docstring."""
    return mark_safe(_render(value, names or {}, 0))  # noqa: S308 - every piece is escaped in _render


def _key(key: Any, names: Mapping[str, str]) -> str:
    text = str(key)
    shown = names.get(text) or label("field", text)
    if shown == text:
        return escape(text)
    return format_html('<span title="{}">{}</span>', text, shown)


def _scalar(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return escape(yes_no(value))
    return escape(str(value))


def _value(key: Any, value: Any, names: Mapping[str, str], depth: int) -> str:
    """A value under ``key``: a code of a known vocabulary as its label (the code in ``title``)."""
    kind = VALUE_KINDS.get(str(key))
    if kind and isinstance(value, str) and value:
        shown = label(kind, value)
        if shown != value:
            return format_html('<span title="{}">{}</span>', value, shown)
    return _render(value, names, depth)


def _render(value: Any, names: Mapping[str, str], depth: int) -> str:
    if depth >= MAX_DEPTH:
        return escape(str(value))
    if isinstance(value, Mapping):
        if not value:
            return "—"
        rows = "".join(f"<dt>{_key(k, names)}</dt><dd>{_value(k, v, names, depth + 1)}</dd>" for k, v in value.items())
        return f'<dl class="data">{rows}</dl>'
    if isinstance(value, (list, tuple)):
        return _list(list(value), names, depth)
    return _scalar(value)


def _list(items: list[Any], names: Mapping[str, str], depth: int) -> str:
    if not items:
        return "—"
    more = len(items) - MAX_ITEMS
    items = items[:MAX_ITEMS]
    tail = f'<p class="muted">{escape(_("… and %(n)d more") % {"n": more})}</p>' if more > 0 else ""
    if all(not isinstance(i, (Mapping, list, tuple)) for i in items):
        if all(isinstance(i, (int, float)) and not isinstance(i, bool) for i in items) and len(items) <= 4:
            return " – ".join(_scalar(i) for i in items) + tail  # a range such as [10, 20]
        return ("<ul class=\"data\">" + "".join(f"<li>{_render(i, names, depth + 1)}</li>" for i in items)
                + "</ul>" + tail)
    keys = list(dict.fromkeys(k for i in items if isinstance(i, Mapping) for k in i))
    if all(isinstance(i, Mapping) for i in items) and len(keys) <= 8:
        head = "".join(f"<th>{_key(k, names)}</th>" for k in keys)
        body = "".join("<tr>" + "".join(f"<td>{_value(k, i.get(k), names, depth + 1)}</td>" for k in keys) + "</tr>"
                       for i in items)
        return f'<table class="list data"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>' + tail
    return "<ul class=\"data\">" + "".join(f"<li>{_render(i, names, depth + 1)}</li>" for i in items) + "</ul>" + tail
