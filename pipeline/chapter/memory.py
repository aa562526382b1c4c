"""Consolidating the book's memory so that chapter 500's prompt is as small as chapter 20's.

- seed 002: when the latest committed chapter minus the last archived one reaches 10, the oldest 5
  unarchived chapter summaries are consolidated by the LLM into one archived summary;
- beyond the seed: when a volume closes, its live memory becomes one volume summary, and volume
  summaries older than the last two fold into the book synopsis.

``due_consolidations`` is pure planning (which ranges, from which rows); the maintenance stage
runs the LLM calls and stores the results through ``projects.services.memory``.

Sized to what they cover (#18): a level that stands for more chapters may be longer
(``level_chars``: 400 characters for 5 chapters, growing with the square root of the chapters
covered, at most ``LEVEL_MAX_CHARS``), so events that by then live only in the book synopsis are
not squeezed out of it; the consolidator is told its length, and the writer's context holds each
level to it. All levels together stay within ``MEMORY_MAX_CHARS`` in the writer's prompt
(``levels_for_writer``): the archives (recent, 5 chapters each) keep their size and the volume
summaries and the synopsis share the rest in proportion to their own sizes.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from django.db.models import Max

from pipeline.jacquard.tokens import estimate_tokens
from projects.models import ArchivedSummary, ChapterSummary, Project

ARCHIVE_TRIGGER = 10  # seed 002: latest − last archived ≥ 10
ARCHIVE_SIZE = 5  # … archive the oldest 5
VOLUME_SUMMARIES_KEPT = 2  # older volume summaries fold into the synopsis

LEVEL_BASE_CHARS = 400  # an archive of ARCHIVE_SIZE chapters (seed 002's length)
LEVEL_MAX_CHARS = 2000  # the longest level, however many chapters it stands for
# The writer's memory (the summaries since the last archive and the levels above them) fills one
# fixed room, so chapter 1000's prompt costs what chapter 30's does (#17 §4): 5K estimator tokens
# of the per-chapter part's 8K, the rest of which the contract, outline, cast, facts, foreshadowing
# and the previous chapter's ending use. Tokens, not characters: a summary's headings and ids cost
# less per character than a consolidation's dense prose, and the prompt's cost is in tokens.
WRITER_MEMORY_TOKENS = 5000
MEMORY_MAX_CHARS = 3500  # of which the levels take at most this (dense CJK prose: about as many tokens)
DETAIL_CHAPTERS_MAX = 30  # how far back a young book's room is filled with chapter summaries
_BREAK = re.compile(r"[。！？；!?;\n]")


def level_chars(chapters: int) -> int:
    """How long a memory level standing for ``chapters`` chapters may be."""
    chapters = max(1, chapters)
    return min(LEVEL_MAX_CHARS, max(LEVEL_BASE_CHARS, round(LEVEL_BASE_CHARS * math.sqrt(chapters / ARCHIVE_SIZE))))


def clip_at_sentence(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut after the last sentence (or clause) that fits."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = max((m.end() for m in _BREAK.finditer(text, 0, limit)), default=0)
    return (text[:cut] if cut >= limit // 2 else text[:limit - 1]).rstrip() + "…"


@dataclass(frozen=True)
class LevelSlot:
    """One live memory level as the writer gets it."""

    level: str
    chapter_start: int
    chapter_end: int
    text: str
    allowed: int  # its length in the writer's prompt (level_chars, maybe shared down)
    stored_chars: int  # its length as stored

    def receipt(self) -> dict:
        return {"level": self.level, "chapters": [self.chapter_start, self.chapter_end],
                "chars": len(self.text), "allowed": self.allowed, "stored_chars": self.stored_chars}


def levels_for_writer(levels: list[tuple[str, int, int, str]], room: int = MEMORY_MAX_CHARS) -> list[LevelSlot]:
    """``(level, start, end, text)`` rows, oldest first, each held to its size; within ``room``
    (at most ``MEMORY_MAX_CHARS``) together (see the module's docstring)."""
    allowed = [level_chars(end - start + 1) for _level, start, end, _text in levels]
    wanted = [min(a, len(text.strip())) for a, (_l, _s, _e, text) in zip(allowed, levels)]
    fixed = sum(w for w, (level, *_rest) in zip(wanted, levels) if level == "archive")
    shared = sum(w for w, (level, *_rest) in zip(wanted, levels) if level != "archive")
    room = max(0, min(room, MEMORY_MAX_CHARS) - fixed)
    if shared > room:
        scale = room / shared
        wanted = [w if level == "archive" else int(w * scale) for w, (level, *_rest) in zip(wanted, levels)]
    return [LevelSlot(level, start, end, clip_at_sentence(text, w), w, len(text))
            for w, (level, start, end, text) in zip(wanted, levels)]


def memory_for_writer(levels: list[tuple[str, int, int, str]], recent: list[tuple[int, str]],
                      earlier: list[tuple[int, str]]) -> tuple[list[tuple[int, str]], list[LevelSlot]]:
    """The writer's memory within ``WRITER_MEMORY_TOKENS``: ``recent`` (the summaries since the last
    archive) whole, the ``levels`` (oldest first) in what room is left, and, while the room is not
    full, the summaries of the archived chapters before them (``earlier``, newest first): a young
    book gets its chapters' own summaries where an old one gets their consolidations, so the two
    prompts are about the same size. An archive whose chapters all came back as summaries is
    dropped; volume summaries and the synopsis are never replaced. Returns the chapter summaries
    (oldest first) and the level slots."""
    shown = sum(estimate_tokens(text) for _number, text in recent)
    slots = levels_for_writer(levels, room=WRITER_MEMORY_TOKENS - shown)
    used = shown + sum(estimate_tokens(slot.text) for slot in slots)
    detail: list[tuple[int, str]] = []
    for number, text in earlier:
        covering = next((slot for slot in slots if slot.chapter_start <= number <= slot.chapter_end), None)
        if covering is not None and covering.level != "archive":
            break
        cost = estimate_tokens(text)
        saving = estimate_tokens(covering.text) if covering is not None and covering.chapter_start == number else 0
        if used + cost - saving > WRITER_MEMORY_TOKENS:
            break
        detail.append((number, text))
        used += cost - saving
        if saving:
            slots = [slot for slot in slots if slot is not covering]
    return sorted(detail + list(recent)), slots


@dataclass(frozen=True)
class Consolidation:
    level: str  # archive | volume | synopsis
    chapter_start: int
    chapter_end: int
    texts: list[str]
    supersedes: list[int]
    volume_number: int | None = None

    @property
    def max_chars(self) -> int:
        """The length the consolidator is given for this level."""
        return level_chars(self.chapter_end - self.chapter_start + 1)


def _live(project: Project, level: str):
    return ArchivedSummary.objects.filter(project=project, level=level, superseded=False).order_by("chapter_start")


def archive_due(project: Project, latest: int) -> Consolidation | None:
    archived_until = ArchivedSummary.objects.filter(project=project).aggregate(end=Max("chapter_end"))["end"] or 0
    if latest - archived_until < ARCHIVE_TRIGGER:
        return None
    start, end = archived_until + 1, archived_until + ARCHIVE_SIZE
    rows = list(ChapterSummary.objects.filter(project=project, chapter__number__range=(start, end))
                .order_by("chapter__number").values_list("text", flat=True))
    return Consolidation("archive", start, end, rows, []) if rows else None


def volume_due(project: Project, volume_number: int, first: int, last: int) -> Consolidation | None:
    """At a volume's end: its archives and the summaries after them become one volume summary."""
    if ArchivedSummary.objects.filter(project=project, level="volume", chapter_start=first).exists():
        return None
    archives = [a for a in _live(project, "archive") if first <= a.chapter_start and a.chapter_end <= last]
    covered_until = max([a.chapter_end for a in archives], default=first - 1)
    rest = list(ChapterSummary.objects.filter(project=project, chapter__number__range=(covered_until + 1, last))
                .order_by("chapter__number").values_list("text", flat=True))
    texts = [a.text for a in archives] + rest
    if not texts:
        return None
    return Consolidation("volume", first, last, texts, [a.pk for a in archives], volume_number)


def synopsis_due(project: Project) -> Consolidation | None:
    volumes = list(_live(project, "volume"))
    if len(volumes) <= VOLUME_SUMMARIES_KEPT:
        return None
    folding = volumes[:-VOLUME_SUMMARIES_KEPT]
    previous = list(_live(project, "synopsis"))
    texts = [s.text for s in previous] + [v.text for v in folding]
    start = min([s.chapter_start for s in previous] + [folding[0].chapter_start])
    return Consolidation("synopsis", start, folding[-1].chapter_end, texts, [r.pk for r in previous + folding])
