"""Request body limits, enforced from ``Content-Length`` before any byte of the body is read.

Django bounds form fields and JSON (``DATA_UPLOAD_MAX_MEMORY_SIZE``) only once something reads the
body, and never bounds files: a 400 MB upload is streamed to a temporary file in full (by the CSRF
check, even before the view) and only then refused. So every view gets a body limit: by default
``DATA_UPLOAD_MAX_MEMORY_SIZE``, because no view but the uploads takes files; an upload view names
the larger setting it accepts (``@body_limit("NOVELSITE_IMPORT_MAX_UPLOAD_BYTES")`` on a function
view, ``body_limit_setting = "…"`` on an APIView). A body over its view's limit gets 413 at once:
the API's ``{"code", "message", "extra"}`` under ``/api/``, a page elsewhere.

A chunked request has no Content-Length; Django reads such a body as empty, so it needs no check.
In the docker stack nginx refuses bodies over ``client_max_body_size`` before they reach the app.
"""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

DEFAULT_SETTING = "DATA_UPLOAD_MAX_MEMORY_SIZE"


def body_limit(setting_name: str) -> Callable:
    """Mark a function view as accepting bodies up to ``settings.<setting_name>`` bytes."""
    def mark(view: Callable) -> Callable:
        view.body_limit_setting = setting_name
        return view
    return mark


def view_body_limit(view_func: Callable) -> int | None:
    """The byte limit of the view's request body (None: unlimited, as Django allows)."""
    view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    name = (getattr(view_func, "body_limit_setting", None) or getattr(view_class, "body_limit_setting", None)
            or DEFAULT_SETTING)
    return getattr(settings, name)


def declared_length(request: HttpRequest) -> int:
    try:
        return max(0, int(request.META.get("CONTENT_LENGTH") or 0))
    except ValueError:  # Django itself reads a malformed length as an empty body
        return 0


class RequestBodyLimitMiddleware:
    """Goes before ``CsrfViewMiddleware``, whose check reads the body of every POST."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Callable, view_args, view_kwargs) -> HttpResponse | None:
        limit = view_body_limit(view_func)
        length = declared_length(request)
        if limit is None or length <= limit:
            return None
        return too_large_response(request, length=length, limit=limit)


def too_large_response(request: HttpRequest, *, length: int, limit: int) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "too_large",
                             "message": f"The request body is {length} bytes; this endpoint accepts at most "
                                        f"{limit} bytes ({limit / 1048576:.1f} MB).",
                             "extra": {"max_bytes": limit, "content_length": length}}, status=413)
    return render(request, "too_large.html", {"size": length, "limit": limit}, status=413)
