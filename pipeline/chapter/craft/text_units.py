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


def stripped(line: Span) -> Span:
    """The line without surrounding whitespace (and a byte-order mark at its start)."""
    core = line.text.lstrip().lstrip("\ufeff").lstrip()
    lead = len(line.text) - len(core)
    core = core.rstrip()
    return Span(line.start + lead, line.start + lead + len(core), core)


def heading_line(text: str) -> Span | None:
    """The first non-empty line when it is a Markdown heading (starts with ``#``), stripped."""
    for line in map(stripped, lines(text)):
        if line.text:
            return line if line.text.startswith("#") else None
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
        core = stripped(line)
        if line.start < first or not core.text or core.text.startswith("#") or SEPARATOR_LINE.match(line.text):
            continue
        out.append(core)
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
