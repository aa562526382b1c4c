"""The built-in platform data and the checks every profile passes, built in or imported.

The four files keep the shapes novel-writer-cli v0.5.0 writes at ``novel init --platform``
(facts §2): ``platform-profile.json`` (one platform), ``genre-weight-profiles.json``,
``golden-chapter-gates.json`` and ``platform-writing-guide.md``. The JSON schemas live in
``projects.schemas``; the rules one schema cannot say (ranges in order, weights that can be
normalised) are here.
"""
from __future__ import annotations

import copy
import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from projects.json_validation import json_issues
from projects.schemas import PLATFORM_IDS, WEIGHT_DIMENSIONS

DATA = Path(__file__).with_name("data")
DEFAULT_PLATFORM = "general"
PLATFORM_ALIASES = {"tomato": "fanqie"}  # facts §2: tomato is the legacy spelling of fanqie
CLI_PLATFORMS = ("qidian", "fanqie", "jinjiang")  # the platforms the original tool's init knows
WEIGHT_SUM_TOLERANCE = 1e-4  # facts §10.11


@cache
def _load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def canonical_platform(value: Any) -> str:
    """A platform id as Novelsite stores it: ``tomato`` -> ``fanqie``; anything unknown -> ``""``."""
    text = str(value or "").strip().lower()
    text = PLATFORM_ALIASES.get(text, text)
    return text if text in PLATFORM_IDS else ""


PLATFORM_NAMES = {"起点": "qidian", "番茄": "fanqie", "晋江": "jinjiang", "通用": "general"}
PLATFORM_LINE_RE = re.compile(r"^\s*[-*]\s*\*\*(?:平台|发布平台)\*\*\s*[：:]\s*(.+?)\s*$", re.MULTILINE)


def platform_from_brief(brief: str) -> str:
    """The platform a brief names on a ``- **平台**：…`` line (the brief template's {platform},
    facts §10.16), by id or Chinese name; ``""`` when it names none Novelsite knows."""
    found = PLATFORM_LINE_RE.search(brief or "")
    if not found:
        return ""
    text = found[1].strip().strip("`")
    return canonical_platform(text) or next((code for name, code in PLATFORM_NAMES.items() if name in text), "")


def default_platform_profile(platform: str) -> dict[str, Any]:
    """A fresh copy of the built-in profile of ``platform`` (unknown or blank: ``general``)."""
    profiles = _load("platform-profiles.json")["profiles"]
    return copy.deepcopy(profiles.get(canonical_platform(platform) or DEFAULT_PLATFORM))


def default_genre_weight_profiles() -> dict[str, Any]:
    return copy.deepcopy(_load("genre-weight-profiles.json"))


def default_golden_chapter_gates() -> dict[str, Any]:
    return copy.deepcopy(_load("golden-chapter-gates.json"))


def default_writing_guide(platform: str) -> str:
    name = canonical_platform(platform) or DEFAULT_PLATFORM
    return (DATA / "guides" / f"{name}.md").read_text(encoding="utf-8")


# --- checks -----------------------------------------------------------------------------------------


def platform_profile_problems(profile: Any) -> list[str]:
    """Everything wrong with a ``platform-profile.json`` value, in words; empty when it is usable."""
    problems = [str(issue) for issue in json_issues("PLATFORM_PROFILE", profile)]
    if problems:
        return problems
    words = profile["word_count"]
    if not words["hard_min"] <= words["target_min"] <= words["target_max"] <= words["hard_max"]:
        problems.append("$.word_count: needs hard_min ≤ target_min ≤ target_max ≤ hard_max "
                        f"(got {words['hard_min']}, {words['target_min']}, {words['target_max']}, {words['hard_max']})")
    if words["target_max"] <= 0:
        problems.append("$.word_count.target_max: must be above 0")
    title = (profile.get("retention") or {}).get("title_policy")
    if title and title["min_chars"] > title["max_chars"]:
        problems.append("$.retention.title_policy: min_chars must not exceed max_chars")
    return problems


def weights_problems(weights: Any, where: str) -> list[str]:
    """facts §10.11: finite, non-negative, and normalisable (a positive sum)."""
    if not isinstance(weights, dict) or not weights:
        return [f"{where}: must be an object of dimension weights"]
    problems = [f"{where}.{dim}: unknown dimension" for dim in weights if dim not in WEIGHT_DIMENSIONS]
    values = [v for v in weights.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(values) != len(weights) or any(not math.isfinite(v) or v < 0 for v in values):
        problems.append(f"{where}: every weight must be a finite number ≥ 0")
    elif sum(values) <= 0:
        problems.append(f"{where}: the weights add up to 0 and cannot be normalised")
    return problems


def genre_weight_profiles_problems(data: Any) -> list[str]:
    problems = [str(issue) for issue in json_issues("GENRE_WEIGHT_PROFILES", data)]
    if problems:
        return problems
    for profile_id, profile in data["profiles"].items():
        problems += weights_problems(profile["weights"], f"$.profiles.{profile_id}.weights")
    for drive, profile_id in (data.get("default_profile_by_drive_type") or {}).items():
        if profile_id not in data["profiles"]:
            problems.append(f"$.default_profile_by_drive_type.{drive}: no profile {profile_id!r} in profiles")
    return problems


def golden_chapter_gates_problems(data: Any) -> list[str]:
    problems = [str(issue) for issue in json_issues("GOLDEN_CHAPTER_GATES", data)]
    if problems:
        return problems
    for platform, entry in data["platforms"].items():
        for chapter, spec in entry["chapters"].items():
            ids = [gate["id"] for gate in spec["gates"]]
            if len(set(ids)) != len(ids):
                problems.append(f"$.platforms.{platform}.chapters.{chapter}.gates: a gate id appears twice")
    return problems
