"""World documents and character profiles as the pages show them (#15, availability): on the world
page each is folded and at most ``long_text.INLINE_CHARS`` long, read from the database as a prefix
(never the whole text); the reader shows one at full length, ``long_text.PAGE_CHARS`` per page.
Every part is rendered through the per-version Markdown cache."""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import models
from django.db.models.functions import Length, Substr
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils.safestring import SafeString
from django.views.decorators.http import require_safe

from projects import long_text
from projects.markdown_cache import render_markdown_cached
from projects.models import Character, WorldDoc
from projects.views.access import page_context, project_access


@dataclass(frozen=True)
class FoldedText:
    obj: models.Model
    html: SafeString
    length: int  # characters of the whole text
    folded: bool  # only the beginning is shown


def folded_texts(rows: models.QuerySet, field: str) -> list[FoldedText]:
    """Each row with the beginning of its ``field`` rendered; the field itself is not loaded."""
    rows = rows.defer(field).annotate(_length=Length(field),
                                      _head=Substr(field, 1, long_text.INLINE_CHARS + 1))
    shown = []
    for row in rows:
        length = row._length or 0
        excerpt, folded = long_text.text_excerpt(row._head or "", length)
        html = render_markdown_cached(excerpt, obj=row, field=field, part="inline" if folded else "whole")
        shown.append(FoldedText(obj=row, html=html, length=length, folded=folded))
    return shown


READABLE = {"docs": (WorldDoc, "name", "content"), "characters": (Character, "slug", "profile")}


@login_required
@require_safe
def world_text_view(request, slug: str, kind: str, key: str):
    """One world document or character profile, whole, one page at a time (``?page=N``)."""
    access = project_access(request, slug)
    model, key_field, field = READABLE[kind]
    if "\x00" in key:  # PostgreSQL refuses NUL in a query: no such document, not a 500
        raise Http404
    row = get_object_or_404(model, project=access.project, **{key_field: key})
    page = Paginator(long_text.text_pages(getattr(row, field) or ""), 1).get_page(request.GET.get("page"))
    html = render_markdown_cached(page.object_list[0], obj=row, field=field, part=f"page-{page.number}")
    return render(request, "projects/world_text.html", page_context(
        access, row=row, kind=kind, html=html, page=page, length=len(getattr(row, field) or "")))
