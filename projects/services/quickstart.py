"""Committing a quick start (facts §5 ``results``): the world, the storylines, the opening cast, the
style profile and volume 1's F0 seed (chapters 1–3) enter the story together.

The outputs arrive as plain, validated data (``StagedQuickstart``) so ``projects`` never sees a run.
Rows that exist already (a person created a rule or a character before the quick start finished)
are updated by their key rather than duplicated.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from projects.lock_objects import project_lock
from projects.models import ExtraFile, Storyline, WorldDoc, WorldRule
from projects.models.project import Project
from projects.services.editing import full_clean_or_raise
from projects.services.volume_plan import StagedVolumePlan, characters_add, volume_plan_commit

TRIAL_CHAPTER_PATH = "logs/quickstart/trial-chapter.md"  # facts §5: where results copies the trial
TRIAL_EVALUATION_PATH = "logs/quickstart/evaluation.json"


@dataclass(frozen=True)
class StagedQuickstart:
    rules: list[dict[str, Any]]
    world_docs: dict[str, str]
    storylines: list[dict[str, Any]]
    characters: list[dict[str, Any]]
    style_profile: dict[str, Any]
    f0: StagedVolumePlan
    trial_chapter: str
    trial_evaluation: str  # JSON text, kept as the file was


def _upsert(model, *, lookup: dict[str, Any], values: dict[str, Any], user) -> None:
    row = model.objects.filter(**lookup).first()
    if row is None:
        row = model(**lookup, **values)
    else:
        for name, value in values.items():
            setattr(row, name, value)
        row.version += 1
    row._history_user = user
    full_clean_or_raise(row)
    row.save()


@transaction.atomic
def quickstart_commit(*, project: Project, staged: StagedQuickstart, user: AbstractBaseUser | None = None) -> None:
    """Everything the quick start produced, in one transaction. Locks: the project. The caller
    moves the checkpoint (``projects`` does not know the orchestrator's transitions)."""
    project = project_lock(project.pk)
    for position, rule in enumerate(staged.rules):
        _upsert(WorldRule, lookup={"project": project, "rule_id": rule["id"]}, user=user, values={
            "category": rule.get("category", ""), "rule": rule["rule"], "constraint_type": rule["constraint_type"],
            "exceptions": rule.get("exceptions", []), "keywords": rule.get("keywords", []), "position": position})
    for name, content in staged.world_docs.items():
        _upsert(WorldDoc, lookup={"project": project, "name": name}, values={"content": content}, user=user)
    for position, line in enumerate(staged.storylines):
        _upsert(Storyline, lookup={"project": project, "slug": line["id"]}, user=user, values={
            "name": line.get("name") or line["id"], "type": str(line.get("type", "")).removeprefix("type:"),
            "scope": line.get("scope") or "novel", "description": line.get("description", ""),
            "pov_characters": line.get("pov_characters", []), "position": position})
    characters_add(project=project, characters=staged.characters, user=user)
    Project.objects.filter(pk=project.pk).update(style_profile=staged.style_profile)
    volume_plan_commit(project=project, plan=staged.f0, user=user)
    for path, content in ((TRIAL_CHAPTER_PATH, staged.trial_chapter), (TRIAL_EVALUATION_PATH, staged.trial_evaluation)):
        ExtraFile.objects.update_or_create(project=project, path=path, defaults={"content": content})
