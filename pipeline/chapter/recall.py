"""Recall by appearance (#18): a character of the chapter's cast who has been away for a while
gets the summary of the chapter where they last really were (their last appearance: named by
that chapter's contract, changed by its delta, or, later, a fact of the ledger), not the latest
summary that happens to contain their name (a passing mention is not a scene).

``last_appearances`` is the one place that reads appearances: a new source of appearances only
has to write ``CharacterAppearance`` rows (``projects.services.appearances``). Two queries,
both on indexes, whatever the book's length.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db.models import Max

from projects.models import ChapterSummary, CharacterAppearance, Project

ABSENCE_FOR_RECALL = 10  # chapters away before the last appearance is recalled
MAX_RECALLED = 6  # characters recalled in one chapter, the longest absent first
RECALL_CHARS = 400  # of one recalled summary (a summary is ≤300 characters, facts §10.10)


def last_appearances(project: Project, slugs: Iterable[str], before: int) -> dict[str, int]:
    """``{slug: the last chapter before ``before`` the character appears in}``, for those who do."""
    rows = (CharacterAppearance.objects.filter(project=project, character_slug__in=list(slugs),
                                               chapter_number__lt=before)
            .values("character_slug").annotate(last=Max("chapter_number")).values_list("character_slug", "last"))
    return dict(rows)


def recall_returning(project: Project, cast: Sequence, chapter: int) -> list[tuple[str, int, str]]:
    """``(display_name, chapter, summary)`` for the cast members back after at least
    ``ABSENCE_FOR_RECALL`` chapters away, the longest absent first. ``cast`` items have
    ``slug`` and ``display_name``."""
    last = last_appearances(project, [member.slug for member in cast], chapter)
    away = [(member, last[member.slug]) for member in cast
            if member.slug in last and chapter - last[member.slug] >= ABSENCE_FOR_RECALL]
    away.sort(key=lambda pair: pair[1])
    away = away[:MAX_RECALLED]
    if not away:
        return []
    texts = dict(ChapterSummary.objects.filter(project=project, chapter__number__in={n for _m, n in away})
                 .values_list("chapter__number", "text"))
    return [(member.display_name, number, texts[number][:RECALL_CHARS]) for member, number in away if texts.get(number)]
