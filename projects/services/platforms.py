"""Binding a project to its platform and editing the profile's main numbers (issue #17 §1).

The active ``platform-profile.json`` is stored on the project, so an owner's edits and an imported
tree's profile survive; choosing another platform starts again from that platform's built-in
profile (the original tool binds a project to one platform, facts §2).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from projects.errors import InvalidData
from projects.lock_objects import project_lock
from projects.models import Project
from projects.platforms.limits import active_platform_profile, drive_type_for_genre
from projects.platforms.profiles import canonical_platform, default_platform_profile
from projects.services.projects import project_update

# The numbers an owner edits on the settings page: form name -> path in platform-profile.json.
PROFILE_NUMBERS: dict[str, tuple[str, ...]] = {
    "word_target_min": ("word_count", "target_min"),
    "word_target_max": ("word_count", "target_max"),
    "word_hard_min": ("word_count", "hard_min"),
    "word_hard_max": ("word_count", "hard_max"),
    "hook_required": ("hook_policy", "required"),
    "hook_min_strength": ("hook_policy", "min_strength"),
    "max_paragraph_chars": ("readability", "mobile", "max_paragraph_chars"),
    "max_exposition_paragraphs": ("readability", "mobile", "max_consecutive_exposition_paragraphs"),
    "max_new_entities": ("info_load", "max_new_entities_per_chapter"),
}


def profile_numbers(profile: Mapping[str, Any]) -> dict[str, Any]:
    """The editable numbers of a profile, by form name (None where the profile lacks the section)."""
    out = {}
    for name, path in PROFILE_NUMBERS.items():
        node: Any = profile
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        out[name] = node
    return out


def _set_path(profile: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    fallback = default_platform_profile(profile.get("platform", "general"))
    node, source = profile, fallback
    for key in path[:-1]:
        source = source.get(key) or {}
        if not isinstance(node.get(key), dict):  # a section the imported profile left out
            node[key] = copy.deepcopy(source)
        node = node[key]
    node[path[-1]] = value


def _fresh_profile(platform: str) -> dict[str, Any]:
    profile = default_platform_profile(platform)
    profile["created_at"] = timezone.now().strftime("%Y-%m-%dT%H:%M:%SZ")  # facts §2: init stamps it
    return profile


def platform_apply(project: Project, *, platform: str | None = None, genre: str | None = None,
                   genre_drive_type: str | None = None, numbers: Mapping[str, Any] | None = None) -> None:
    """Set the platform fields on ``project`` in memory (the caller holds the lock and saves)."""
    if platform is not None:
        canonical = canonical_platform(platform)
        if platform and not canonical:
            raise InvalidData(f"target_platform: unknown platform {platform!r}; use qidian, fanqie, jinjiang or "
                              "general", extra={"fields": {"target_platform": ["unknown platform"]}})
        if canonical != canonical_platform(project.target_platform) or project.platform_profile is None:
            project.platform_profile = _fresh_profile(canonical) if canonical else None
        project.target_platform = canonical
    if genre is not None:
        project.genre = genre.strip()[:40]
    if genre_drive_type is not None:
        project.genre_drive_type = genre_drive_type
    if numbers or genre_drive_type:
        profile = copy.deepcopy(project.platform_profile or active_platform_profile(project))
        for name, value in (numbers or {}).items():
            if name not in PROFILE_NUMBERS:
                raise InvalidData(f"not a profile number: {name}")
            if value is not None:
                _set_path(profile, PROFILE_NUMBERS[name], value)
        if genre_drive_type:  # facts §10.11: the weight profile follows the drive type
            profile["scoring"] = {**(profile.get("scoring") or {}), "genre_drive_type": genre_drive_type,
                                  "weight_profile_id": f"{genre_drive_type}:v1"}
        project.platform_profile = profile


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
