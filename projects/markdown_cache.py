"""Rendered Markdown, cached per object version (#15: rendering a 480,000-character world document
takes ~1.7 s; the world page rendered a dozen of them on every view).

The key names the model, the pk, the object's ``version``, the field and the part shown (a page, an
excerpt), plus a hash of the exact source rendered: a new version, or a save that bypassed the
version (a bulk update, an import), renders again; two views of one version render once.
The cache is Django's (``CACHE_URL``: shared by all web processes in the docker stack).
"""
from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.db import models
from django.utils.safestring import SafeString, mark_safe

from projects.markdown import render_markdown

CACHE_SECONDS = 7 * 24 * 3600  # old versions simply expire


def markdown_cache_key(*, obj: models.Model, field: str, part: str, source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    version = getattr(obj, "version", 0)
    return f"markdown:{obj._meta.label_lower}:{obj.pk}:v{version}:{field}:{part}:{digest}"


def render_markdown_cached(source: str, *, obj: models.Model, field: str, part: str = "whole") -> SafeString:
    """``source`` (the field's text, or the part of it shown) as sanitised HTML, rendered at most
    once per object version and part while the cache keeps it."""
    key = markdown_cache_key(obj=obj, field=field, part=part, source=source)
    html = cache.get(key)
    if html is None:
        html = str(render_markdown(source))
        cache.set(key, html, CACHE_SECONDS)
    return mark_safe(html)  # noqa: S308 - render_markdown's nh3 output, stored as it came out
