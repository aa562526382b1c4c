"""The sensitive-word middleware of seed 001: finds listed words in a text, replaces each with its
softer word (or drops it), and reports ``{passed, findings, fixes_applied}`` for the control zone.

The list is the shipped default (``sensitive_words.json``: the superlatives the advertising law
forbids and the platforms filter) plus the project's own (``SensitiveWordList``), the project's
entries winning. Longest words first, so 全网最 is replaced before 最 could be.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

DEFAULT_LIST = Path(__file__).with_name("sensitive_words.json")


@cache
def default_words() -> dict[str, str]:
    return dict(json.loads(DEFAULT_LIST.read_text(encoding="utf-8"))["words"])


def project_words(project_id: int) -> dict[str, str]:
    """The default list with the project's additions and overrides."""
    from pipeline.models import SensitiveWordList

    own = SensitiveWordList.objects.filter(project_id=project_id).values_list("words", flat=True).first() or {}
    return {**default_words(), **own}


@dataclass
class FilterResult:
    passed: bool = True
    findings: list[dict[str, Any]] = field(default_factory=list)
    fixes_applied: list[str] = field(default_factory=list)

    def merge(self, other: FilterResult) -> FilterResult:
        return FilterResult(self.passed and other.passed, self.findings + other.findings,
                            self.fixes_applied + other.fixes_applied)

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "findings": self.findings, "fixes_applied": self.fixes_applied}


def sensitive_filter(text: str, words: dict[str, str], *, where: str) -> tuple[str, FilterResult]:
    """``text`` with every listed word replaced, and what was found (``where`` names the field).
    ``passed`` says whether the original text was clean."""
    result = FilterResult()
    for word in sorted(words, key=len, reverse=True):
        count = text.count(word)
        if not word or not count:
            continue
        replacement = words[word]
        text = text.replace(word, replacement)
        result.passed = False
        result.findings.append({"field": where, "word": word, "count": count})
        result.fixes_applied.append(f"{where}: 「{word}」→「{replacement}」" if replacement
                                    else f"{where}: 删去「{word}」")
    return text, result
