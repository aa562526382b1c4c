"""Project slugs: one made from a (Chinese) title, and whether a new project may take one.

A slug is made from the title's pinyin (pypinyin), so 雪原长夜 becomes ``xue-yuan-chang-ye``.
Whether a slug is free is answered without telling a stranger that a project they cannot see
exists: a slug taken by someone else's project, and a reserved one, get the same neutral message;
only a member of the project that holds it is told it is theirs."""
from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.utils.text import slugify
from django.utils.translation import gettext as _
from pypinyin import lazy_pinyin

from projects.models import Membership, Project

# Paths under /api/projects/ that a project slug would shadow.
RESERVED_SLUGS = frozenset({"import"})
SLUG_MAX_CHARS = 60  # Project.slug's max_length
_MADE_SLUG_CHARS = 48  # room for a "-2" … suffix


def slug_from_title(title: str) -> str:
    """``title`` as a slug: Chinese by its pinyin (tone marks dropped), other letters and digits as
    they are; words cut at a hyphen to stay short. ``novel`` when nothing usable is left."""
    words = slugify(" ".join(lazy_pinyin(title or "", errors="default"))).split("-")
    slug = ""
    for word in filter(None, words):
        if len(slug) + len(word) + 1 > _MADE_SLUG_CHARS:
            break
        slug = f"{slug}-{word}" if slug else word
    return slug or "novel"


def slug_suggest(*, title: str, user: AbstractBaseUser | None) -> str:
    """A free slug for a new project called ``title``: its pinyin, then ``-2``, ``-3`` … if taken."""
    base = slug_from_title(title)
    candidate, number = base, 1
    while slug_unavailable_message(slug=candidate, user=user) is not None:
        number += 1
        candidate = f"{base}-{number}"
    return candidate


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
