"""What ``export_to_path(project)`` writes, seen from the InstructionPacket builders (``pipeline.steps.packets``):
which optional files exist and where, read lazily with a few queries and without loading chapter texts.
Also the context selections of facts §10.1 and §12 (hard rules, characters) that packets name."""
from __future__ import annotations

from functools import cached_property

from pipeline.book.plan_validation import HEADING
from pipeline.steps.step_files import SEED_RANGE, plan_range
from projects.filetree import paths as tree
from projects.models import Project, StoryState

OPTIONAL_ROOT_FILES = {"platform_profile": "platform-profile.json",
                       "platform_writing_guide": "platform-writing-guide.md",
                       "genre_weight_profiles": "genre-weight-profiles.json",
                       "web_novel_cliche_lint": "web-novel-cliche-lint.json"}  # only in trees imported with them
MAX_FALLBACK_CHARACTERS = 15  # facts §12


class ExportView:
    """What ``export_to_path(project)`` would write, read lazily with a few queries."""

    def __init__(self, project: Project) -> None:
        self.project = project

    @cached_property
    def root_paths(self) -> dict[str, str]:
        p = self.project
        found = {"project_brief": tree.BRIEF}
        if p.style_profile:
            found["style_profile"] = tree.STYLE_PROFILE
        if p.ai_blacklist:
            found["ai_blacklist"] = tree.AI_BLACKLIST
        if p.style_drift and p.style_drift.get("active"):
            found["style_drift"] = tree.STYLE_DRIFT
        extra = set(p.extra_files.filter(path__in=OPTIONAL_ROOT_FILES.values()).values_list("path", flat=True))
        found.update({key: path for key, path in OPTIONAL_ROOT_FILES.items() if path in extra})
        if StoryState.objects.filter(project=p).exists():
            found["current_state"] = tree.CURRENT_STATE
        if self.rules:
            found["world_rules"] = tree.WORLD_RULES
        if p.storylines_meta or self.storylines:
            found["storylines"] = tree.STORYLINES
        if p.foreshadowing.exists():
            found["global_foreshadowing"] = tree.GLOBAL_FORESHADOWING
        return found

    def pick(self, *keys: str) -> dict[str, str]:
        return {key: self.root_paths[key] for key in keys if key in self.root_paths}

    @cached_property
    def rules(self) -> list[tuple[str, str, str, str]]:
        return list(self.project.world_rules.values_list("rule_id", "rule", "constraint_type", "canon_status"))

    @cached_property
    def storylines(self) -> set[str]:
        return set(self.project.storylines.values_list("slug", flat=True))

    @cached_property
    def characters(self) -> list[tuple[str, str, str]]:
        return list(self.project.characters.filter(status="active").order_by("slug")
                    .values_list("slug", "display_name", "canon_status"))

    def volume(self, number: int):
        return self.project.volumes.filter(number=number).first()

    def contract(self, chapter: int):
        return self.project.chapter_contracts.select_related("volume").filter(chapter=chapter).first()

    def summaries_before(self, chapter: int, count: int) -> list[str]:
        numbers = (self.project.chapter_summaries.filter(chapter__number__lt=chapter)
                   .order_by("-chapter__number").values_list("chapter__number", flat=True)[:count])
        return [tree.summary_path(n) for n in sorted(numbers)]

    def seeded(self) -> bool:
        """facts §6: volumes/vol-01 starts with the F0 seed (outline chapters 1, 2, 3 and their contracts)."""
        volume = self.volume(1)
        if volume is None or [int(n) for n in HEADING.findall(volume.outline)][:3] != [1, 2, 3]:
            return False
        seeds = volume.contracts.filter(chapter__range=SEED_RANGE).values_list("chapter", flat=True)
        return sorted(seeds) == [1, 2, 3]

    def plan_range(self) -> tuple[range, tuple[int, int] | None]:
        p = self.project
        return plan_range(p.current_volume, p.last_completed_chapter, seeded=p.current_volume == 1 and self.seeded())


def hard_rules(view: ExportView) -> list[str]:
    """facts §10.1: established hard rules as ``"W-001: <rule>"``."""
    return [f"{rid}: {rule}" for rid, rule, kind, status in view.rules if kind == "hard" and status == "established"]


def character_paths(view: ExportView, data: dict, *, planned: bool) -> dict[str, list[str]]:
    """facts §12: the contract's ``character_states`` characters (by id or display name), else the first 15."""
    preconditions = data.get("preconditions")
    states = preconditions.get("character_states") if isinstance(preconditions, dict) else None
    wanted = {str(key).strip().lower() for key in states} if isinstance(states, dict) else set()
    eligible = [c for c in view.characters if c[2] != "deprecated" and (planned or c[2] != "planned")]
    chosen = [c for c in eligible if c[0].lower() in wanted or c[1].lower() in wanted]
    if not chosen:  # the writer's fallback puts planned characters first (they carry future foreshadowing)
        chosen = sorted(eligible, key=lambda c: c[2] != "planned")[:MAX_FALLBACK_CHARACTERS]
    found: dict[str, list[str]] = {}
    for prefix, group in (("", [c for c in chosen if c[2] != "planned"]),
                          ("planned_", [c for c in chosen if c[2] == "planned"])):
        if group:
            found[f"{prefix}character_contracts"] = [tree.character_path("active", c[0], "json") for c in group]
            found[f"{prefix}character_profiles"] = [tree.character_path("active", c[0], "md") for c in group]
    return found
