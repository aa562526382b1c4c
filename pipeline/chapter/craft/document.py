"""One chapter text as the rules see it: the text, its settings and what is measured once and
shared (quotes, sentences, paragraphs, jieba words). Also the ``Finding`` the rules return."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from projects.text_stats import quoted_mask
from pipeline.chapter.craft.catalogue import MAX_EVIDENCE, RULES_BY_ID
from pipeline.chapter.craft.text_units import Span, paragraphs, sentences
from projects.text_stats import count_chars


@dataclass
class Finding:
    rule: str
    count: int
    evidence: list[dict[str, Any]] = field(default_factory=list)  # [{start, end, text, ...}], at most MAX_EVIDENCE
    rate_per_kchars: float | None = None  # count per 1000 non-space characters, where a rate is defined
    value: float | None = None  # the measured statistic of a whole-chapter rule (a std dev, a ratio, a count)
    limit: float | None = None  # the threshold it was measured against
    message: str = ""  # Chinese, for the judge and the refiner

    @property
    def severity(self) -> str:
        return RULES_BY_ID[self.rule].severity

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"rule": self.rule, "severity": self.severity, "count": self.count,
                                "rate_per_kchars": self.rate_per_kchars, "evidence": self.evidence}
        if self.value is not None:
            data["value"] = self.value
        if self.limit is not None:
            data["limit"] = self.limit
        data["message"] = self.message
        return data


@dataclass
class Document:
    text: str
    thresholds: Mapping[str, float]
    blacklist: Mapping[str, Any] | None = None
    chapter: int | None = None
    title: str | None = None  # the chapter's title when the text has no heading line
    title_policy: Mapping[str, Any] | None = None
    word_range: tuple[int | None, int | None] | None = None
    expect_heading: bool = True
    repeats: list[tuple[int, int]] | None = field(default=None, repr=False)  # rules_rhythm.repeated_sentences

    @cached_property
    def chars(self) -> int:
        return count_chars(self.text)

    @cached_property
    def in_quote(self) -> list[bool]:
        return quoted_mask(self.text)

    @cached_property
    def sentences(self) -> list[Span]:
        return sentences(self.text)

    @cached_property
    def paragraphs(self) -> list[Span]:
        return paragraphs(self.text)

    @cached_property
    def words(self) -> list[tuple[int, str, str]]:
        """jieba's words with part-of-speech tags as (start, word, flag), whitespace and punctuation left out."""
        import logging

        import jieba
        import jieba.posseg  # loaded on first use: its dictionary takes a second to load

        jieba.setLogLevel(logging.WARNING)
        out, position = [], 0
        # HMM off: idioms, similes and set phrases are dictionary words; the HMM only guesses unknown
        # words (names) and costs sixteen times the time
        for pair in jieba.posseg.lcut(self.text, HMM=False):
            start = self.text.find(pair.word, position)
            start = position if start < 0 else start
            position = start + len(pair.word)
            if pair.word.strip() and pair.flag not in ("x", "w") and any(ch.isalnum() for ch in pair.word):
                out.append((start, pair.word, pair.flag))
        return out

    def threshold(self, key: str) -> float:
        return self.thresholds[key]

    def rate(self, count: int) -> float:
        return round(count / (self.chars / 1000), 2) if self.chars else 0.0

    def is_narration(self, start: int) -> bool:
        return not (0 <= start < len(self.in_quote) and self.in_quote[start])

    def evidence(self, spans: list[tuple[int, int]]) -> list[dict[str, Any]]:
        return [{"start": s, "end": e, "text": self.text[s:e]} for s, e in spans[:MAX_EVIDENCE]]
