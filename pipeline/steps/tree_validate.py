"""``validate`` of one step against a project tree on disk, as novel-writer-cli v0.5.0's ``novel validate``
does, so that an outside executor (a coding agent using the original tool's skills) can run a step on an
exported tree and hand the result back. No database: it works on a directory.

Rules per step (facts §5, §6, §7.1, §8); each error names the file:

* ``quickstart:world`` rules.json shape; ``characters`` ≥1 ``contracts/*.json``, each an object; ``style``
  ``source_type``; ``f0`` the full volume-plan validation of ``staging/volumes/vol-01`` for [1, 3];
  ``trial`` non-empty (warns without a leading ``#``); ``results`` an eval object (warns on ``overall`` /
  ``recommendation``). ``trial`` and ``results`` need the committed F0 seed.
* ``volume:outline|validate|commit`` the full plan validation of ``staging/volumes/vol-VV`` for
  [last+1, V*30] (or [4, 30] after the F0 seed); ``commit`` also checks the checkpoint's preconditions.
* ``chapter:NNN:draft|summarize|refine|judge`` the §7.1 table, with ``delta.storyline_id`` checked for
  traversal; ``review`` is always OK with a warning; ``commit`` checks the staged files commit needs.
  ``title-fix`` / ``hook-fix`` are refused: Novelsite implements no platform title/hook policy.
* ``review:*`` the ``staging/vol-review/`` artifacts.

``validate_step`` never raises: a hostile tree (``..``, symlinks out of the tree, non-JSON, wrong types,
huge files) gives errors. ``pipeline.steps.tree_advance.advance_step`` applies a validated step.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.questions.spec import StepId, validate_answer_path
from pipeline.book.plan_validation import HEADING, VolumePlan, validate_volume_plan
from pipeline.chapter.platform_rules import hook_field_problems
from pipeline.steps.step_files import (
    QUICKSTART, SEED_RANGE, VOL_REVIEW, PlanRangeError, chapter_staging, plan_dir, plan_range, refuse_unsupported,
    staged_memory_path, step_of,
)
from pipeline.steps.tree_reader import CHECKPOINT, UNREADABLE, TreeReader
from projects.errors import NovelsiteError
from projects.ids import chapter_id, volume_for_chapter
from projects.vocabulary import (
    IDLE_PIPELINE_STAGES, ORCHESTRATOR_STATES, PIPELINE_STAGES, STYLE_SOURCE_TYPES, OrchestratorState, QuickstartPhase,
    VolumePipelineStage, checkpoint_state,
)


@dataclass
class StepCheck:
    step: str
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def read_checkpoint(reader: TreeReader) -> dict[str, Any] | None:
    """``.checkpoint.json`` with its required fields checked (facts §3); None (with errors) otherwise."""
    data = reader.json_object(CHECKPOINT, what="file: this is not a project root")
    if data is None:
        return None
    problems = []
    if not (_is_int(data.get("last_completed_chapter")) and data["last_completed_chapter"] >= 0):
        problems.append("last_completed_chapter must be an integer >= 0")
    if not (_is_int(data.get("current_volume")) and data["current_volume"] >= 1):
        problems.append("current_volume must be an integer >= 1")
    inflight = data.get("inflight_chapter")
    if inflight is not None and not (_is_int(inflight) and inflight >= 1):
        problems.append("inflight_chapter must be null or an integer >= 1")
    if data.get("pipeline_stage") not in (None, *PIPELINE_STAGES):
        problems.append(f"pipeline_stage must be null or one of {', '.join(PIPELINE_STAGES)}")
    if "orchestrator_state" in data and data["orchestrator_state"] not in ORCHESTRATOR_STATES:
        problems.append(f"orchestrator_state must be one of {', '.join(ORCHESTRATOR_STATES)}")
    for counter in ("revision_count", "hook_fix_count", "title_fix_count"):
        if counter in data and not (_is_int(data[counter]) and data[counter] >= 0):
            problems.append(f"{counter} must be an integer >= 0")
    reader.errors.extend(f"{CHECKPOINT}: {problem}" for problem in problems)
    return None if problems else data


# --- Volume plans (facts §6) ------------------------------------------------------------------------
def outline_chapters(text: str) -> list[int]:
    return [int(n) for n in HEADING.findall(text)]


def seed_state(reader: TreeReader) -> tuple[bool, bool]:
    """(seed base, exact seed) of ``volumes/vol-01`` (facts §5, §6): the base has the four plan files, an
    outline whose first three chapters are 1, 2, 3 and contracts 1–3 with the right ``chapter``; the exact
    seed has nothing else (outline chapters exactly 1–3, exactly those three contract files)."""
    base = plan_dir(1, staged=False)
    outline = reader.text(f"{base}/outline.md", quiet=True)
    if outline is None or outline_chapters(outline)[:3] != [1, 2, 3]:
        return False, False
    for name in ("storyline-schedule.json", "foreshadowing.json", "new-characters.json"):
        if reader.json(f"{base}/{name}", quiet=True) is UNREADABLE:
            return False, False
    for number in range(SEED_RANGE[0], SEED_RANGE[1] + 1):
        contract = reader.json_object(f"{base}/chapter-contracts/{chapter_id(number)}.json", quiet=True)
        if contract is None or contract.get("chapter") != number:
            return False, False
    names = reader.list_files(f"{base}/chapter-contracts", "", quiet=True) or []
    visible = [name for name in names if not name.startswith(".")]
    exact = outline_chapters(outline) == [1, 2, 3] and visible == [f"{chapter_id(n)}.json" for n in (1, 2, 3)]
    return True, exact


def tree_plan_range(reader: TreeReader, checkpoint: dict[str, Any]) -> tuple[range, tuple[int, int] | None]:
    """facts §6 (``resolveVolumeChapterRange``): the seed moves the range to [4, 30] when the seed is exact,
    or when its base is there and a plan is being staged."""
    base, exact = seed_state(reader)
    staging = reader.is_dir(plan_dir(1, staged=True))
    return plan_range(checkpoint["current_volume"], checkpoint["last_completed_chapter"],
                      seeded=exact or (base and staging))


def check_plan(reader: TreeReader, check: StepCheck, volume: int, chapters: range, *, staged: bool = True) -> None:
    """All of ``validateVolumePlanArtifacts`` on the plan under ``plan_dir(volume)``."""
    base = plan_dir(volume, staged=staged)
    outline = reader.text(f"{base}/outline.md")
    schedule = reader.json(f"{base}/storyline-schedule.json")
    foreshadowing = reader.json(f"{base}/foreshadowing.json")
    new_characters = reader.json(f"{base}/new-characters.json")
    contracts = {}
    for number in chapters:
        contract = reader.json(f"{base}/chapter-contracts/{chapter_id(number)}.json")
        if contract is not UNREADABLE:
            contracts[number] = contract
    previous = None
    if chapters.start > 1:  # the chain rule's first link: the committed contract before the range
        before = chapters.start - 1
        previous = reader.json_object(f"{plan_dir(volume_for_chapter(before), staged=False)}/chapter-contracts/"
                                      f"{chapter_id(before)}.json", quiet=True)
    plan = VolumePlan(volume=volume, chapter_start=chapters.start, chapter_end=chapters.stop - 1,
                      outline=outline or "", schedule=None if schedule is UNREADABLE else schedule,
                      foreshadowing=None if foreshadowing is UNREADABLE else foreshadowing,
                      new_characters=None if new_characters is UNREADABLE else new_characters, contracts=contracts)
    report = validate_volume_plan(plan, previous_contract=previous)
    for message in report.errors:  # messages name the file relative to the plan directory
        full = f"{base}/{message}"
        if not any(full.startswith(failed) for failed in reader.failed):  # already reported as unreadable
            check.errors.append(full)
    check.warnings.extend(f"{base}/{message}" for message in report.warnings)


# --- Quick start (facts §5) -------------------------------------------------------------------------
def _quickstart(reader: TreeReader, check: StepCheck, checkpoint: dict, step: StepId) -> None:
    phase = step.phase
    if phase == QuickstartPhase.WORLD:
        _check_rules(reader, check)
    elif phase == QuickstartPhase.CHARACTERS:
        names = reader.list_files(QUICKSTART["contracts_dir"], ".json")
        if names is not None and not names:
            check.errors.append(f"{QUICKSTART['contracts_dir']}: expected at least 1 *.json contract file")
        for name in names or []:
            reader.json_object(f"{QUICKSTART['contracts_dir']}/{name}")
    elif phase == QuickstartPhase.STYLE:
        profile = reader.json_object(QUICKSTART["style_profile"])
        if profile is not None and profile.get("source_type") not in STYLE_SOURCE_TYPES:
            check.errors.append(f"{QUICKSTART['style_profile']}: source_type must be one of "
                                f"{', '.join(STYLE_SOURCE_TYPES)}")
    elif phase == QuickstartPhase.F0:
        check_plan(reader, check, 1, range(SEED_RANGE[0], SEED_RANGE[1] + 1))
        if reader.exists(plan_dir(1, staged=False)):
            check.warnings.append(f"{plan_dir(1, staged=False)}: already exists; advance refuses to overwrite it")
    else:  # trial, results: both need the committed seed
        if not seed_state(reader)[1]:
            check.errors.append(f"{plan_dir(1, staged=False)}: the committed F0 seed (outline chapters exactly 1–3 "
                                "and chapter-001..003.json) is missing; run quickstart:f0 first")
        if phase == QuickstartPhase.TRIAL:
            text = reader.text(QUICKSTART["trial_chapter"])
            if text is not None and not text.strip():
                check.errors.append(f"{QUICKSTART['trial_chapter']}: empty draft")
            elif text is not None and not text.lstrip().startswith("#"):
                check.warnings.append(f"{QUICKSTART['trial_chapter']}: does not start with a Markdown H1 (# ...)")
        else:
            evaluation = reader.json_object(QUICKSTART["evaluation"])
            if evaluation is not None and not _is_number(evaluation.get("overall")):
                check.warnings.append(f"{QUICKSTART['evaluation']}: overall is not a number")
            if evaluation is not None and not isinstance(evaluation.get("recommendation"), str):
                check.warnings.append(f"{QUICKSTART['evaluation']}: recommendation is not a string")


def _check_rules(reader: TreeReader, check: StepCheck) -> None:
    rel = QUICKSTART["rules"]
    data = reader.json_object(rel)
    if data is None:
        return
    rules = data.get("rules")
    if not isinstance(rules, list):
        check.errors.append(f"{rel}: must have a rules array")
        return
    if not rules:
        check.warnings.append(f"{rel}: rules is empty")
    for index, rule in enumerate(rules):
        at = f"{rel}: rules[{index}]"
        if not isinstance(rule, dict):
            check.errors.append(f"{at} must be an object")
            continue
        check.errors.extend(f"{at}.{key} must be a non-empty string" for key in ("id", "category", "rule")
                            if not _is_text(rule.get(key)))
        if rule.get("constraint_type") not in ("hard", "soft"):
            check.errors.append(f"{at}.constraint_type must be hard or soft")
        if not isinstance(rule.get("exceptions"), list):
            check.errors.append(f"{at}.exceptions must be an array")


# --- Volume planning (facts §6) ---------------------------------------------------------------------
def _volume(reader: TreeReader, check: StepCheck, checkpoint: dict, step: StepId) -> None:
    volume = checkpoint["current_volume"]
    try:
        chapters, _seed = tree_plan_range(reader, checkpoint)
    except PlanRangeError as exc:
        check.errors.append(f"{CHECKPOINT}: {exc.message}")
        return
    if step.phase == "commit":
        _check_volume_commit_preconditions(checkpoint, check)
        staged, final = plan_dir(volume, staged=True), plan_dir(volume, staged=False)
        if not reader.exists(staged) and reader.exists(f"{final}/outline.md"):
            check.warnings.append(f"{final}: the plan is already committed (no {staged}); nothing to validate")
            return
    check_plan(reader, check, volume, chapters)


def _check_volume_commit_preconditions(checkpoint: dict, check: StepCheck) -> None:
    """facts §6: VOL_PLANNING, volume stage ``commit``, an idle chapter pipeline."""
    if checkpoint_state(checkpoint) != OrchestratorState.VOL_PLANNING:
        check.errors.append(f"{CHECKPOINT}: orchestrator_state must be VOL_PLANNING to commit a volume plan")
    if checkpoint.get("volume_pipeline_stage") != VolumePipelineStage.COMMIT:
        check.errors.append(f"{CHECKPOINT}: volume_pipeline_stage must be 'commit' (advance volume:validate first)")
    if checkpoint.get("pipeline_stage") not in IDLE_PIPELINE_STAGES or checkpoint.get("inflight_chapter") is not None:
        check.errors.append(f"{CHECKPOINT}: the chapter pipeline must be idle (pipeline_stage null or committed, "
                            "inflight_chapter null)")


# --- Chapter pipeline (facts §7.1, §7.4) ------------------------------------------------------------
def _chapter(reader: TreeReader, check: StepCheck, checkpoint: dict, step: StepId) -> None:
    files, stage = chapter_staging(step.chapter), step.phase
    if stage == "review":
        check.warnings.append("chapter review has no machine-validated outputs: fix the chapter by hand, then "
                              "re-run judge")
        return
    text = reader.text(files.chapter)
    if stage in ("draft", "commit") and text is not None and not text.strip():
        check.errors.append(f"{files.chapter}: empty draft")
    if stage == "summarize" or stage == "commit":
        reader.text(files.summary)
        reader.json_object(files.crossref)  # facts §7.1: an object; its fields are the judge's business
        delta = reader.json_object(files.delta)
        if delta is not None:
            _check_delta(reader, check, delta, files.delta, step.chapter, strict=stage == "commit")
    if stage == "refine" and not reader.exists(files.refiner_changes):
        check.warnings.append(f"{files.refiner_changes}: missing optional changes log")
    if stage in ("judge", "commit"):
        evaluation = reader.json_object(files.evaluation)
        if evaluation is not None:
            _check_eval(reader, check, evaluation, files.evaluation, step.chapter, commit=stage == "commit")
        if text is not None:
            _check_story(reader, check, text, files, step.chapter)


def _check_story(reader: TreeReader, check: StepCheck, text: str, files, chapter: int) -> None:
    """#18: the story checks, as the pipeline's judge runs them: violations block the step, suspicions
    are warnings for the person (or the judge) to weigh."""
    from pipeline.chapter.story_checks import story_checks
    from pipeline.chapter.story_checks.tree_inputs import tree_story_inputs

    delta = reader.json_object(files.delta, quiet=True) if reader.exists(files.delta) else None
    report = story_checks(text, tree_story_inputs(reader, chapter, delta))
    check.errors.extend(f"{files.chapter}: {violation}" for violation in report.violations)
    check.warnings.extend(f"{files.chapter}: {suspicion}" for suspicion in report.suspicions)


def _check_delta(reader: TreeReader, check: StepCheck, delta: dict, rel: str, chapter: int, *, strict: bool) -> None:
    number = delta.get("chapter")
    if not _is_number(number) or (strict and not _is_int(number)):
        check.errors.append(f"{rel}: chapter must be {'an integer' if strict else 'a number'}")
    elif number != chapter:
        check.warnings.append(f"{rel}: chapter is {number}, expected {chapter}")
    if strict and not _is_int(delta.get("base_state_version")):
        check.errors.append(f"{rel}: base_state_version must be an integer")
    if strict and not isinstance(delta.get("ops"), list):
        check.errors.append(f"{rel}: ops must be an array")
    storyline = delta.get("storyline_id")
    if not _is_text(storyline):
        check.errors.append(f"{rel}: storyline_id must be a non-empty string")
        return
    # facts §1: rejectPathTraversalInput on delta.storyline_id, then the memory path must stay in the tree
    problems = validate_answer_path(storyline, field="storyline_id")
    if not problems and "/" in storyline.replace("\\", "/"):
        problems = ["storyline_id: must be a single path segment"]
    if problems:
        check.errors.extend(f"{rel}: {problem}" for problem in problems)
        return
    if not re.fullmatch(r"[A-Za-z0-9_-]+", storyline):
        check.warnings.append(f"{rel}: storyline_id {storyline!r} is not [a-zA-Z0-9_-]+ (the rhythm parser skips it)")
    reader.read_bytes(staged_memory_path(storyline))


def _check_eval(reader: TreeReader, check: StepCheck, evaluation: dict, rel: str, chapter: int, *,
                commit: bool) -> None:
    if commit:  # facts §7.4: commit recomputes the gate from overall_final, else overall
        score = evaluation.get("overall_final", evaluation.get("overall"))
        if not _is_number(score):
            check.errors.append(f"{rel}: overall_final or overall must be a finite number")
        return
    number = evaluation.get("chapter")
    if not _is_number(number):
        check.errors.append(f"{rel}: chapter must be a number")
    elif number != chapter:
        check.warnings.append(f"{rel}: chapter is {number}, expected {chapter}")
    if not _is_number(evaluation.get("overall")):
        check.errors.append(f"{rel}: overall must be a number")
    if not isinstance(evaluation.get("recommendation"), str) or not evaluation["recommendation"]:
        check.errors.append(f"{rel}: recommendation must be a non-empty string")
    profile = reader.json_object("platform-profile.json", quiet=True)
    hook_policy = profile.get("hook_policy") if profile else None
    if isinstance(hook_policy, dict) and hook_policy.get("required"):  # facts §7.1: hook fields must be valid
        check.errors.extend(f"{rel}: {problem}" for problem in hook_field_problems(evaluation))


# --- Volume review (facts §8) -----------------------------------------------------------------------
REVIEW_NEEDS = {
    "collect": ("quality_summary",),
    "audit": ("quality_summary", "audit_report"),
    "report": ("quality_summary", "audit_report", "review_report"),
    "cleanup": ("foreshadow_status",),
    "transition": ("quality_summary", "audit_report", "review_report", "foreshadow_status"),
}
REVIEW_CHECKED = {"collect": "quality_summary", "audit": "audit_report", "cleanup": "foreshadow_status"}


def _review(reader: TreeReader, check: StepCheck, checkpoint: dict, step: StepId) -> None:
    checked = REVIEW_CHECKED.get(step.phase)
    for key in REVIEW_NEEDS[step.phase]:
        rel = VOL_REVIEW[key]
        if key == checked:
            data = reader.json_object(rel)
            if data is not None and data.get("schema_version") != 1:
                check.warnings.append(f"{rel}: schema_version is {data.get('schema_version')!r}, expected 1")
        elif step.phase == "report" and key == "review_report":
            text = reader.text(rel)
            if text is not None and not text.strip():
                check.errors.append(f"{rel}: empty report")
        elif not reader.exists(rel, quiet=False):
            check.errors.append(f"{rel}: missing required file")


VALIDATORS = {"quickstart": _quickstart, "volume": _volume, "chapter": _chapter, "review": _review}


def validate_step(root: str | os.PathLike[str], step: str) -> StepCheck:
    """The step's ``novel validate`` against the tree at ``root``. Never raises."""
    check = StepCheck(step=str(step))
    try:
        parsed, check.step = step_of(step)
        refuse_unsupported(parsed, check.step)
        root_path = Path(root)
        if ".." in root_path.parts:
            check.errors.append(f"{root}: the project root must not contain '..'")
        elif not root_path.is_dir():
            check.errors.append(f"{root}: not a directory")
        else:
            reader = TreeReader(root_path, check.errors)
            checkpoint = read_checkpoint(reader)
            if checkpoint is not None:
                VALIDATORS[parsed.kind](reader, check, checkpoint, parsed)
    except NovelsiteError as exc:
        check.errors.append(exc.message)
    except Exception as exc:  # hostile input must come back as an error, never as a crash  # noqa: BLE001
        check.errors.append(f"{check.step}: the tree could not be checked ({type(exc).__name__}: {exc})")
    return check
