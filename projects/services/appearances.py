"""Character appearances (#18): written when a chapter is committed, from its contract and its
delta; ``character_appearances_add`` is the door for other sources (the facts ledger), and
``character_appearances_rebuild`` recomputes a project's rows (after an import)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from projects.appearances import character_index, contract_cast, delta_cast
from projects.models import AppearanceSource, ChangeSource, Chapter, CharacterAppearance, Project

# the deltas that tell where a character was: a person's correction of the state does not
RECORDED_DELTA_SOURCES = (ChangeSource.PIPELINE, ChangeSource.IMPORT)


def _rows(project: Project, chapter: Chapter, slugs: Iterable[str], source: str) -> list[CharacterAppearance]:
    return [CharacterAppearance(project=project, chapter=chapter, chapter_number=chapter.number,
                                character_slug=slug[:60], source=source) for slug in sorted(set(slugs)) if slug]


def character_appearances_add(*, project: Project, chapter: Chapter, slugs: Iterable[str], source: str) -> int:
    """Record that these characters appear in ``chapter`` (idempotent); returns the rows asked for.
    Slugs are taken as given: the caller resolves names (``projects.appearances.character_index``)."""
    if source not in AppearanceSource.values:
        raise ValueError(f"unknown appearance source {source!r}")
    rows = _rows(project, chapter, slugs, source)
    CharacterAppearance.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def character_appearances_record(*, project: Project, chapter: Chapter, contract: Any, delta: Any) -> None:
    """The appearances a committed chapter's contract and delta show (inside the commit): two
    queries, the characters and one insert."""
    index = character_index(project.characters.values_list("slug", "display_name"))
    rows = (_rows(project, chapter, contract_cast(contract, index), AppearanceSource.CONTRACT)
            + _rows(project, chapter, delta_cast(delta, index), AppearanceSource.DELTA))
    if rows:
        CharacterAppearance.objects.bulk_create(rows, ignore_conflicts=True)


@transaction.atomic
def character_appearances_rebuild(*, project: Project) -> int:
    """Recompute the contract and delta appearances of every committed chapter (the ledger's
    rows are left alone). A fixed number of queries; returns the rows written."""
    index = character_index(project.characters.values_list("slug", "display_name"))
    CharacterAppearance.objects.filter(project=project).exclude(source=AppearanceSource.LEDGER).delete()
    chapters = dict(project.chapters.values_list("number", "pk"))
    rows = []

    def add(number: int, slugs: set[str], source: str) -> None:
        rows.extend(CharacterAppearance(project=project, chapter_id=chapters[number], chapter_number=number,
                                        character_slug=slug, source=source) for slug in slugs)

    for number, data in project.chapter_contracts.filter(chapter__in=list(chapters)).values_list("chapter", "data"):
        add(number, contract_cast(data, index), AppearanceSource.CONTRACT)
    for number, delta in project.state_changes.filter(chapter__in=list(chapters),
                                                      source__in=RECORDED_DELTA_SOURCES).values_list("chapter",
                                                                                                     "delta"):
        add(number, delta_cast(delta, index), AppearanceSource.DELTA)
    CharacterAppearance.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return len(rows)
