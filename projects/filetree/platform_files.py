"""The four platform files of the tree (facts §2), in the shapes ``novel init --platform`` writes:
``platform-profile.json``, ``genre-weight-profiles.json``, ``golden-chapter-gates.json`` and
``platform-writing-guide.md``.

Export: a project with a platform writes all four; its stored data, else the built-in data of
its platform. ``general`` is Novelsite's own platform, which the original tool refuses in
``platform-profile.json`` (it knows qidian, tomato, fanqie and jinjiang): that profile travels in
``novelsite/project.json`` instead. Import: each file is checked in full (``TreeError`` names the
file and the problem) and becomes the project's active data.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from projects.filetree.canonical import dump_json, dump_text, load_json, load_text
from projects.filetree.errors import TreeError
from projects.models import GenreDriveType
from projects.platforms.genres import genre_from_brief
from projects.platforms.limits import active_platform_profile, project_platform
from projects.platforms.profiles import (
    CLI_PLATFORMS,
    canonical_platform,
    default_genre_weight_profiles,
    default_golden_chapter_gates,
    default_platform_profile,
    default_writing_guide,
    genre_weight_profiles_problems,
    golden_chapter_gates_problems,
    platform_from_brief,
    platform_profile_problems,
)

PLATFORM_PROFILE = "platform-profile.json"
GENRE_WEIGHT_PROFILES = "genre-weight-profiles.json"
GOLDEN_CHAPTER_GATES = "golden-chapter-gates.json"
PLATFORM_WRITING_GUIDE = "platform-writing-guide.md"


def _has_platform(project) -> bool:
    return bool(project.target_platform or project.platform_profile)


def exported_profile(project) -> dict[str, Any]:
    """The active profile; a built-in one gets the project's creation time as ``created_at``, so two
    exports of unchanged data are identical (nothing depends on the time of export)."""
    if project.platform_profile:
        return project.platform_profile
    profile = active_platform_profile(project)
    profile["created_at"] = project.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return profile


def profile_travels_in_novelsite_file(project) -> bool:
    return _has_platform(project) and canonical_platform(exported_profile(project)["platform"]) not in CLI_PLATFORMS


def platform_files(project, originals: dict[str, str] | None = None) -> Iterator[tuple[str, bytes]]:
    """The four files; of an imported tree (``originals``: its files as they came), the built-in
    data only where the tree had the file, so that a round trip adds nothing (#20)."""
    if not _has_platform(project):
        return
    imported = bool(originals)

    def wanted(path: str, stored: Any) -> bool:
        return bool(stored) or not imported or path in originals

    if not profile_travels_in_novelsite_file(project):
        yield PLATFORM_PROFILE, dump_json(exported_profile(project))
    if wanted(GENRE_WEIGHT_PROFILES, project.genre_weight_profiles):
        yield GENRE_WEIGHT_PROFILES, dump_json(project.genre_weight_profiles or default_genre_weight_profiles())
    if wanted(GOLDEN_CHAPTER_GATES, project.golden_chapter_gates):
        yield GOLDEN_CHAPTER_GATES, dump_json(project.golden_chapter_gates or default_golden_chapter_gates())
    if wanted(PLATFORM_WRITING_GUIDE, project.platform_writing_guide):
        yield PLATFORM_WRITING_GUIDE, dump_text(project.platform_writing_guide
                                                or default_writing_guide(project_platform(project)))


# --- import -------------------------------------------------------------------------------------------


def _checked(path: str, value: Any, problems_of) -> Any:
    problems = problems_of(value)
    if problems:
        raise TreeError(path, "; ".join(problems))
    return value


def _filled(raw: Any, defaults: dict[str, Any], at: str, filled: list[str]) -> Any:
    """``raw`` with the keys it lacks taken from ``defaults`` (recursively); what it has wins."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    for key, value in defaults.items():
        if key not in out:
            out[key] = value
            filled.append(f"{at}{key}")
        elif isinstance(value, dict):
            out[key] = _filled(out[key], value, f"{at}{key}.", filled)
    return out


def parse_platform_profile(tree, match, path, data) -> None:
    """A hand-written profile may leave sections out (the original tool's own init never does): the
    missing keys come from the built-in profile of the same platform, and the import says which."""
    raw = load_json(data, path)
    platform = canonical_platform(raw.get("platform")) if isinstance(raw, dict) else ""
    if platform:
        filled: list[str] = []
        raw = _filled(raw, default_platform_profile(platform), "", filled)
        if filled:
            tree.warnings.append(f"{path}: missing {', '.join(filled)}; taken from Novelsite's {platform} profile")
    tree.platform_profile = _checked(path, raw, platform_profile_problems)


def parse_genre_weight_profiles(tree, match, path, data) -> None:
    tree.genre_weight_profiles = _checked(path, load_json(data, path), genre_weight_profiles_problems)


def parse_golden_chapter_gates(tree, match, path, data) -> None:
    tree.golden_chapter_gates = _checked(path, load_json(data, path), golden_chapter_gates_problems)


def parse_writing_guide(tree, match, path, data) -> None:
    tree.platform_writing_guide = load_text(data, path)


HANDLERS = [
    (PLATFORM_PROFILE, parse_platform_profile),
    (GENRE_WEIGHT_PROFILES, parse_genre_weight_profiles),
    (GOLDEN_CHAPTER_GATES, parse_golden_chapter_gates),
    (PLATFORM_WRITING_GUIDE, parse_writing_guide),
]


def check_platform_profile_in_project_file(tree, path: str) -> None:
    """``novelsite/project.json`` may carry the profile of a platform the original tool lacks."""
    profile = tree.project.get("platform_profile")
    if profile is not None:
        _checked(f"{path}: platform_profile", profile, platform_profile_problems)


def platform_fields(tree) -> dict[str, Any]:
    """The project's platform and genre fields from an imported tree: ``novelsite/project.json``
    first, then ``platform-profile.json`` (a tree made by ``novel init --platform``), then the
    brief's 平台 and 题材 lines."""
    meta = tree.project
    profile = tree.platform_profile or meta.get("platform_profile")
    stated = meta.get("target_platform", "")
    platform = canonical_platform(stated) or (canonical_platform(profile.get("platform")) if profile else "")
    if stated and not platform:  # an old export's promotion site or typo: not a writing platform
        platform = "general"
    platform = platform or platform_from_brief(tree.brief)
    drive = meta.get("genre_drive_type") or ((profile or {}).get("scoring") or {}).get("genre_drive_type", "")
    if drive not in GenreDriveType.values:
        if drive:
            tree.warnings.append(f"{PLATFORM_PROFILE}: genre_drive_type {drive!r} is not one Novelsite knows; "
                                 "the drive type is left empty")
        drive = ""
    if profile and (profile.get("scoring") and tree.genre_weight_profiles is None):
        tree.warnings.append(f"{PLATFORM_PROFILE} has scoring but the tree has no {GENRE_WEIGHT_PROFILES}; "
                             "Novelsite's built-in weight profiles are used")
    # Data equal to the built-in data is stored as "built-in" (null), as the exporting project had it.
    weights, gates = tree.genre_weight_profiles, tree.golden_chapter_gates
    guide = tree.platform_writing_guide
    return {
        "target_platform": platform, "genre_drive_type": drive,
        "genre": meta.get("genre") or genre_from_brief(tree.brief),
        "platform_profile": profile,
        "genre_weight_profiles": None if weights == default_genre_weight_profiles() else weights,
        "golden_chapter_gates": None if gates == default_golden_chapter_gates() else gates,
        "platform_writing_guide": "" if guide.strip() == default_writing_guide(platform).strip() else guide,
    }
