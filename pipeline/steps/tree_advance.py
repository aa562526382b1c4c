"""``advance`` of one step against a project tree on disk, as novel-writer-cli v0.5.0's ``novel advance``:
validate first and refuse on any error (facts §9: never advance after a failed validate), take the tree's
``.novel.lock/``, update ``.checkpoint.json`` and make the step's plain file moves. No database.

Checkpoint effects (facts §3, §5, §6, §7.1, §8); unknown checkpoint keys are kept, and the file is written
as the exporter writes JSON (sorted keys, 2-space indent, LF, trailing newline), atomically:

* chapter ``draft|summarize|refine|judge``: ``pipeline_stage`` drafting|drafted|refined|judged,
  ``inflight_chapter``, WRITING (CHAPTER_REWRITE if already so or the stage was ``revising``). ``draft``
  initialises ``revision_count``, zeroes the hook/title counters, deletes the title snapshot, and when it
  re-drafts the in-flight chapter from a later stage deletes the staged summary, delta, crossref, eval and
  refiner changes (from ``judged``: ``revision_count+1`` and CHAPTER_REWRITE). ``refine`` deletes the
  staged eval (after ``judged``: ``revision_count+1`` and CHAPTER_REWRITE).
* ``quickstart:<phase>`` (INIT or QUICK_START, idle pipeline): ``quickstart_phase``; ``f0`` renames
  ``staging/volumes/vol-01`` to ``volumes/vol-01`` (refused if it exists); ``results`` copies rules, style
  profile, trial chapter, evaluation and character contracts to their final places, sets VOL_PLANNING with
  phase and volume stage null, then deletes ``staging/quickstart``.
* ``volume:outline`` → ``volume_pipeline_stage=validate``; ``volume:validate`` → ``commit`` (VOL_PLANNING, or
  WRITING with no outline for the current volume, facts §15.4).
* ``review:<collect|audit|report|cleanup>`` → VOL_REVIEW; ``review:transition`` → ``current_volume+1``,
  stage ``committed``, counters 0, ``staging/vol-review/`` deleted, and VOL_PLANNING (facts §15.4 follows the
  PRD here; the CLI writes WRITING, which it reads as "needs planning" too).

Refused (``StepUnsupported``): chapter ``commit`` and ``volume:commit`` (the server commits: import the tree's
staging with ``novel import-step``), chapter ``review`` (manual), ``title-fix``/``hook-fix`` (not implemented).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.questions.spec import StepId
from pipeline.steps.step_files import (
    QUICKSTART, QUICKSTART_DIR, QUICKSTART_FINAL, VOL_REVIEW_DIR, StepUnsupported, chapter_staging, plan_dir,
    refuse_unsupported, step_of,
)
from pipeline.steps.tree_reader import CHECKPOINT, TreeReader
from pipeline.steps.tree_validate import validate_step
from projects.checkpoint import checkpoint_time_text
from projects.errors import NovelsiteError
from projects.filetree.canonical import dump_json
from projects.vocabulary import (
    IDLE_PIPELINE_STAGES, STAGE_AFTER, OrchestratorState, PipelineStage, QuickstartPhase, VolumePipelineStage,
    checkpoint_state,
)

LOCK_DIR = ".novel.lock"
LOCK_STALE_SECONDS = 30 * 60  # facts §9


class StepValidationFailed(NovelsiteError):
    """The step's outputs do not validate; fix them and run the step again before advancing."""

    code = "step_validation_failed"
    http_status = 409


class StepOutOfOrder(NovelsiteError):
    """The checkpoint is not in a state where this step can advance."""

    code = "step_out_of_order"
    http_status = 409


class TreeLocked(NovelsiteError):
    """Another process holds the tree's .novel.lock/."""

    code = "tree_locked"
    http_status = 409


class TreeWriteFailed(NovelsiteError):
    """A file of the tree could not be moved or written."""

    code = "tree_write_failed"
    http_status = 500


def advance_step(root: str | os.PathLike[str], step: str) -> dict[str, Any]:
    """Validate ``step`` on the tree at ``root`` and apply it; returns the new checkpoint. Raises a
    ``NovelsiteError`` subclass (nothing written) when the step cannot advance."""
    parsed, step_id = step_of(step)
    refuse_unsupported(parsed, step_id)
    if parsed.phase == "commit":
        raise StepUnsupported(f"{step_id}: committing needs the full commit logic; Novelsite commits on the server "
                              "(import the tree's staging with `novel import-step`)", extra={"step": step_id})
    if parsed.kind == "chapter" and parsed.phase == "review":
        raise StepUnsupported(f"{step_id}: review is a manual step and does not advance; fix the chapter, then "
                              "re-run judge", extra={"step": step_id})
    root = Path(root)
    if ".." in root.parts or not root.is_dir():
        raise StepValidationFailed(f"{root}: not a project directory (it must exist and not contain '..')",
                                   extra={"step": step_id})
    with _tree_lock(root, parsed.chapter):
        check = validate_step(root, step_id)
        if not check.ok:
            raise StepValidationFailed(f"{step_id} does not validate: " + "; ".join(check.errors),
                                       extra={"step": step_id, "errors": check.errors, "warnings": check.warnings})
        checkpoint = json.loads((root / CHECKPOINT).read_text(encoding="utf-8"))
        updated = dict(checkpoint)
        after = ADVANCERS[parsed.kind](root, parsed, checkpoint, updated)
        updated["last_checkpoint_time"] = checkpoint_time_text(datetime.now(UTC))
        _write_checkpoint(root, updated)
        if after is not None:
            after()
    return updated


# --- Chapter steps (facts §7.1) ---------------------------------------------------------------------
def _chapter(root: Path, step: StepId, checkpoint: dict, updated: dict) -> None:
    files, number = chapter_staging(step.chapter), step.chapter
    previous_stage, previous_inflight = checkpoint.get("pipeline_stage"), checkpoint.get("inflight_chapter")
    updated["pipeline_stage"] = STAGE_AFTER[step.phase]
    updated["inflight_chapter"] = number
    rewriting = (checkpoint_state(checkpoint) == OrchestratorState.CHAPTER_REWRITE
                 or previous_stage == PipelineStage.REVISING)
    updated["orchestrator_state"] = OrchestratorState.CHAPTER_REWRITE if rewriting else OrchestratorState.WRITING
    same_chapter = previous_inflight == number
    stale: list[str] = []
    if step.phase == "draft":
        updated.setdefault("revision_count", 0)
        updated["hook_fix_count"] = updated["title_fix_count"] = 0
        stale.append(files.title_snapshot)
        # a re-draft: stale downstream outputs go
        if same_chapter and previous_stage not in (None, PipelineStage.DRAFTING):
            stale += [files.summary, files.delta, files.crossref, files.evaluation, files.refiner_changes]
            if previous_stage == PipelineStage.JUDGED:  # the gate sent it back: one revision spent
                _count_revision(updated)
    elif step.phase == "refine":
        stale.append(files.evaluation)  # the text changed: the old eval no longer applies
        if same_chapter and previous_stage == PipelineStage.JUDGED:  # a polish loop counts as a revision
            _count_revision(updated)
    _remove_all(root, stale)


def _count_revision(updated: dict) -> None:
    count = updated.get("revision_count")
    updated["revision_count"] = (count if isinstance(count, int) and not isinstance(count, bool) else 0) + 1
    updated["orchestrator_state"] = OrchestratorState.CHAPTER_REWRITE


# --- Quick start (facts §5) -------------------------------------------------------------------------
def _quickstart(root: Path, step: StepId, checkpoint: dict, updated: dict) -> Callable[[], None] | None:
    state = checkpoint_state(checkpoint)
    if state not in (OrchestratorState.INIT, OrchestratorState.QUICK_START):
        raise StepOutOfOrder(f"quickstart:{step.phase} advances only from INIT or QUICK_START, not {state}")
    if checkpoint.get("inflight_chapter") is not None or checkpoint.get("pipeline_stage") not in IDLE_PIPELINE_STAGES:
        raise StepOutOfOrder(f"quickstart:{step.phase}: the chapter pipeline must be idle (pipeline_stage null or "
                             "committed, inflight_chapter null)")
    updated.update(inflight_chapter=None, pipeline_stage=None, quickstart_phase=step.phase,
                   orchestrator_state=OrchestratorState.QUICK_START)
    if step.phase == QuickstartPhase.F0:
        source, target = plan_dir(1, staged=True), plan_dir(1, staged=False)
        if os.path.lexists(root / target):
            raise StepOutOfOrder(f"{target}: already exists; refusing to overwrite it with {source}")
        _safe(root, source)
        _safe(root, target)
        _move(root, source, target)
    elif step.phase == QuickstartPhase.RESULTS:
        _copy_quickstart_results(root)
        updated.update(orchestrator_state=OrchestratorState.VOL_PLANNING, quickstart_phase=None,
                       volume_pipeline_stage=None)
        return lambda: _remove(root, QUICKSTART_DIR)
    return None


def _copy_quickstart_results(root: Path) -> None:
    """Check every source and destination first, then copy (facts §5)."""
    errors: list[str] = []
    reader = TreeReader(root, errors)
    copies = [(QUICKSTART[key], QUICKSTART_FINAL[key]) for key in ("rules", "style_profile", "trial_chapter",
                                                                   "evaluation")]
    names = reader.list_files(QUICKSTART["contracts_dir"], ".json") or []
    if not names and not errors:
        errors.append(f"{QUICKSTART['contracts_dir']}: expected at least 1 *.json contract file")
    copies += [(f"{QUICKSTART['contracts_dir']}/{name}", f"{QUICKSTART_FINAL['contracts_dir']}/{name}")
               for name in names]
    for source, target in copies:
        reader.read_bytes(source)
        reader.locate(target)
    if errors:
        raise StepValidationFailed("quickstart:results cannot copy its artifacts: " + "; ".join(errors),
                                   extra={"errors": errors})
    for source, target in copies:
        try:
            (root / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / source, root / target)
        except OSError as exc:
            raise TreeWriteFailed(f"{target}: cannot copy from {source} ({exc.strerror or exc})") from exc


# --- Volume planning (facts §6) ---------------------------------------------------------------------
def _volume(root: Path, step: StepId, checkpoint: dict, updated: dict) -> None:
    state = checkpoint_state(checkpoint)
    outline = f"{plan_dir(checkpoint['current_volume'], staged=False)}/outline.md"
    needs_planning = state == OrchestratorState.WRITING and not os.path.lexists(root / outline)  # facts §15.4
    if state != OrchestratorState.VOL_PLANNING and not needs_planning:
        raise StepOutOfOrder(f"volume:{step.phase} advances only in VOL_PLANNING (or WRITING with no {outline}), "
                             f"not {state}")
    updated.update(orchestrator_state=OrchestratorState.VOL_PLANNING, pipeline_stage=PipelineStage.COMMITTED,
                   inflight_chapter=None,
                   volume_pipeline_stage=VolumePipelineStage.VALIDATE if step.phase == VolumePipelineStage.OUTLINE
                   else VolumePipelineStage.COMMIT)


# --- Volume review (facts §8) -----------------------------------------------------------------------
def _review(root: Path, step: StepId, checkpoint: dict, updated: dict) -> Callable[[], None] | None:
    state = checkpoint_state(checkpoint)
    if state not in (OrchestratorState.WRITING, OrchestratorState.VOL_REVIEW):
        raise StepOutOfOrder(f"review:{step.phase} advances only from WRITING (volume end) or VOL_REVIEW, not {state}")
    updated["inflight_chapter"] = None
    if step.phase != "transition":
        updated["orchestrator_state"] = OrchestratorState.VOL_REVIEW
        return None
    updated.update(current_volume=checkpoint["current_volume"] + 1, orchestrator_state=OrchestratorState.VOL_PLANNING,
                   volume_pipeline_stage=None, pipeline_stage=PipelineStage.COMMITTED, revision_count=0,
                   hook_fix_count=0, title_fix_count=0)
    _safe(root, VOL_REVIEW_DIR)
    return lambda: _remove(root, VOL_REVIEW_DIR)


ADVANCERS: dict[str, Callable[..., Callable[[], None] | None]] = {
    "chapter": _chapter, "quickstart": _quickstart, "volume": _volume, "review": _review}


# --- File operations --------------------------------------------------------------------------------
def _safe(root: Path, rel: str) -> Path:
    errors: list[str] = []
    path = TreeReader(root, errors).locate(rel)
    if path is None:
        raise StepValidationFailed("; ".join(errors), extra={"errors": errors})
    return path


def _remove_all(root: Path, rels: list[str]) -> None:
    """Check every path first, so that a refused one leaves the others in place."""
    for rel in rels:
        _safe(root, rel)
    for rel in rels:
        _remove(root, rel)


def _remove(root: Path, rel: str) -> None:
    """Delete a staged file or directory: the link itself for a symlink, never what lies outside the tree."""
    path = root / rel
    if not os.path.lexists(path):
        return
    parent = Path(rel).parent.as_posix()
    if parent != ".":
        _safe(root, parent)  # a symlinked directory on the way must not lead out of the tree
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        raise TreeWriteFailed(f"{rel}: cannot be deleted ({exc.strerror or exc})") from exc


def _move(root: Path, source: str, target: str) -> None:
    try:
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        os.rename(root / source, root / target)
    except OSError as exc:
        raise TreeWriteFailed(f"cannot move {source} to {target} ({exc.strerror or exc})") from exc


def _write_checkpoint(root: Path, checkpoint: dict[str, Any]) -> None:
    temporary = root / f"{CHECKPOINT}.tmp-{os.getpid()}"
    try:
        temporary.write_bytes(dump_json(checkpoint))
        os.replace(temporary, root / CHECKPOINT)  # a reader sees the old checkpoint or the new, never half
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise TreeWriteFailed(f"{CHECKPOINT}: cannot be written ({exc.strerror or exc})") from exc


@contextmanager
def _tree_lock(root: Path, chapter: int | None) -> Iterator[None]:
    """facts §9: ``.novel.lock/`` by atomic mkdir with ``info.json``; a lock older than 30 minutes is stale
    and removed (3 attempts); released in ``finally``."""
    lock = root / LOCK_DIR
    for _attempt in range(3):
        try:
            lock.mkdir()
            break
        except FileExistsError:
            if not _lock_is_stale(lock):
                raise TreeLocked(f"{LOCK_DIR}: another process holds the lock; wait, or clear a stale lock "
                                 "(older than 30 minutes)") from None
            shutil.rmtree(lock, ignore_errors=True)
        except OSError as exc:
            raise TreeWriteFailed(f"{LOCK_DIR}: cannot be created ({exc.strerror or exc})") from exc
    else:
        raise TreeLocked(f"{LOCK_DIR}: could not take the lock after 3 attempts")
    try:
        info = {"pid": os.getpid(), "started": datetime.now(UTC).isoformat(timespec="seconds"), "chapter": chapter}
        (lock / "info.json").write_bytes(dump_json(info))
        yield
    finally:
        shutil.rmtree(lock, ignore_errors=True)


def _lock_is_stale(lock: Path) -> bool:
    started = None
    try:
        info = json.loads((lock / "info.json").read_text(encoding="utf-8"))
        started = datetime.fromisoformat(info["started"].replace("Z", "+00:00")).timestamp()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        try:
            started = lock.stat().st_mtime
        except OSError:
            return True  # vanished meanwhile: try again
    return time.time() - started > LOCK_STALE_SECONDS
