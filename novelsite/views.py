from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers and compose: 200 when the database answers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any database failure means "not healthy"
        return HttpResponse(f"database unavailable: {exc.__class__.__name__}", status=503, content_type="text/plain")
    return HttpResponse("ok", content_type="text/plain")


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on every page, the admin's included. Resolved per request: the
    static file's (hashed) name is known only once collectstatic has run."""
    return HttpResponsePermanentRedirect(static("novelsite/favicon.svg"))
