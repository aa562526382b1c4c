"""One DRF exception handler: every API error is ``{"code", "message", "extra"}``."""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from projects.errors import NovelsiteError


def novelsite_exception_handler(exc, context):
    if isinstance(exc, NovelsiteError):
        response = Response({"code": exc.code, "message": exc.message, "extra": exc.extra}, status=exc.http_status)
        if "retry_after_seconds" in exc.extra:  # a rate limit says when to come back, as HTTP does
            response["Retry-After"] = str(exc.extra["retry_after_seconds"])
        return response
    if isinstance(exc, RequestDataTooBig):  # else Django's HTML 400 page
        return Response({"code": "too_large", "message": "The request body is too large.",
                         "extra": {"max_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}},
                        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return Response(
            {"code": "invalid", "message": "; ".join(f"{k}: {' '.join(v)}" for k, v in detail.items()),
             "extra": {"fields": detail}},
            status=status.HTTP_400_BAD_REQUEST,
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = getattr(exc, "default_code", "error")
    if isinstance(exc, exceptions.ValidationError):
        message = "Invalid input."
        extra = {"fields": response.data}
    else:
        message = str(getattr(exc, "detail", exc))
        extra = {}
    response.data = {"code": code, "message": message, "extra": extra}
    return response
