"""Template filters for human words (``projects.labels``), sanitised Markdown
(``projects.markdown``) and JSON documents as tables and lists (``projects.json_display``).

    {% load words %}
    {{ project.orchestrator_state|label:"state" }}      → 写作中
    {{ q.step|coded:"step" }}                           → <span title="chapter:004:draft" data-code="…">
                                                          第 4 章 · 起草</span>
    {{ summary.text|markdown }}                         → sanitised HTML
    {{ contract.data|as_data }}                         → <dl>/<table>/<ul>, never braces
"""
from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

from projects.json_display import json_as_html
from projects.labels import label as label_of
from projects.markdown import render_markdown

register = template.Library()


@register.filter
def label(code: Any, kind: str) -> str:
    """The translated label of ``code`` in the vocabulary ``kind``; the code when unknown."""
    return label_of(kind, code)


@register.filter
def coded(code: Any, kind: str) -> SafeString:
    """The label in a span that keeps the raw code in ``title`` (a tooltip) and ``data-code``."""
    if code is None or code == "":
        return format_html("{}", "—")
    return format_html('<span title="{}" data-code="{}">{}</span>', code, code, label_of(kind, code))


@register.filter
def markdown(text: str | None) -> SafeString:
    return render_markdown(text)


@register.filter
def as_data(value: Any, names: dict[str, str] | None = None) -> SafeString:
    """A JSON value as definition lists, tables and lists; ``names`` maps ids to display names."""
    return json_as_html(value, names=names if isinstance(names, dict) else None)


@register.filter
def paragraphs(text: str | None) -> list[str]:
    """The non-empty lines of a chapter's text, each a paragraph of the reader."""
    return [line.strip() for line in (text or "").split("\n") if line.strip()]


@register.filter
def pretty_json(value: Any) -> str:
    """A JSON value as indented text, for the "advanced" details beside a readable view."""
    import json

    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)
