"""User-supplied Markdown (character profiles, world documents, research notes) as safe HTML.

Python-Markdown renders; nh3 (the Ammonia sanitizer) then keeps only an allowlist of tags and
attributes, so raw HTML in the source (``<script>``, ``onerror=``, ``javascript:`` links) never
reaches a page. The result goes into a template as it is; no other user text is ever marked safe.
"""
from __future__ import annotations

import markdown as python_markdown
import nh3
from django.utils.safestring import SafeString, mark_safe

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i",
    "li", "ol", "p", "pre", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
})
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "abbr": {"title"}, "td": {"align"}, "th": {"align"}}
ALLOWED_URL_SCHEMES = frozenset({"http", "https", "mailto"})
MAX_SOURCE_CHARS = 500_000  # a world document is long; a megabyte of Markdown is an attack


def render_markdown(text: str | None) -> SafeString:
    """``text`` as sanitized HTML, safe to put in a template as it is."""
    source = (text or "")[:MAX_SOURCE_CHARS]
    html = python_markdown.markdown(source, extensions=["tables", "fenced_code", "sane_lists"],
                                    output_format="html")
    clean = nh3.clean(html, tags=set(ALLOWED_TAGS), attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
                      url_schemes=set(ALLOWED_URL_SCHEMES), link_rel="noopener noreferrer nofollow")
    return mark_safe(clean)  # noqa: S308 - nh3 removed everything outside the allowlist
