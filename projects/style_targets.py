"""The statistical targets the writer aims at and style drift is measured against (issue #17 §3;
facts §12 "Defaults for statistical_targets").

``statistical_targets(project)`` comes from the project's voice sample when there is one (its
numbers, measured by code), else from the defaults of the project's platform and genre. The
pipeline's prompts read it (``projects`` never imports ``pipeline``; ``pipeline`` imports this).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projects.platforms.limits import platform_limits

# facts §12: std dev green band [8, 18], paragraph CV green band [0.4, 1.2], enums "medium", connectors 0
STD_DEV_RANGE = (8.0, 18.0)
PARAGRAPH_CV_RANGE = (0.4, 1.2)
STD_DEV_FLOOR, PARAGRAPH_CV_FLOOR = 6.0, 0.3  # facts §13: red below these, whatever the sample does
ENUM_FIELDS = ("emotional_volatility", "register_mixing", "vocabulary_richness")
SAMPLE_BAND = 0.2  # a sample's spread is aimed at within ±20 %

# Platform defaults (Novelsite's: the tool has none): phone-first platforms read shorter sentences,
# more dialogue and shorter paragraphs.
PLATFORM_DEFAULTS: dict[str, dict[str, float]] = {
    "qidian": {"avg_sentence_length": 18.0, "dialogue_ratio": 0.35, "avg_paragraph_length": 60.0},
    "fanqie": {"avg_sentence_length": 14.0, "dialogue_ratio": 0.40, "avg_paragraph_length": 40.0},
    "jinjiang": {"avg_sentence_length": 17.0, "dialogue_ratio": 0.40, "avg_paragraph_length": 55.0},
    "general": {"avg_sentence_length": 18.0, "dialogue_ratio": 0.35, "avg_paragraph_length": 60.0},
}
# Genre shifts on top: sentence length in characters, dialogue ratio as a fraction.
GENRE_SHIFTS: dict[str, dict[str, float]] = {
    "yanqing": {"dialogue_ratio": 0.05},
    "dushi": {"avg_sentence_length": -2.0, "dialogue_ratio": 0.05},
    "xuanyi": {"avg_sentence_length": -2.0},
    "lishi": {"avg_sentence_length": 3.0, "dialogue_ratio": -0.05},
    "junshi": {"avg_sentence_length": 2.0, "dialogue_ratio": -0.05},
    "xianxia": {"avg_sentence_length": 1.0},
    "wuxia": {"avg_sentence_length": 1.0},
}


def _band(value: float | None, default: tuple[float, float], floor: float, digits: int) -> list[float]:
    """A sample's value ±20 %, never below the red threshold's floor; the facts' default without one."""
    if value is None:
        return list(default)
    return [round(max(floor, value * (1 - SAMPLE_BAND)), digits), round(max(floor, value * (1 + SAMPLE_BAND)), digits)]


def default_targets(platform: str, genre: str = "") -> dict[str, Any]:
    """The targets of a platform and genre, without a sample (``source`` "defaults")."""
    numbers = dict(PLATFORM_DEFAULTS.get(platform) or PLATFORM_DEFAULTS["general"])
    for name, shift in GENRE_SHIFTS.get(genre, {}).items():
        numbers[name] = round(numbers[name] + shift, 2)
    sentence = numbers["avg_sentence_length"]
    return {
        "source": "defaults",
        "avg_sentence_length": sentence,
        "sentence_length_range": [round(sentence * 0.3), round(sentence * 2.2)],
        "sentence_length_std_dev": list(STD_DEV_RANGE),
        "paragraph_length_cv": list(PARAGRAPH_CV_RANGE),
        "avg_paragraph_length": numbers["avg_paragraph_length"],
        "dialogue_ratio": numbers["dialogue_ratio"],
        "narration_connectors": 0,
        **{name: "medium" for name in ENUM_FIELDS},
    }


def sample_targets(stats: Mapping[str, Any], profile: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The targets a sample's statistics (``projects.voice_stats.voice_statistics``) give
    (``source`` "sample"); the profile's enums (the analyst's judgement) where it has them."""
    profile = profile or {}
    out = {
        "source": "sample",
        "avg_sentence_length": stats["avg_sentence_length"],
        "sentence_length_range": list(stats["sentence_length_range"]),
        "sentence_length_std_dev": _band(stats.get("sentence_length_std_dev"), STD_DEV_RANGE, STD_DEV_FLOOR, 1),
        "paragraph_length_cv": _band(stats.get("paragraph_length_cv"), PARAGRAPH_CV_RANGE, PARAGRAPH_CV_FLOOR, 2),
        "avg_paragraph_length": stats["avg_paragraph_length"],
        "dialogue_ratio": stats["dialogue_ratio"],
        "narration_connectors": 0,
    }
    for name in ENUM_FIELDS:
        out[name] = profile.get(name) if profile.get(name) in ("high", "medium", "low") else "medium"
    if stats.get("idioms_per_kchars") is not None:
        out["idioms_per_kchars"] = stats["idioms_per_kchars"]
    return out


def usable_sample_statistics(stats: Any) -> bool:
    """Enough measured prose to aim at: at least one sentence with a length."""
    return isinstance(stats, Mapping) and bool(stats.get("sentences")) and bool(stats.get("avg_sentence_length"))


def statistical_targets(project) -> dict[str, Any]:
    """The writer's ``statistical_targets`` (facts §12) for ``project``: a plain dict

    ``source`` ("sample" | "defaults"), ``platform``, ``genre``, ``avg_sentence_length`` (characters),
    ``sentence_length_range`` [low, high] (characters), ``sentence_length_std_dev`` [low, high],
    ``paragraph_length_cv`` [low, high], ``avg_paragraph_length`` (characters), ``dialogue_ratio``
    (0–1), ``narration_connectors`` (always 0), ``emotional_volatility`` / ``register_mixing`` /
    ``vocabulary_richness`` ("high" | "medium" | "low"), ``max_paragraph_chars`` (the platform's
    phone limit) and, from a sample of 200+ characters, ``idioms_per_kchars``.

    One query at most (the voice sample); pass a project with ``select_related("voice_sample")`` for none.
    """
    from projects.models import VoiceSample

    limits = platform_limits(project)
    try:
        sample = project.voice_sample
    except VoiceSample.DoesNotExist:
        sample = None
    if sample is not None and usable_sample_statistics(sample.statistics):
        targets = sample_targets(sample.statistics, project.style_profile)
    else:
        targets = default_targets(limits["platform"], project.genre)
    return {**targets, "platform": limits["platform"], "genre": project.genre,
            "max_paragraph_chars": limits["readability"]["max_paragraph_chars"]}


LEVELS = ("high", "medium", "low")
CONNECTOR_NOTE = "叙述连接词按 0 命中控制：ai-blacklist 的 narration_connector 类（仅叙述文）。"


def _measured(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def packet_statistical_targets(project) -> dict[str, Any]:
    """``statistical_targets`` in the shape of the original tool's writer packets (facts §12): the
    two spreads as ``{target?, fallback_range, fallback_applied}`` (the voice sample's measured value
    as the target; without a sample no target, and the fallback is the facts' default range), the
    three levels as ``{target, fallback_applied}`` under the tool's names (``vocabulary_diversity``,
    ``register_mixing``, ``emotional_arc``), ``narration_connectors`` 0. The numbers are the ones
    Novelsite's own writer aims at (``statistical_targets``); ``source`` says where they came from."""
    targets = statistical_targets(project)
    sample = targets["source"] == "sample"
    measured = project.voice_sample.statistics if sample else {}
    profile = project.style_profile if sample and isinstance(project.style_profile, Mapping) else {}

    def spread(name: str, fallback: tuple[float, float]) -> dict[str, Any]:
        value = measured.get(name)
        out: dict[str, Any] = {"target": round(value, 2)} if _measured(value) else {}
        return {**out, "fallback_range": list(fallback), "fallback_applied": not out}

    def level(name: str, source_field: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"target": targets[name]}
        if source_field:
            out["source_field"] = source_field
        return {**out, "fallback_applied": profile.get(name) not in LEVELS}

    return {
        "source": {"mode": "voice_sample" if sample else "platform_genre_defaults",
                   "platform": targets["platform"], **({"genre": targets["genre"]} if targets["genre"] else {})},
        "sentence_length_std_dev": spread("sentence_length_std_dev", STD_DEV_RANGE),
        "paragraph_length_cv": spread("paragraph_length_cv", PARAGRAPH_CV_RANGE),
        "vocabulary_diversity": level("vocabulary_richness", "vocabulary_richness"),
        "narration_connectors": {"target": 0, "source_field": "ai-blacklist.category_metadata.narration_connector",
                                 "fallback_applied": False, "note": CONNECTOR_NOTE},
        "register_mixing": level("register_mixing"),
        "emotional_arc": level("emotional_volatility", "emotional_volatility"),
    }
