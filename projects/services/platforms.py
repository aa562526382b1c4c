"""Binding a project to its platform and editing the profile's main numbers (issue #17 §1).

The active ``platform-profile.json`` is stored on the project, so an owner's edits and an imported
tree's profile survive; choosing another platform starts again from that platform's built-in
profile (the original tool binds a project to one platform, facts §2).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from projects.lock_objects import project_lock
from projects.models import Project
from projects.platforms.apply import platform_apply
from projects.platforms.limits import drive_type_for_genre
from projects.platforms.profiles import canonical_platform
from projects.services.projects import project_update


@transaction.atomic
def project_platform_update(*, project: Project, editor: AbstractBaseUser | None, platform: str | None = None,
                            genre: str | None = None, genre_drive_type: str | None = None,
                            numbers: Mapping[str, Any] | None = None) -> Project:
    """The owner's platform settings: platform (a new one resets the profile to its built-in
    values), genre, drive type and the profile's main numbers, checked in full (ranges in order)
    before anything is written. Takes the project lock."""
    current = project_lock(project.pk)
    platform_apply(current, platform=platform, genre=genre, genre_drive_type=genre_drive_type, numbers=numbers)
    return project_update(project=current, editor=editor)


@transaction.atomic
def project_platform_bind(*, project_id: int, platform: str, genre: str) -> Project:
    """The quick start's platform and genre answers (facts §5, §14.5 ``init.platform_binding``).
    An answer outside the known platforms (a free-text "other") binds ``general``; the drive type
    follows the genre unless a person chose one. Takes the project lock."""
    project = project_lock(project_id)
    chosen = canonical_platform(platform) or "general"
    drive = None if project.genre_drive_type else drive_type_for_genre(genre.strip())
    platform_apply(project, platform=chosen, genre=genre, genre_drive_type=drive, numbers=None)
    return project_update(project=project, editor=None)
