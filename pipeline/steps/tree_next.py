"""``novel next --tree DIR``: the next step of a project tree on disk, as novel-writer-cli's ``novel next``
computes it (facts §4.2 ``computeNextStep``), in Novelsite's words where Novelsite would go elsewhere.
No database.

``{step, reason, inflight: {chapter, pipeline_stage}, evidence?}``:

* INIT / QUICK_START: the first quick-start phase whose output is missing or invalid (facts §5; F0 is
  done once its seed is committed);
* VOL_PLANNING: ``volume:outline``, ``volume:validate`` (the staged plan is there) or ``volume:commit``
  by ``volume_pipeline_stage`` (facts §6);
* VOL_REVIEW: the first review step whose ``staging/vol-review/`` artifact is missing (facts §8);
* WRITING, CHAPTER_REWRITE, ERROR_RETRY (healed as facts §4.2 says): an idle pipeline drafts the next
  chapter, reviews a volume whose outline is written out, and (Novelsite, facts §15.4) plans first
  where the tool would review a volume with room left or draft a chapter with no contract; a chapter
  in flight resumes by its stage and staged files (facts §7.2, ``staged_resume.resume_phase``), and a
  staged evaluation goes through the gate (facts §7.3, §11, on the overall it states): commit, refine,
  draft, or ``chapter:NNN:review`` for a chapter paused for a person.

Where Novelsite's step is not the tool's, ``evidence`` has ``tool_step`` and ``differs_from_tool`` (the
reasons of ``orchestrator.TOOL_DIFFERENCES``). Title and hook gates and the pre-judge guardrails are not
run here: Novelsite has no title-fix or hook-fix step, and its server gate applies the platform's hook
policy and the story checks when the evaluation is imported (``novel import-step``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pipeline.questions.spec import format_step_id
from pipeline.chapter.quality_gate import GateSettings, decide
from pipeline.book.orchestrator import TOOL_DIFFERENCES
from pipeline.steps.staged_resume import resume_phase
from pipeline.steps.step_files import QUICKSTART, VOL_REVIEW, chapter_staging, plan_dir, staged_memory_path
from pipeline.steps.tree_reader import UNREADABLE, TreeReader
from pipeline.steps.tree_validate import outline_chapters, read_checkpoint, seed_state, validate_step
from projects.errors import NovelsiteError
from projects.ids import CHAPTERS_PER_VOLUME, chapter_id
from projects.vocabulary import (
    IDLE_PIPELINE_STAGES, QUICKSTART_PHASES, OrchestratorState, QuickstartPhase, VolumePipelineStage, checkpoint_state,
    inflight_mismatch,
)

DECISION_STEPS = {"pass": "commit", "force_passed": "commit", "polish": "refine", "revise": "draft",
                  "pause_for_user": "review", "pause_for_user_force_rewrite": "review"}
REVIEW_ORDER = (("collect", "quality_summary"), ("audit", "audit_report"), ("report", "review_report"),
                ("cleanup", "foreshadow_status"))


class TreeNotReadable(NovelsiteError):
    """The tree has no usable .checkpoint.json."""

    code = "tree_not_readable"
    http_status = 400


def tree_next_step(root: str | os.PathLike[str]) -> dict[str, Any]:
    """The next step of the tree at ``root``. Raises TreeNotReadable naming what is wrong."""
    errors: list[str] = []
    reader = TreeReader(Path(root), errors)
    checkpoint = read_checkpoint(reader) if Path(root).is_dir() else None
    if checkpoint is None:
        raise TreeNotReadable("; ".join(errors) or f"{root}: not a directory", extra={"errors": errors})
    state = checkpoint_state(checkpoint)
    inflight = {"chapter": checkpoint.get("inflight_chapter"), "pipeline_stage": checkpoint.get("pipeline_stage")}
    if state in (OrchestratorState.INIT, OrchestratorState.QUICK_START):
        step, reason = _quickstart(root, reader)
        return _result(step, ("init:" if state == OrchestratorState.INIT else "") + reason, inflight)
    if state == OrchestratorState.VOL_PLANNING:
        return _result(*_planning(root, reader, checkpoint), inflight)
    if state == OrchestratorState.VOL_REVIEW:
        return _result(*_review(reader), inflight)
    prefix = ""
    if state == OrchestratorState.ERROR_RETRY:  # facts §4.2: heal, then route as WRITING
        checkpoint = dict(checkpoint)
        mismatch = inflight_mismatch(checkpoint.get("pipeline_stage"), checkpoint.get("inflight_chapter"))
        if mismatch == "drop_inflight":
            checkpoint["inflight_chapter"] = None
        elif mismatch == "infer_inflight":
            checkpoint["inflight_chapter"] = checkpoint["last_completed_chapter"] + 1
        prefix = f"error_retry:healed_{mismatch}:" if mismatch else "error_retry:"
    step, reason, evidence = _chapters(reader, checkpoint)
    return _result(step, prefix + reason, inflight, evidence)


def _result(step: str, reason: str, inflight: dict[str, Any], evidence: dict[str, Any] | None = None) -> dict:
    out: dict[str, Any] = {"step": step, "reason": reason, "inflight": inflight}
    if evidence:
        out["evidence"] = evidence
    return out


def _quickstart(root, reader: TreeReader) -> tuple[str, str]:
    for phase in QUICKSTART_PHASES:
        if phase == QuickstartPhase.F0:
            if not seed_state(reader)[1]:
                return "quickstart:f0", "quickstart:f0"
            continue
        if not reader.exists(QUICKSTART[_QUICKSTART_OUTPUT[phase]]) \
                or not validate_step(root, f"quickstart:{phase}").ok:
            return f"quickstart:{phase}", f"quickstart:{phase}"
    return "quickstart:results", "quickstart:results"


_QUICKSTART_OUTPUT = {"world": "rules", "characters": "contracts_dir", "style": "style_profile",
                      "trial": "trial_chapter", "results": "evaluation"}


def _planning(root, reader: TreeReader, checkpoint: dict[str, Any]) -> tuple[str, str]:
    volume, stage = checkpoint["current_volume"], checkpoint.get("volume_pipeline_stage")
    staged = reader.exists(f"{plan_dir(volume, staged=True)}/outline.md")
    if stage == VolumePipelineStage.COMMIT:
        return "volume:commit", f"vol_planning:vol-{volume:02d}:commit"
    if stage == VolumePipelineStage.VALIDATE and staged and validate_step(root, "volume:validate").ok:
        return "volume:validate", f"vol_planning:vol-{volume:02d}:validate"
    return "volume:outline", f"vol_planning:vol-{volume:02d}:outline"


def _review(reader: TreeReader) -> tuple[str, str]:
    for phase, artifact in REVIEW_ORDER:
        if not reader.exists(VOL_REVIEW[artifact]):
            return f"review:{phase}", f"vol_review:{phase}"
    return "review:transition", "vol_review:transition"


def _volume_end(reader: TreeReader, volume: int) -> int | None:
    """facts §4.2: the last ``### 第 N 章`` of the volume's outline, else of its contract file names."""
    outline = reader.text(f"{plan_dir(volume, staged=False)}/outline.md", quiet=True)
    numbers = outline_chapters(outline) if outline else []
    if not numbers:
        names = reader.list_files(f"{plan_dir(volume, staged=False)}/chapter-contracts", ".json", quiet=True) or []
        numbers = [int(name[8:11]) for name in names if name.startswith("chapter-") and name[8:11].isdigit()]
    return max(numbers) if numbers else None


def _chapters(reader: TreeReader, checkpoint: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    last, volume = checkpoint["last_completed_chapter"], checkpoint["current_volume"]
    number, stage = checkpoint.get("inflight_chapter"), checkpoint.get("pipeline_stage")
    if stage not in IDLE_PIPELINE_STAGES and number is not None:
        return _in_flight(reader, checkpoint, number, stage)
    end = _volume_end(reader, volume)
    upcoming = last + 1
    if end is not None and last >= end:
        if end >= volume * CHAPTERS_PER_VOLUME:
            return "review:collect", f"volume_end:vol-{volume:02d}:chapter-{end:03d}", {}
        return "volume:outline", f"no_plan:chapter-{upcoming:03d}", {
            "tool_step": "review:collect", "differs_from_tool": TOOL_DIFFERENCES["plan_rest_of_volume"]}
    contract = f"{plan_dir(volume, staged=False)}/chapter-contracts/{chapter_id(upcoming)}.json"
    if not reader.exists(contract):
        return "volume:outline", f"no_plan:chapter-{upcoming:03d}", {
            "tool_step": format_step_id("chapter", upcoming, "draft"),
            "differs_from_tool": TOOL_DIFFERENCES["plan_next_volume"]}
    return format_step_id("chapter", upcoming, "draft"), f"writing:chapter-{upcoming:03d}", {}


def _in_flight(reader: TreeReader, checkpoint: dict, number: int, stage: str) -> tuple[str, str, dict[str, Any]]:
    files = chapter_staging(number)
    text = reader.text(files.chapter, quiet=True) if reader.exists(files.chapter) else None
    delta = reader.json_object(files.delta, quiet=True) if reader.exists(files.delta) else None
    memory = staged_memory_path(delta["storyline_id"]) if delta and isinstance(delta.get("storyline_id"), str) \
        else None
    summarized = all(reader.exists(path) for path in (files.summary, files.crossref)) and delta is not None and \
        memory is not None and reader.exists(memory)
    evaluation = reader.json(files.evaluation, quiet=True) if reader.exists(files.evaluation) else None
    evaluation = evaluation if isinstance(evaluation, dict) and evaluation is not UNREADABLE else None
    phase = resume_phase(stage, chapter=bool(text and text.strip()), summarized=summarized,
                         evaluated=evaluation is not None)
    if phase != "gate":
        return format_step_id("chapter", number, phase), f"{stage}:resume:{phase}", {}
    profile = reader.json_object("platform-profile.json", quiet=True) if reader.exists("platform-profile.json") \
        else None
    scoring = profile.get("scoring") if isinstance(profile, dict) and isinstance(profile.get("scoring"), dict) else {}
    max_revisions = scoring.get("max_revisions")
    settings = GateSettings(max_revisions=max_revisions) if isinstance(max_revisions, int) and not isinstance(
        max_revisions, bool) and max_revisions >= 0 else GateSettings()
    result = decide(evaluation, revision_count=checkpoint.get("revision_count") or 0, settings=settings,
                    outside=True)  # facts §11: on the overall the evaluation states
    step = format_step_id("chapter", number, DECISION_STEPS[result.decision])
    evidence: dict[str, Any] = {"gate": {"decision": result.decision, "overall": result.overall}}
    if result.decision == "polish":
        evidence["differs_from_tool"] = TOOL_DIFFERENCES["polish_then_commit"]
    return step, f"{stage}:gate:{result.decision}", evidence
