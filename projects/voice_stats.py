"""The statistics of a voice (issue #17 §3): sentence and paragraph lengths, dialogue, punctuation and
idioms, measured by code on a sample of prose or on a chapter. Pure Python (jieba for the idioms).

``pipeline.chapter.style_drift`` measures chapters with the same functions (``sentence_lengths``,
``dialogue_ratio``), so a sample's numbers and a chapter's numbers are always comparable. The
names of the numeric fields are the style profile's (facts §10.12).
"""
from __future__ import annotations

import math
import re
from statistics import mean, pstdev
from typing import Any

from projects.text_stats import count_chars, quoted_spans

# A sentence ends at a run of 。！？… (ASCII !? too), with any closing quotes after it, or at a line break.
SENTENCE_END = re.compile(r"[。！？!?…]+[”’」』\"']*|\n+")
_DROP_QUOTE_MARKS = str.maketrans("", "", "“”「」『』")
_SEPARATOR_LINE = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$")  # Markdown scene breaks: ---, ***, * * *
_SNIPPET_END = re.compile(r"[。！？!?…]+[”’」』\"']*")

# punctuation counted per 1000 characters: name -> pattern (a run of ellipses or dashes is one mark)
PUNCTUATION = {
    "comma": re.compile(r"[，,]"),
    "full_stop": re.compile(r"。(?!。)"),
    "exclamation": re.compile(r"[！!]+"),
    "question": re.compile(r"[？?]+"),
    "ellipsis": re.compile(r"…+|\.{3,}|。{3,}"),
    "em_dash": re.compile(r"[\u2014\u2015]+"),
}
MIN_IDIOM_CHARS = 200  # below this an idiom rate says nothing


def prose(text: str) -> str:
    """The text without Markdown heading lines (a chapter's ``# 第N章 …``) and scene-break lines."""
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith("#") and not _SEPARATOR_LINE.match(line))


def sentence_lengths(text: str) -> list[int]:
    """Non-whitespace length of each sentence of the prose (terminators and quote marks not counted;
    pieces without a visible character dropped)."""
    body = prose(text)
    return [n for piece in SENTENCE_END.split(body) if (n := count_chars(piece.translate(_DROP_QUOTE_MARKS)))]


def dialogue_ratio(text: str) -> float:
    """Non-whitespace characters inside “…”/「…」/『…』 over all non-whitespace characters, 4 dp."""
    body = prose(text)
    total = count_chars(body)
    quoted = sum(count_chars(body[start:end]) for start, end in quoted_spans(body))
    return round(quoted / total, 4) if total else 0.0


def paragraph_sizes(text: str) -> list[int]:
    """Non-whitespace characters of each non-empty line of the prose (punctuation included)."""
    return [n for line in prose(text).split("\n") if (n := count_chars(line))]


def _percentile(values: list[int], share: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def idioms_per_kchars(text: str) -> float | None:
    """Four-character idioms and set phrases (jieba's tags ``i``/``l``) in narration per 1000 characters,
    as the craft lint ``four_char_idiom_density`` counts them. None for a text too short to say."""
    body = prose(text)
    chars = count_chars(body)
    if chars < MIN_IDIOM_CHARS:
        return None
    import logging

    import jieba
    import jieba.posseg  # its dictionary loads on first use

    jieba.setLogLevel(logging.WARNING)
    quoted = [False] * len(body)
    for start, end in quoted_spans(body):
        quoted[start:end] = [True] * (end - start)
    count, position = 0, 0
    for pair in jieba.posseg.lcut(body, HMM=False):
        start = body.find(pair.word, position)
        start = position if start < 0 else start
        position = start + len(pair.word)
        if pair.flag in ("i", "l") and len(pair.word) == 4 and not (start < len(quoted) and quoted[start]):
            count += 1
    return round(count / (chars / 1000), 2)


def voice_statistics(text: str, *, idioms: bool = True) -> dict[str, Any]:
    """The numbers of a sample (empty text -> zeros and Nones):

    ``chars``, ``sentences``, ``paragraphs``; ``avg_sentence_length`` (2 dp), ``sentence_length_range``
    ([10th, 90th percentile] of the sentence lengths), ``sentence_length_std_dev`` (population, 2 dp;
    None under 2 sentences), ``paragraph_length_cv`` (3 dp; None under 2 paragraphs),
    ``avg_paragraph_length`` (1 dp), ``dialogue_ratio`` (4 dp), ``punctuation_per_kchars``
    {comma, full_stop, exclamation, question, ellipsis, em_dash} and ``idioms_per_kchars`` (None when
    not measured or the text is under 200 characters)."""
    lengths = sentence_lengths(text)
    paragraphs = paragraph_sizes(text)
    body = prose(text)
    chars = count_chars(body)
    per_k = {name: round(len(pattern.findall(body)) / (chars / 1000), 2) if chars else 0.0
             for name, pattern in PUNCTUATION.items()}
    return {
        "chars": chars,
        "sentences": len(lengths),
        "paragraphs": len(paragraphs),
        "avg_sentence_length": round(mean(lengths), 2) if lengths else 0.0,
        "sentence_length_range": [_percentile(lengths, 0.1), _percentile(lengths, 0.9)] if lengths else [0, 0],
        "sentence_length_std_dev": round(pstdev(lengths), 2) if len(lengths) >= 2 else None,
        "paragraph_length_cv": (round(pstdev(paragraphs) / mean(paragraphs), 3)
                                if len(paragraphs) >= 2 and mean(paragraphs) else None),
        "avg_paragraph_length": round(mean(paragraphs), 1) if paragraphs else 0.0,
        "dialogue_ratio": dialogue_ratio(text),
        "punctuation_per_kchars": per_k,
        "idioms_per_kchars": idioms_per_kchars(text) if idioms else None,
    }


def sample_sentences(text: str) -> list[str]:
    """The sentences of the prose as written (terminators and closing quotes kept), stripped, in order:
    what exemplars are cut from."""
    out = []
    for line in prose(text).split("\n"):
        start = 0
        for match in _SNIPPET_END.finditer(line):
            out.append(line[start:match.end()].strip())
            start = match.end()
        out.append(line[start:].strip())
    return [s for s in out if count_chars(s.translate(_DROP_QUOTE_MARKS))]


def passages(text: str, *, least: int = 50, most: int = 150, aim: int = 80) -> list[str]:
    """Runs of whole consecutive sentences of one paragraph, each ``least``–``most`` characters
    (``len``), about ``aim`` long, in text order and not overlapping: the candidate exemplars of a
    sample. A sentence longer than ``most`` is never cut into pieces (an exemplar is real prose)."""
    out: list[str] = []

    def flush(run: str) -> None:
        if least <= len(run) <= most:
            out.append(run)

    for line in prose(text).split("\n"):
        run = ""
        for sentence in sample_sentences(line):
            if len(sentence) > most:
                flush(run)
                run = ""
                continue
            if len(run) + len(sentence) > most:
                flush(run)
                run = ""
            run += sentence
            if len(run) >= aim:
                flush(run)
                run = ""
        flush(run)
    return out
