"""Marks drawn on a chapter's text in the reader (issue #17: the craft lints' findings as
highlighted spans). ``projects`` never imports ``pipeline``: the pipeline registers the function
that finds the marks (``register_chapter_marker`` from ``PipelineConfig.ready()``)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# (project, chapter) -> [{start, end, rule, severity}] with offsets into chapter.text
ChapterMarker = Callable[[Any, Any], list[dict[str, Any]]]
_MARKERS: list[ChapterMarker] = []


def register_chapter_marker(marker: ChapterMarker) -> None:
    if marker not in _MARKERS:
        _MARKERS.append(marker)


def chapter_marks(project, chapter) -> list[dict[str, Any]]:
    """Every registered marker's spans, in text order, overlaps dropped (the first one wins)."""
    spans = sorted((m for marker in _MARKERS for m in marker(project, chapter)),
                   key=lambda m: (m["start"], m["severity"] != "hard", m["end"]))
    kept, reach = [], -1
    for mark in spans:
        if 0 <= mark["start"] < mark["end"] <= len(chapter.text) and mark["start"] >= reach:
            kept.append(mark)
            reach = mark["end"]
    return kept


@dataclass(frozen=True)
class Segment:
    text: str
    rule: str = ""  # the rule's code when the segment is marked
    severity: str = ""


def marked_paragraphs(text: str, marks: list[dict[str, Any]]) -> list[list[Segment]]:
    """The non-empty lines of ``text`` (stripped), each cut into plain and marked segments."""
    out, position = [], 0
    for line in text.split("\n"):
        start, end = position, position + len(line)
        position = end + 1
        lead = len(line) - len(line.lstrip())
        start, end = start + lead, start + len(line.rstrip())
        if start >= end:
            continue
        segments, cursor = [], start
        for mark in marks:
            low, high = max(mark["start"], start), min(mark["end"], end)
            if low >= high or low < cursor:
                continue
            if cursor < low:
                segments.append(Segment(text[cursor:low]))
            segments.append(Segment(text[low:high], mark["rule"], mark["severity"]))
            cursor = high
        if cursor < end:
            segments.append(Segment(text[cursor:end]))
        out.append(segments)
    return out
