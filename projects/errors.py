"""Application errors: one class per failure, each with a stable ``code`` and an HTTP status.

Services raise these; the DRF exception handler (``projects.api_errors``) turns them into
``{"code", "message", "extra"}``, the admin and the CLI show ``message``.
"""
from __future__ import annotations

from typing import Any


class NovelsiteError(Exception):
    code = "error"
    http_status = 400

    def __init__(self, message: str = "", *, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message or self.default_message())
        self.message = message or self.default_message()
        self.extra = extra or {}

    @classmethod
    def default_message(cls) -> str:
        return cls.__doc__.strip().splitlines()[0] if cls.__doc__ else cls.code


class InvalidData(NovelsiteError):
    """The data does not match its schema."""

    code = "invalid"
    http_status = 400


class ForeshadowingAlreadyResolved(InvalidData):
    """A foreshadowing item is resolved once (#18): a second ``resolved`` is refused, not recorded."""

    code = "foreshadowing_already_resolved"


class VersionConflict(NovelsiteError):
    """Someone saved a newer version meanwhile; reload and apply your change again."""

    code = "version_conflict"
    http_status = 409


class PermissionDenied(NovelsiteError):
    """Your role in this project does not allow this."""

    code = "permission_denied"
    http_status = 403


class NotFound(NovelsiteError):
    """Not found."""

    code = "not_found"
    http_status = 404


class SlugUnavailable(InvalidData):
    """This short name (slug) is not available; choose another one."""

    code = "invalid"
    http_status = 400
