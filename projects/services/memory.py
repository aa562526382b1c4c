"""Memory levels of the book (seed 002 and beyond): archived summaries, volume summaries and the
synopsis, written by the pipeline's maintenance step."""
from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from projects.json_validation import validate_json
from projects.lock_objects import project_lock
from projects.models import ArchivedSummary, Project


@transaction.atomic
def archived_summary_add(*, project: Project, level: str, chapter_start: int, chapter_end: int, text: str,
                         volume_number: int | None = None, supersedes: Iterable[int] = ()) -> ArchivedSummary:
    """Add one memory level entry; the entries it folds in stay, marked superseded, for history.
    Idempotent per (level, range): a repeated maintenance step finds the row already there."""
    project_lock(project.pk)
    row, created = ArchivedSummary.objects.get_or_create(
        project=project, level=level, chapter_start=chapter_start, chapter_end=chapter_end,
        defaults={"text": text, "volume_number": volume_number},
    )
    if created:
        ArchivedSummary.objects.filter(project=project, pk__in=list(supersedes)).update(superseded=True)
    return row


@transaction.atomic
def project_style_drift_set(*, project: Project, style_drift: dict | None) -> None:
    """Store the style-drift state computed every 5 chapters (facts §13); pipeline-owned, so no
    human-edit history entry."""
    if style_drift is not None:
        validate_json("STYLE_DRIFT", style_drift, label="style_drift")
    Project.objects.filter(pk=project.pk).update(style_drift=style_drift)
