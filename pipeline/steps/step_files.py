"""Where each step of novel-writer-cli v0.5.0 reads and writes in the project tree (facts §1, §5–§8), and the
volume-planning chapter range (facts §1, §6). Shared by ``pipeline.steps.packets`` (InstructionPackets built from the
database) and ``pipeline.steps.tree_validate`` / ``pipeline.steps.tree_advance`` (validate/advance against a
tree on disk).

Pure Python, no ORM. All paths are project-relative and use "/".
"""
from __future__ import annotations

from typing import NamedTuple

from pipeline.questions.spec import StepId, format_step_id, parse_step_id
from projects.errors import NovelsiteError
from projects.filetree.paths import CHAPTERS_PER_VOLUME, volume_dir
from projects.ids import chapter_id

SEED_RANGE = (1, 3)  # facts §5: F0 mini-planning writes chapters 1–3 of volume 1
UNSUPPORTED_STAGES = ("title-fix", "hook-fix")  # platform title/hook policies are not implemented in Novelsite

QUICKSTART_DIR = "staging/quickstart"
QUICKSTART = {  # facts §5: staged quick-start artifacts
    "rules": f"{QUICKSTART_DIR}/rules.json",
    "contracts_dir": f"{QUICKSTART_DIR}/contracts",
    "style_profile": f"{QUICKSTART_DIR}/style-profile.json",
    "trial_chapter": f"{QUICKSTART_DIR}/trial-chapter.md",
    "evaluation": f"{QUICKSTART_DIR}/evaluation.json",
}
QUICKSTART_FINAL = {  # facts §5: where quickstart:results copies them
    "rules": "world/rules.json",
    "style_profile": "style-profile.json",
    "trial_chapter": "logs/quickstart/trial-chapter.md",
    "evaluation": "logs/quickstart/evaluation.json",
    "contracts_dir": "characters/active",
}

VOL_REVIEW_DIR = "staging/vol-review"
VOL_REVIEW = {  # facts §8
    "quality_summary": f"{VOL_REVIEW_DIR}/quality-summary.json",
    "audit_report": f"{VOL_REVIEW_DIR}/audit-report.json",
    "review_report": f"{VOL_REVIEW_DIR}/review-report.md",
    "foreshadow_status": f"{VOL_REVIEW_DIR}/foreshadow-status.json",
}
PLAN_FILES = ("outline.md", "storyline-schedule.json", "foreshadowing.json", "new-characters.json")


class StepUnsupported(NovelsiteError):
    """This step cannot be run or advanced here."""

    code = "step_unsupported"
    http_status = 400


class InvalidStep(NovelsiteError):
    """Not a step id of the form chapter:NNN:<stage>, volume:<phase>, quickstart:<phase> or review:<phase>."""

    code = "invalid_step"
    http_status = 400


def step_of(step: str) -> tuple[StepId, str]:
    """The parsed step and its canonical id (chapter padded to 3 digits); InvalidStep otherwise."""
    try:
        parsed = parse_step_id(step)
    except ValueError as exc:
        raise InvalidStep(str(exc), extra={"step": str(step)}) from exc
    return parsed, format_step_id(*parsed)


def refuse_unsupported(parsed: StepId, step_id: str) -> None:
    if parsed.kind == "chapter" and parsed.phase in UNSUPPORTED_STAGES:
        raise StepUnsupported(
            f"{step_id}: Novelsite does not implement platform title/hook policies, so the {parsed.phase} step "
            "does not exist here; fix the chapter by hand (chapter:NNN:review) and re-run judge",
            extra={"step": step_id})


class ChapterStaging(NamedTuple):
    """facts §7.1: one chapter's staged files."""

    chapter: str
    summary: str
    delta: str
    crossref: str
    evaluation: str
    refiner_changes: str
    title_snapshot: str


def chapter_staging(number: int) -> ChapterStaging:
    cid = chapter_id(number)
    return ChapterStaging(
        chapter=f"staging/chapters/{cid}.md",
        summary=f"staging/summaries/{cid}-summary.md",
        delta=f"staging/state/{cid}-delta.json",
        crossref=f"staging/state/{cid}-crossref.json",
        evaluation=f"staging/evaluations/{cid}-eval.json",
        refiner_changes=f"staging/logs/style-refiner-{cid}-changes.json",
        title_snapshot=f"staging/logs/title-fix-{cid}-before.md",
    )


def staged_memory_path(storyline_id: str) -> str:
    return f"staging/storylines/{storyline_id}/memory.md"


MEMORY_TEMPLATE = staged_memory_path("{storyline_id}")  # as the CLI's summarize packet spells it


def plan_dir(volume: int, *, staged: bool) -> str:
    """``staging/volumes/vol-VV`` (a plan waiting for approval) or ``volumes/vol-VV`` (committed)."""
    return ("staging/" if staged else "") + volume_dir(volume)


def plan_files(volume: int, chapters: range, *, staged: bool) -> list[str]:
    """facts §6: the four plan files, then one contract per chapter of the range."""
    base = plan_dir(volume, staged=staged)
    return [f"{base}/{name}" for name in PLAN_FILES] + [
        f"{base}/chapter-contracts/{chapter_id(number)}.json" for number in chapters]


class PlanRangeError(NovelsiteError):
    """The checkpoint leaves no chapter to plan in the current volume."""

    code = "plan_range_invalid"
    http_status = 409


def plan_range(volume: int, last_completed: int, *, seeded: bool) -> tuple[range, tuple[int, int] | None]:
    """facts §1, §6: chapters ``[last+1, V*30]``; for V=1 with the F0 seed already in ``volumes/vol-01``
    (``seeded``) the range starts after it and the seed range ``[1, 3]`` is returned too."""
    start, end = last_completed + 1, volume * CHAPTERS_PER_VOLUME
    if start > end:
        raise PlanRangeError(f"plan_start={start} > plan_end={end}: fix the checkpoint (current_volume={volume}, "
                             f"last_completed_chapter={last_completed})")
    if volume == 1 and start == SEED_RANGE[0] and end > SEED_RANGE[1] and seeded:
        return range(SEED_RANGE[1] + 1, end + 1), SEED_RANGE
    return range(start, end + 1), None


def validate_command(step_id: str) -> dict[str, str]:
    return {"kind": "command", "command": f"novel validate {step_id}"}


def advance_command(step_id: str) -> dict[str, str]:
    return {"kind": "command", "command": f"novel advance {step_id}"}


def instructions_command(step_id: str, note: str) -> dict[str, str]:
    return {"kind": "command", "command": f"novel instructions {step_id} --json", "note": note}


def next_command(note: str) -> dict[str, str]:
    return {"kind": "command", "command": "novel next", "note": note}


def chapter_step(chapter: int, stage: str) -> str:
    return format_step_id("chapter", chapter, stage)
