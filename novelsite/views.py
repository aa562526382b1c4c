from django.db import connection
from django.http import HttpRequest, HttpResponse


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness for load balancers and compose: 200 when the database answers."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any database failure means "not healthy"
        return HttpResponse(f"database unavailable: {exc.__class__.__name__}", status=503, content_type="text/plain")
    return HttpResponse("ok", content_type="text/plain")
