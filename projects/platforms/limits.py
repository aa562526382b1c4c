"""What a project's platform asks of its chapters, read from the project's active profile.

``platform_limits(project)`` is the one dict other code reads thresholds from (the lints, the
draft's target length, the gate's hook policy). The active profile is the one stored on the
project (an owner's edits, an imported tree's ``platform-profile.json``), else the built-in one of
its target platform, else ``general``.
"""
from __future__ import annotations

from typing import Any

from projects.platforms.profiles import (
    canonical_platform,
    default_genre_weight_profiles,
    default_golden_chapter_gates,
    default_platform_profile,
)
from projects.schemas import WEIGHT_DIMENSIONS

GOLDEN_CHAPTERS = (1, 2, 3)  # facts §11: golden-chapter gates apply to chapters ≤ 3
DRIVE_TYPES_BY_GENRE = {"yanqing": "character", "xuanyi": "suspense"}  # anything else drives by plot


def active_platform_profile(project) -> dict[str, Any]:
    return project.platform_profile or default_platform_profile(project.target_platform)


def project_platform(project) -> str:
    """The canonical platform id (``general`` when none is set)."""
    stored = (project.platform_profile or {}).get("platform")
    return canonical_platform(project.target_platform) or canonical_platform(stored) or "general"


def drive_type_for_genre(genre: str) -> str:
    return DRIVE_TYPES_BY_GENRE.get(genre, "plot")


def platform_limits(project) -> dict[str, Any]:
    """The thresholds of the project's platform, in one plain dict:

    ``platform``; ``word_count`` {target_min, target_max, hard_min, hard_max}; ``target_chars``
    (the middle of the target range: what the writer is asked for); ``readability`` {enabled,
    max_paragraph_chars, max_consecutive_exposition_paragraphs, blocking_severity}; ``info_load``
    {max_new_entities_per_chapter, max_unknown_entities_per_chapter, max_new_terms_per_1k_words};
    ``hook_policy`` {required, min_strength, allowed_types, fix_strategy}; ``title_policy``;
    ``naming``; ``banned_words``; ``max_revisions`` (None: the gate's own setting).
    """
    profile = active_platform_profile(project)
    words = dict(profile["word_count"])
    fallback = default_platform_profile("general")
    mobile = ((profile.get("readability") or {}).get("mobile")
              or {**fallback["readability"]["mobile"], "enabled": False})
    hook = profile.get("hook_policy") or {**fallback["hook_policy"], "required": False}
    retention = profile.get("retention") or {}
    return {
        "platform": project_platform(project),
        "word_count": words,
        "target_chars": (words["target_min"] + words["target_max"]) // 2,
        "readability": dict(mobile),
        "info_load": dict(profile["info_load"]),
        "hook_policy": {**hook, "allowed_types": list(hook["allowed_types"])},
        "title_policy": dict(retention.get("title_policy") or fallback["retention"]["title_policy"]),
        "naming": dict(profile.get("naming") or {**fallback["naming"], "enabled": False}),
        "banned_words": list(profile["compliance"].get("banned_words", [])),
        "max_revisions": (profile.get("scoring") or {}).get("max_revisions"),
    }


def _weight_profile_id(project, profile: dict[str, Any], tables: dict[str, Any]) -> str:
    scoring = profile.get("scoring") or {}
    by_drive = tables.get("default_profile_by_drive_type") or {}
    drive = project.genre_drive_type or scoring.get("genre_drive_type") or "plot"
    if scoring.get("weight_profile_id") and scoring.get("genre_drive_type", drive) == drive:
        return scoring["weight_profile_id"]
    return by_drive.get(drive) or f"{drive}:v1"


def scoring_weights(project) -> dict[str, float] | None:
    """facts §10.11: the genre's weight profile × the platform's multipliers × the profile's
    ``weight_overrides``, scaled to sum 1.0. ``None`` for a project with no platform at all (the
    judge then keeps the facts' default weights), or when the tables lack the chosen profile."""
    if not project.target_platform and not project.platform_profile:
        return None
    profile = active_platform_profile(project)
    tables = project.genre_weight_profiles or default_genre_weight_profiles()
    chosen = tables["profiles"].get(_weight_profile_id(project, profile, tables))
    if chosen is None:
        return None
    weights = {dim: float(w) for dim, w in chosen["weights"].items() if dim in WEIGHT_DIMENSIONS}
    platform = project_platform(project)
    multipliers = tables.get("platform_multipliers") or {}
    own = multipliers.get(platform) or (multipliers.get("tomato") if platform == "fanqie" else None) or {}
    for dim, factor in own.items():  # (an older file may still call fanqie tomato)
        if dim in weights:
            weights[dim] *= float(factor)
    for dim, value in ((profile.get("scoring") or {}).get("weight_overrides") or {}).items():
        weights[dim] = float(value)
    total = sum(weights.values())
    if total <= 0:
        return None
    return {dim: round(w / total, 6) for dim, w in weights.items()}


def golden_gates_for(project, chapter: int) -> list[dict[str, Any]]:
    """The golden-chapter gates of ``chapter`` on the project's platform (facts §11: chapters 1–3
    only; a platform without gates, like ``general``, has none)."""
    if chapter not in GOLDEN_CHAPTERS:
        return []
    tables = project.golden_chapter_gates or default_golden_chapter_gates()
    platforms = tables.get("platforms") or {}
    platform = project_platform(project)
    entry = platforms.get(platform) or (platforms.get("tomato") if platform == "fanqie" else None) or {}
    spec = (entry.get("chapters") or {}).get(str(chapter)) or {}
    return [dict(gate) for gate in spec.get("gates", [])]
