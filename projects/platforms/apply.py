"""A project's platform fields changed in memory: the platform, its profile, the genre and the
numbers an owner edits. The caller holds the project lock and saves (``projects.services.platforms``
and ``projects.services.projects``)."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from projects.errors import InvalidData
from projects.models import Project
from projects.platforms.limits import active_platform_profile
from projects.platforms.profiles import canonical_platform, default_platform_profile

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
