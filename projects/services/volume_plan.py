"""Committing an approved volume plan, and weaving in the characters a plan introduces (facts §6).

The plan arrives as plain data (``StagedVolumePlan``), already validated by the pipeline, so that
``projects`` never sees a run. Everything lands in one transaction or nothing does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from projects.errors import InvalidData
from projects.lock_objects import project_lock
from projects.models import Character, ChapterContract, Volume
from projects.models.project import Project
from projects.services.editing import full_clean_or_raise


@dataclass(frozen=True)
class StagedVolumePlan:
    volume: int
    chapter_start: int
    chapter_end: int
    outline: str
    schedule: dict[str, Any]
    foreshadowing: dict[str, Any]
    new_characters: list[dict[str, Any]]
    contracts: dict[int, dict[str, Any]]
    title: str = ""


def _merged_schedule(existing: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    """facts §6 seed merge: active storylines de-duplicated as strings, convergence events unioned."""
    lines = [*(existing.get("active_storylines") or []), *(incoming.get("active_storylines") or [])]
    names = list(dict.fromkeys(s if isinstance(s, str) else s.get("storyline_id") for s in lines if s))
    events = list(existing.get("convergence_events") or [])
    events += [e for e in incoming.get("convergence_events") or [] if e not in events]
    return {**existing, **incoming, "active_storylines": names, "convergence_events": events}


def _plan_items(plan: dict[str, Any]) -> list[dict[str, Any]]:
    items = plan.get("items") if isinstance(plan, dict) else plan
    if items is None and isinstance(plan, dict):
        items = plan.get("foreshadowing")
    return [item for item in items or [] if isinstance(item, dict)]


def _merged_foreshadowing(existing: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    """facts §6 seed merge: items merged by id; written with both keys (facts §15.2). The plan's
    other keys (``volume`` …) are kept."""
    merged: dict[str, dict[str, Any]] = {}
    for item in [*_plan_items(existing), *_plan_items(incoming)]:
        merged[str(item.get("id"))] = {**merged.get(str(item.get("id")), {}), **item}
    items = list(merged.values())
    keys = {**(existing if isinstance(existing, dict) else {}), **(incoming if isinstance(incoming, dict) else {})}
    return {"schema_version": 1, **keys, "items": items, "foreshadowing": items}


@transaction.atomic
def volume_plan_commit(*, project: Project, plan: StagedVolumePlan, user: AbstractBaseUser | None = None) -> Volume:
    """Write the volume (outline, schedule, foreshadowing plan, new characters) and one contract per
    chapter. A volume that already holds chapters before the range (the quick start's F0 seed of
    volume 1) is merged into, never overwritten: its outline blocks and contracts stay.

    Locks: the project. Raises InvalidData (nothing written) if a contract of the range exists."""
    project_lock(project.pk)
    clashing = ChapterContract.objects.filter(project=project, chapter__range=(plan.chapter_start, plan.chapter_end))
    if clashing.exists():
        raise InvalidData(f"chapters {plan.chapter_start}–{plan.chapter_end} already have contracts: "
                          f"{sorted(clashing.values_list('chapter', flat=True))[:5]}")
    volume = Volume.objects.filter(project=project, number=plan.volume).first()
    if volume is None:
        volume = Volume(project=project, number=plan.volume, title=plan.title or f"第{plan.volume}卷",
                        outline=plan.outline, storyline_schedule=plan.schedule,
                        foreshadowing_plan=_merged_foreshadowing({}, plan.foreshadowing),
                        new_characters=plan.new_characters)
    else:
        volume.outline = "\n\n".join(part for part in (volume.outline.rstrip(), _blocks_only(plan.outline)) if part)
        volume.storyline_schedule = _merged_schedule(volume.storyline_schedule or {}, plan.schedule)
        volume.foreshadowing_plan = _merged_foreshadowing(volume.foreshadowing_plan or {}, plan.foreshadowing)
        known = {(c.get("name"), c.get("first_chapter")) for c in volume.new_characters or []}
        volume.new_characters = [*(volume.new_characters or []),
                                 *[c for c in plan.new_characters
                                   if (c.get("name"), c.get("first_chapter")) not in known]]
        volume.version += 1
    volume._history_user = user
    full_clean_or_raise(volume)
    volume.save()
    for chapter in range(plan.chapter_start, plan.chapter_end + 1):
        contract = ChapterContract(project=project, volume=volume, chapter=chapter, data=plan.contracts[chapter])
        contract._history_user = user
        full_clean_or_raise(contract)
        contract.save()
    return volume


def _blocks_only(outline: str) -> str:
    """The ``### 第 N 章`` blocks of an outline, without its volume heading (for appending)."""
    start = outline.find("### ")
    return outline[start:].strip() if start >= 0 else outline.strip()


@transaction.atomic
def characters_add(*, project: Project, characters: list[dict[str, Any]],
                   user: AbstractBaseUser | None = None) -> list[Character]:
    """Create characters from CharacterWeaver output ({id, display_name, profile, contracts}); a
    slug that exists already is left as it is (people may have created it meanwhile)."""
    project_lock(project.pk)
    existing = set(project.characters.values_list("slug", flat=True))
    created = []
    for data in characters:
        if data["id"] in existing:
            continue
        character = Character(project=project, slug=data["id"], display_name=data["display_name"],
                              profile=data.get("profile", ""), contracts=data.get("contracts", []))
        character._history_user = user
        full_clean_or_raise(character)
        character.save()
        existing.add(data["id"])
        created.append(character)
    return created
