"""Error responses outside the views: for ``/api/`` the API's ``{"code", "message", "extra"}`` shape
(a URL that matches nothing, a request refused at the edge, an unexpected error), for the web pages
Django's plain error pages. Installed as ``handler400/404/500`` in ``novelsite/urls.py``; with
DEBUG on, Django shows its technical pages instead of the 404 and 500 here."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def api_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"code": code, "message": message, "extra": {}}, status=status,
                        json_dumps_params={"ensure_ascii": False})


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_error(400, "invalid", str(exception) or "Bad request.")
    return defaults.bad_request(request, exception)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if is_api(request):
        return api_error(404, "not_found", "Not found.")
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if is_api(request):  # never a traceback, and the same shape as every other API error
        return api_error(500, "server_error", "Server error; it has been logged.")
    return defaults.server_error(request)
