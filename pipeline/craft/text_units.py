"""The pieces of a chapter the craft lints measure, with character offsets into the text as given:
the heading line, paragraphs and sentences. Pure Python."""
from __future__ import annotations

import re
from dataclasses import dataclass

from projects.text_stats import count_chars

# A sentence ends at a run of 。！？… (ASCII !? too) with any closing quotes after it, or at a line break.
_SENTENCE_END = re.compile(r"[。！？!?…]+[”’」』\"']*")
_NOT_COUNTED = str.maketrans("", "", "“”‘’「」『』\"'。！？!?…")
SEPARATOR_LINE = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$")  # Markdown scene breaks: ---, ***, * * *, ___


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str

    @property
    def chars(self) -> int:
        """Non-whitespace characters without quote marks and sentence-ending marks (as
        ``style_drift.chapter_metrics`` counts a sentence)."""
        return count_chars(self.text.translate(_NOT_COUNTED))

    @property
    def size(self) -> int:
        """All non-whitespace characters, punctuation included: what fills a screen."""
        return count_chars(self.text)


def lines(text: str) -> list[Span]:
    """Every line (without its line break), with offsets."""
    out, start = [], 0
    for line in text.split("\n"):
        out.append(Span(start, start + len(line), line))
        start += len(line) + 1
    return out


def heading_line(text: str) -> Span | None:
    """The first non-empty line when it is a Markdown heading (starts with ``#``), stripped."""
    for line in lines(text):
        stripped = line.text.strip()
        if stripped:
            if not stripped.startswith("#"):
                return None
            lead = len(line.text) - len(line.text.lstrip())
            return Span(line.start + lead, line.start + lead + len(stripped), stripped)
    return None


def body_start(text: str) -> int:
    """Where the prose starts: after the heading line, if there is one."""
    heading = heading_line(text)
    if heading is None:
        return 0
    end = text.find("\n", heading.end)
    return len(text) if end == -1 else end + 1


def paragraphs(text: str) -> list[Span]:
    """Non-empty lines of the prose (not the heading, not scene-break or heading lines), stripped."""
    out, first = [], body_start(text)
    for line in lines(text):
        stripped = line.text.strip()
        if line.start < first or not stripped or stripped.startswith("#") or SEPARATOR_LINE.match(line.text):
            continue
        lead = len(line.text) - len(line.text.lstrip())
        out.append(Span(line.start + lead, line.start + lead + len(stripped), stripped))
    return out


def sentences(text: str) -> list[Span]:
    """The sentences of every paragraph in order, stripped; a piece without any visible
    character (a stray quote mark) is dropped."""
    out = []
    for para in paragraphs(text):
        start = 0
        for match in _SENTENCE_END.finditer(para.text):
            _add_sentence(out, para, start, match.end())
            start = match.end()
        _add_sentence(out, para, start, len(para.text))
    return out


def _add_sentence(out: list[Span], para: Span, start: int, end: int) -> None:
    piece = para.text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    lead = len(piece) - len(piece.lstrip())
    span = Span(para.start + start + lead, para.start + start + lead + len(stripped), stripped)
    if span.chars:
        out.append(span)
