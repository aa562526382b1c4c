"""Closing a reviewed volume (facts §8, vol-review.md): its review report, the final-state snapshot
(``state/history/vol-VV-final-state.json``) and retired characters cleaned out of the state."""
from __future__ import annotations

from django.db import transaction
from django.db.models import F

from projects.lock_objects import project_lock, story_state_lock
from projects.models import ChangeSource, Volume, VolumeStateSnapshot
from projects.models.project import Project
from projects.models.volumes import VolumeStatus
from projects.services.story_state import story_state_apply_patch


@transaction.atomic
def volume_review_close(*, project: Project, volume: int, last_chapter: int, review: str, retired: list[str],
                        source: str = ChangeSource.PIPELINE) -> None:
    """Locks: project, then StoryState. Retired characters still in the state are removed with one
    patch (a changelog entry of its own, so the state stays the replay of its changelog); then the
    state as it stands is the volume's final snapshot."""
    project_lock(project.pk)
    state = story_state_lock(project)
    gone = sorted(slug for slug in retired if slug in (state.data.get("characters") or {}))
    if gone:
        line = (Volume.objects.filter(project=project, number=volume).values_list("storyline_schedule", flat=True)
                .first() or {}).get("active_storylines") or ["main-arc"]
        story_state_apply_patch(project=project, source=source, delta={
            "chapter": last_chapter, "base_state_version": state.state_version,
            "storyline_id": line[0] if isinstance(line[0], str) else line[0].get("storyline_id", "main-arc"),
            "ops": [{"op": "remove", "path": f"characters.{slug}"} for slug in gone]})
        state = story_state_lock(project)
    VolumeStateSnapshot.objects.update_or_create(project=project, volume_number=volume, defaults={"data": state.data})
    Volume.objects.filter(project=project, number=volume).update(review=review, status=VolumeStatus.CLOSED,
                                                                   version=F("version") + 1)
