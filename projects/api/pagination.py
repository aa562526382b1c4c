"""Cursor pagination for every API list: stable under inserts, no COUNT query, so a list costs the
same number of queries at 5 chapters and at 500."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response


class NovelsiteCursorPagination(CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200
    ordering = "pk"

    def decode_cursor(self, request):
        cursor = super().decode_cursor(request)  # NotFound for what is not base64 of "o=&r=&p="
        if cursor is not None and cursor.position is not None and "\x00" in cursor.position:
            raise NotFound(self.invalid_cursor_message)
        return cursor

    def paginate_queryset(self, queryset, request, view=None):
        # A well-formed cursor can still carry a position its ordering field refuses ("p=abc" for a
        # number): Django raises while building the filter. That is an invalid cursor too (404).
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValueError, ValidationError):
            raise NotFound(self.invalid_cursor_message) from None


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
