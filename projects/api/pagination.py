"""Cursor pagination for every API list: stable under inserts, no COUNT query, so a list costs the
same number of queries at 5 chapters and at 500."""
from __future__ import annotations

from rest_framework.pagination import CursorPagination
from rest_framework.response import Response


class NovelsiteCursorPagination(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    ordering = "pk"


def cursor_by(field: str) -> type[NovelsiteCursorPagination]:
    """A paginator ordered by ``field``, which must be unique within the list (a chapter's
    ``number``, a row's ``pk``): the cursor is a position in that order."""
    name = "CursorBy" + field.strip("-").title().replace("_", "")
    return type(name, (NovelsiteCursorPagination,), {"ordering": field})


def paginated(view, queryset, serializer_class) -> Response:
    """One page of ``queryset`` in the order of ``view.pagination_class``, serialized."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, view.request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)
