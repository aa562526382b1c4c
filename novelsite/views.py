from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers and compose: 200 when the database answers."""
    try:
        connection.ensure_connection()
        usable = connection.is_usable()  # the backend's own ping (SELECT 1 on PostgreSQL)
    except Exception as exc:  # any database failure means "not healthy"
        return HttpResponse(f"database unavailable: {exc.__class__.__name__}", status=503, content_type="text/plain")
    if not usable:
        return HttpResponse("database unavailable: the connection does not answer", status=503,
                            content_type="text/plain")
    return HttpResponse("ok", content_type="text/plain")


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page, the admin's included. Resolved per request: the
    static file's (hashed) name is known only once collectstatic has run."""
    return HttpResponsePermanentRedirect(static("novelsite/favicon.svg"))
