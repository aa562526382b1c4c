"""May a new project take this slug? Answered without telling a stranger that a project they
cannot see exists: a slug taken by someone else's project, and a reserved one, get the same
neutral message; only a member of the project that holds it is told it is theirs."""
from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.utils.translation import gettext as _

from projects.models import Membership, Project

# Paths under /api/projects/ that a project slug would shadow.
RESERVED_SLUGS = frozenset({"import"})


def slug_not_available_message() -> str:
    return _("This short name (slug) is not available; choose another one.")


def slug_unavailable_message(*, slug: str, user: AbstractBaseUser | None) -> str | None:
    """None if a new project may take ``slug``; else what to tell ``user``."""
    if slug.lower() in RESERVED_SLUGS:
        return slug_not_available_message()
    holder = Project.objects.filter(slug=slug).values_list("pk", flat=True).first()
    if holder is None:
        return None
    if user is not None and user.pk is not None and Membership.objects.filter(project_id=holder, user=user).exists():
        return _("You already have a project with this short name (slug); choose another one.")
    return slug_not_available_message()
