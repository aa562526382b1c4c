"""Consolidating the book's memory so that chapter 500's prompt is as small as chapter 20's.

- seed 002: when the latest committed chapter minus the last archived one reaches 10, the oldest 5
  unarchived chapter summaries are consolidated by the LLM into one archived summary;
- beyond the seed: when a volume closes, its live memory becomes one volume summary, and volume
  summaries older than the last two fold into the book synopsis.

``due_consolidations`` is pure planning (which ranges, from which rows); the maintenance stage
runs the LLM calls and stores the results through ``projects.services.memory``.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Max

from projects.models import ArchivedSummary, ChapterSummary, Project

ARCHIVE_TRIGGER = 10  # seed 002: latest − last archived ≥ 10
ARCHIVE_SIZE = 5  # … archive the oldest 5
VOLUME_SUMMARIES_KEPT = 2  # older volume summaries fold into the synopsis


@dataclass(frozen=True)
class Consolidation:
    level: str  # archive | volume | synopsis
    chapter_start: int
    chapter_end: int
    texts: list[str]
    supersedes: list[int]
    volume_number: int | None = None


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
