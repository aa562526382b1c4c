"""Validating a volume plan before anyone approves it: exactly the rules of novel-writer-cli's
``validateVolumePlanArtifacts`` (facts §6), on plain data (no database).

A plan is: the outline markdown, the storyline schedule, the foreshadowing plan, the new
characters and one contract per chapter of the range. ``validate_volume_plan`` returns errors
(the plan cannot be committed) and warnings (shown, not blocking), each naming the artifact.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from projects.json_validation import json_issues

HEADING = re.compile(r"^###\s*第\s*(\d+)\s*章", re.MULTILINE)
OUTLINE_KEYS = ("Storyline", "POV", "Location", "Conflict", "Arc", "Foreshadowing", "StateChanges", "TransitionHint")
EXCITEMENT_TYPES = ("reversal", "face_slap", "power_up", "reveal", "cliffhanger", "setup", "null")
NEW_CHARACTER_ROLES = ("antagonist", "supporting", "minor")
MAX_ACTIVE_STORYLINES = 4


@dataclass
class PlanReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class VolumePlan:
    volume: int
    chapter_start: int
    chapter_end: int
    outline: str
    schedule: Any
    foreshadowing: Any
    new_characters: Any
    contracts: dict[int, Any]  # chapter -> contract


def outline_blocks(outline: str) -> dict[int, str]:
    """Each ``### 第 N 章`` block's text by chapter (a repeated chapter keeps its first block)."""
    matches = list(HEADING.finditer(outline))
    blocks: dict[int, str] = {}
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(outline)
        blocks.setdefault(int(match[1]), outline[match.start():end])
    return blocks


def outline_value(block: str, key: str) -> str | None:
    """The value of a ``- **Key**: value`` line of an outline block, or None without that line."""
    found = re.search(rf"^[ \t]*-?[ \t]*\*\*{key}\*\*[ \t]*[:：][ \t]*([^\n]*)$", block, re.MULTILINE)
    return found[1].strip() if found else None


def _check_outline(plan: VolumePlan, report: PlanReport) -> dict[int, str]:
    numbers = [int(n) for n in HEADING.findall(plan.outline)]
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    if duplicates:
        report.errors.append(f"outline.md: chapters {duplicates} have more than one heading")
    expected = set(range(plan.chapter_start, plan.chapter_end + 1))
    if missing := sorted(expected - set(numbers)):
        report.errors.append(f"outline.md: no '### 第 N 章' block for chapters {missing}")
    if outside := sorted(set(numbers) - expected):
        report.errors.append(f"outline.md: chapters {outside} are outside the range "
                             f"{plan.chapter_start}–{plan.chapter_end}")
    storylines: dict[int, str] = {}
    for number, block in outline_blocks(plan.outline).items():
        if number not in expected:
            continue
        for key in OUTLINE_KEYS:
            if outline_value(block, key) is None:
                report.errors.append(f"outline.md chapter {number}: missing the line '- **{key}**:'")
        line = outline_value(block, "Storyline")
        if line == "":
            report.errors.append(f"outline.md chapter {number}: Storyline is empty")
        elif line:
            storylines[number] = line
        excitement = outline_value(block, "ExcitementType")
        if excitement is not None and excitement not in EXCITEMENT_TYPES:
            report.warnings.append(f"outline.md chapter {number}: unknown ExcitementType {excitement!r}")
    return storylines


def _check_schedule(plan: VolumePlan, storylines: dict[int, str], report: PlanReport) -> None:
    schedule = plan.schedule
    if not isinstance(schedule, dict) or not isinstance(schedule.get("active_storylines"), list):
        report.errors.append("storyline-schedule.json: must be an object with an active_storylines array")
        return
    active = []
    for item in schedule["active_storylines"]:
        # facts §15.1: the CLI wants strings; Novelsite also reads the PRD's objects
        name = item if isinstance(item, str) else item.get("storyline_id") if isinstance(item, dict) else None
        if isinstance(name, str) and name.strip():
            active.append(name.strip())
        else:
            report.warnings.append(f"storyline-schedule.json: ignored active_storylines entry {item!r}")
    if not 1 <= len(active) <= MAX_ACTIVE_STORYLINES:
        report.errors.append(f"storyline-schedule.json: active_storylines has {len(active)} entries; 1–4 allowed")
    for number, line in sorted(storylines.items()):
        if line not in active:
            report.errors.append(f"outline.md chapter {number}: Storyline {line!r} is not in active_storylines")


def _check_foreshadowing(plan: VolumePlan, report: PlanReport) -> None:
    plan_data = plan.foreshadowing
    if not isinstance(plan_data, dict) or not isinstance(plan_data.get("items"), list):
        report.errors.append("foreshadowing.json: must be an object with an items array")
        return
    if plan_data.get("schema_version", 1) != 1:
        report.warnings.append(f"foreshadowing.json: schema_version {plan_data.get('schema_version')} is not 1")


def _check_new_characters(plan: VolumePlan, report: PlanReport) -> None:
    if not isinstance(plan.new_characters, list):
        report.errors.append("new-characters.json: must be an array")
        return
    for index, item in enumerate(plan.new_characters):
        where = f"new-characters.json[{index}]"
        if not isinstance(item, dict):
            report.errors.append(f"{where}: must be an object")
            continue
        for key in ("name", "brief"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                report.errors.append(f"{where}.{key}: must be a non-empty string")
        if item.get("role") not in NEW_CHARACTER_ROLES:
            report.errors.append(f"{where}.role: must be one of {', '.join(NEW_CHARACTER_ROLES)}")
        first = item.get("first_chapter")
        if not isinstance(first, int) or isinstance(first, bool) or not plan.chapter_start <= first <= plan.chapter_end:
            report.errors.append(f"{where}.first_chapter: must be a chapter in {plan.chapter_start}–{plan.chapter_end}")


def _check_contracts(plan: VolumePlan, storylines: dict[int, str], previous: dict | None,
                     report: PlanReport) -> None:
    for number in range(plan.chapter_start, plan.chapter_end + 1):
        where = f"chapter-contracts/chapter-{number:03d}.json"
        contract = plan.contracts.get(number)
        if contract is None:
            report.errors.append(f"{where}: missing")
            previous = None
            continue
        for issue in json_issues("CHAPTER_CONTRACT", contract):
            report.errors.append(f"{where}: {issue}")
        if not isinstance(contract, dict):
            previous = None
            continue
        if contract.get("chapter") != number:
            report.errors.append(f"{where}: chapter is {contract.get('chapter')!r}, expected {number}")
        if number in storylines and contract.get("storyline_id") != storylines[number]:
            report.errors.append(f"{where}: storyline_id {contract.get('storyline_id')!r} differs from the "
                                 f"outline's Storyline {storylines[number]!r}")
        if contract.get("excitement_type") not in (None, *EXCITEMENT_TYPES):
            report.warnings.append(f"{where}: unknown excitement_type {contract.get('excitement_type')!r}")
        _check_chain(where, previous, contract, report)
        previous = contract


def _check_chain(where: str, previous: dict | None, contract: dict, report: PlanReport) -> None:
    """facts §6: every key of the previous chapter's postconditions.state_changes must appear in
    this chapter's preconditions.character_states (skipped without a previous contract)."""
    if not isinstance(previous, dict):
        return
    changed = ((previous.get("postconditions") or {}).get("state_changes") or {})
    states = ((contract.get("preconditions") or {}).get("character_states") or {})
    if not isinstance(changed, dict) or not isinstance(states, dict):
        return
    if missing := sorted(set(changed) - set(states)):
        report.errors.append(f"{where}: preconditions.character_states lacks {missing}, changed by the "
                             "previous chapter's postconditions")


def validate_volume_plan(plan: VolumePlan, *, previous_contract: dict | None = None) -> PlanReport:
    """All facts §6 rules. ``previous_contract`` is the contract of the chapter before the range
    (from the committed volume), for the chain rule of the first chapter."""
    report = PlanReport()
    storylines = _check_outline(plan, report)
    _check_schedule(plan, storylines, report)
    _check_foreshadowing(plan, report)
    _check_new_characters(plan, report)
    _check_contracts(plan, storylines, previous_contract, report)
    return report
