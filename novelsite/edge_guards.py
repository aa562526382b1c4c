"""Middleware that keeps malformed requests from reaching the code that would fail on them.

``NulRefusedMiddleware``: a NUL character in the path or the query string is a 400 before any view
runs (PostgreSQL refuses NUL in text, so a lookup with it would be a 500). JSON bodies are checked
by the API's parser (``projects/api/parsers.py``); form fields refuse NUL themselves (Django's
``ProhibitNullCharactersValidator``).

``NovelsiteErrorMiddleware``: an application error (``projects.errors.NovelsiteError``) that
escapes a web view becomes the error page of its status (404, 403, else 400), never a 500. The
API's views turn them into JSON themselves (``projects/api_errors.py``).
"""
from __future__ import annotations

from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404, HttpRequest

from novelsite.error_views import api_error, is_api
from projects.errors import NovelsiteError

NUL_MESSAGE = "The address contains a NUL character."


class NulRefusedMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if "\x00" in request.path or any("\x00" in key or any("\x00" in v for v in values)
                                         for key, values in request.GET.lists()):
            if is_api(request):  # also with DEBUG on, where Django would show its technical page
                return api_error(400, "invalid", NUL_MESSAGE)
            raise BadRequest(NUL_MESSAGE)
        return self.get_response(request)


class NovelsiteErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):
        if not isinstance(exception, NovelsiteError):
            return None
        if exception.http_status == 404:
            raise Http404(exception.message) from exception
        if exception.http_status == 403:
            raise PermissionDenied(exception.message) from exception
        raise BadRequest(exception.message) from exception
