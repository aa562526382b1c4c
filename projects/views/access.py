"""How a web page finds its project: anonymous people are sent to log in (``login_required`` on
the view), non-members get a 404 that does not say the project exists, members whose role does
not allow the action get a 403."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest

from projects.errors import NotFound, NovelsiteError, PermissionDenied
from projects.models import Role
from projects.permissions import Action, role_allows
from projects.selectors import ProjectAccess, project_access_for_member


def project_access(request: HttpRequest, slug: str, action: Action = Action.READ) -> ProjectAccess:
    try:
        return project_access_for_member(user=request.user, slug=slug, action=action)
    except NotFound as exc:
        raise Http404(str(exc)) from exc
    except PermissionDenied as exc:
        raise DjangoPermissionDenied(str(exc)) from exc


def page_context(access: ProjectAccess, **extra) -> dict:
    """What every project page's template needs: the project, the role and what it allows."""
    role = access.role
    return {"project": access.project, "role": role, "role_label": Role(role).label,
            "can": {a.value: role_allows(role, a) for a in Action}, **extra}


def flash_error(request: HttpRequest, exc: NovelsiteError) -> None:
    messages.error(request, str(getattr(exc, "message", "") or exc))
