"""``lint_text``: the craft-lint catalogue over one chapter's text (issue #17 §2).

Pure functions, no ORM. A finding carries its rule id, severity (``hard`` blocks the commit,
``soft`` goes to the judge), count, rate per 1000 non-space characters where a rate is defined, and
evidence as character offsets into ``text`` with the quoted text. A rule that finds nothing is
left out. Thresholds: ``catalogue.DEFAULT_THRESHOLDS``, then the platform's, then the project's
(``LintSettings.resolve``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.chapter.craft import rules_frame, rules_marks, rules_rhythm, rules_words
from pipeline.chapter.craft.catalogue import DEFAULT_THRESHOLDS, HARD, RULES, RULES_BY_ID
from pipeline.chapter.craft.document import Document, Finding
from pipeline.chapter.craft.indicators import indicator_mode, indicators

RULE_FUNCTIONS: dict[str, Callable[[Document], Finding | None]] = {
    "em_dash": rules_marks.em_dash,
    "md_separator": rules_marks.md_separator,
    "quote_format": rules_marks.quote_format,
    "chapter_heading": rules_frame.chapter_heading,
    "narration_connector": rules_words.narration_connector,
    "blacklist": rules_words.blacklist,
    "simile_density": rules_words.simile_density,
    "ellipsis_density": rules_marks.ellipsis_density,
    "exclamation_density": rules_marks.exclamation_density,
    "sentence_length_std_dev": rules_rhythm.sentence_length_std_dev,
    "sentence_length_run": rules_rhythm.sentence_length_run,
    "paragraph_length_cv": rules_rhythm.paragraph_length_cv,
    "paragraph_too_long": rules_rhythm.paragraph_too_long,
    "sentence_repetition": rules_rhythm.sentence_repetition,
    "four_char_idiom_density": rules_words.four_char_idiom_density,
    "vocabulary_diversity": rules_words.vocabulary_diversity,
    "sentence_pattern": rules_words.sentence_pattern,
    "word_count": rules_frame.word_count,
    "title": rules_frame.title,
}
assert tuple(RULE_FUNCTIONS) == tuple(rule.id for rule in RULES), "catalogue and functions disagree"


class LintSettingsError(ValueError):
    """A threshold, word range or title policy that cannot be used (the message says which)."""


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0 \
            or value == float("inf"):
        raise LintSettingsError(f"lint threshold {key!r} must be a number ≥ 0, not {value!r}")
    return value


def merge_thresholds(*layers: Mapping[str, Any] | None) -> dict[str, float]:
    """The defaults with each layer's known keys on top (unknown keys are ignored, so a newer
    platform profile does not break an older server); a bad value raises ``LintSettingsError``."""
    merged = dict(DEFAULT_THRESHOLDS)
    for layer in layers:
        if layer is None:
            continue
        if not isinstance(layer, Mapping):
            raise LintSettingsError(f"lint thresholds must be an object, not {type(layer).__name__}")
        merged.update({k: _number(k, v) for k, v in layer.items() if k in DEFAULT_THRESHOLDS})
    return merged


def _word_range(raw: Any) -> tuple[int | None, int | None] | None:
    """``{"min": 2000, "max": 4000}`` (or a [min, max] pair); either end may be missing."""
    if raw is None:
        return None
    if isinstance(raw, Mapping):
        low, high = raw.get("min"), raw.get("max")
    elif isinstance(raw, (list, tuple)) and len(raw) == 2:
        low, high = raw
    else:
        raise LintSettingsError(f"word range must be {{min, max}}, not {raw!r}")
    for end in (low, high):
        if end is not None and (isinstance(end, bool) or not isinstance(end, int) or end < 0):
            raise LintSettingsError(f"word range ends must be whole numbers ≥ 0, not {end!r}")
    if low is not None and high is not None and low > high:
        raise LintSettingsError(f"word range min {low} is above max {high}")
    return (low, high) if (low, high) != (None, None) else None


def _title_policy(raw: Any) -> dict[str, Any] | None:
    """facts §7.3 title policy: ``{enabled, min_chars, max_chars, banned_words[], forbidden_chars}``,
    every key optional; a value of the wrong kind raises ``LintSettingsError``."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise LintSettingsError(f"the title policy must be an object, not {raw!r}")
    policy = dict(raw)
    for key in ("min_chars", "max_chars"):
        value = policy.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise LintSettingsError(f"title policy {key!r} must be a whole number ≥ 0, not {value!r}")
    words = policy.get("banned_words")
    if words is not None and (not isinstance(words, list) or not all(isinstance(w, str) for w in words)):
        raise LintSettingsError("title policy 'banned_words' must be a list of words")
    if policy.get("forbidden_chars") is not None and not isinstance(policy["forbidden_chars"], str):
        raise LintSettingsError("title policy 'forbidden_chars' must be a string of characters")
    if policy.get("enabled") is not None and not isinstance(policy["enabled"], bool):
        raise LintSettingsError("title policy 'enabled' must be true or false")
    return policy


@dataclass(frozen=True)
class LintSettings:
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    word_range: tuple[int | None, int | None] | None = None
    title_policy: dict[str, Any] | None = None

    @classmethod
    def resolve(cls, *, platform: Mapping[str, Any] | None = None,
                project: Mapping[str, Any] | None = None) -> LintSettings:
        """Defaults, then the platform profile's, then the project's settings. Both dicts may carry
        ``lints`` (thresholds by ``DEFAULT_THRESHOLDS`` key), ``word_count`` ({min, max}) and
        ``title_policy`` (or the platform's ``retention.title_policy``, facts §7.3)."""
        layers = [d if isinstance(d, Mapping) else {} for d in (platform or {}, project or {})]
        thresholds = merge_thresholds(*(d.get("lints") for d in layers))
        word_range, policy = None, None
        for layer in layers:
            if layer.get("word_count") is not None:
                word_range = _word_range(layer["word_count"])
            raw_policy, retention = layer.get("title_policy"), layer.get("retention")
            if raw_policy is None and isinstance(retention, Mapping):
                raw_policy = retention.get("title_policy")
            if raw_policy is not None:
                policy = _title_policy(raw_policy)
        return cls(thresholds, word_range, policy)


@dataclass
class LintReport:
    chars: int
    findings: list[Finding]
    indicators: dict[str, dict[str, Any]]  # the 13 of facts §13: {name: {value, zone, red_when}}
    indicator_mode: str = "13-indicator"  # or "7-indicator" for a short text (facts §13)

    @property
    def hard(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == HARD]

    @property
    def has_hard(self) -> bool:
        return bool(self.hard)

    def by_rule(self) -> dict[str, Finding]:
        return {f.rule: f for f in self.findings}

    def as_dict(self) -> dict[str, Any]:
        return {"chars": self.chars, "findings": [f.as_dict() for f in self.findings],
                "indicator_mode": self.indicator_mode, "indicators": self.indicators}

    def readable(self, *, max_quotes: int = 3) -> str:
        """The findings as Chinese lines for a person or a model: rule name, severity, count, the
        message and a few quotes (never ``\\u`` escapes)."""
        out = []
        for f in self.findings:
            rule = RULES_BY_ID[f.rule]
            level = "必须修改" if f.severity == HARD else "疑似问题"
            quotes = "；".join(f"【{e['text'][:40]}】" for e in f.evidence[:max_quotes] if e.get("text"))
            out.append(f"- [{level}] {rule.name}（{f.rule}）×{f.count}：{f.message}"
                       + (f" 例：{quotes}" if quotes else ""))
        return "\n".join(out)


def lint_text(text: str, *, thresholds: Mapping[str, Any] | None = None, blacklist: Mapping[str, Any] | None = None,
              chapter: int | None = None, title: str | None = None, title_policy: Mapping[str, Any] | None = None,
              word_range: tuple[int | None, int | None] | Mapping[str, Any] | None = None,
              expect_heading: bool = True) -> LintReport:
    """Every rule of the catalogue over ``text``. ``expect_heading``: the text is a chapter file
    whose first line must be ``# 第 N 章 标题``; stored prose (title kept apart) passes False and gives
    ``title``. Raises ``LintSettingsError`` for unusable settings, ``TypeError`` for non-text."""
    if not isinstance(text, str):
        raise TypeError(f"lint_text needs a str, not {type(text).__name__}")
    if blacklist is not None and not isinstance(blacklist, Mapping):
        raise LintSettingsError(f"the blacklist must be an object (ai-blacklist.json), not {type(blacklist).__name__}")
    doc = Document(text=text, thresholds=merge_thresholds(thresholds), blacklist=blacklist, chapter=chapter,
                   title=title, title_policy=_title_policy(title_policy),
                   word_range=_word_range(word_range), expect_heading=expect_heading)
    findings = [f for rule in RULE_FUNCTIONS.values() if (f := rule(doc)) is not None]
    return LintReport(chars=doc.chars, findings=findings, indicators=indicators(doc),
                      indicator_mode=indicator_mode(doc))
