"""The book's shared vocabulary, each word defined once: the checkpoint's states, stages and phases
(facts §3), the step ids of novel-writer-cli (facts §1) and the rules that read them (facts §3, §4.2).

The spellings are the file formats' (``.checkpoint.json``, step ids, packets): do not rename them.
The model fields' choices, the JSON schemas (``projects.schemas``), the tree's validate / advance /
next (``pipeline.tree_*``), the packets and the step-id parser all take their lists from here.
Volume size and ``volume_for_chapter`` are in ``projects.ids`` (facts §1), beside the other id rules.

Pure Python, no Django: ``projects.schemas`` imports this module, and the schemas must stay
importable without Django (``pipeline.jacquard`` reaches them through ``projects.state_ops``). So the
lists are ``StrEnum``s, not ``TextChoices``; ``model_choices`` gives a model field its ``choices``.
Members are ``str``: they compare, hash, format and serialize as their value.
"""
from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


def model_choices(words: type[StrEnum]) -> list[tuple[str, str]]:
    """A model field's ``choices`` for ``words``, labelled as Django labels a ``TextChoices`` member
    (``QUICK_START`` -> ``Quick Start``, the labels the migrations record). The pages show the words of
    ``projects.labels`` instead."""
    return [(word.value, word.name.replace("_", " ").title()) for word in words]


# --- Checkpoint fields (facts §3; seed 000 §9.2) ---------------------------------------------------
class OrchestratorState(StrEnum):  # facts §3; no .checkpoint.json means INIT
    INIT = "INIT"
    QUICK_START = "QUICK_START"
    VOL_PLANNING = "VOL_PLANNING"
    WRITING = "WRITING"
    CHAPTER_REWRITE = "CHAPTER_REWRITE"
    VOL_REVIEW = "VOL_REVIEW"
    ERROR_RETRY = "ERROR_RETRY"


class PipelineStage(StrEnum):  # seed 000 §9.2; null means idle
    DRAFTING = "drafting"
    DRAFTED = "drafted"
    REFINED = "refined"
    JUDGED = "judged"
    REVISING = "revising"
    COMMITTED = "committed"


class VolumePipelineStage(StrEnum):  # facts §3; also the phases of the volume:* steps (§1)
    OUTLINE = "outline"
    VALIDATE = "validate"
    COMMIT = "commit"


class QuickstartPhase(StrEnum):  # facts §5, in the order the router walks them
    WORLD = "world"
    CHARACTERS = "characters"
    STYLE = "style"
    F0 = "f0"
    TRIAL = "trial"
    RESULTS = "results"


# The values, in order, as plain strings (for schemas, messages and membership tests).
ORCHESTRATOR_STATES = tuple(state.value for state in OrchestratorState)
PIPELINE_STAGES = tuple(stage.value for stage in PipelineStage)
VOLUME_PIPELINE_STAGES = tuple(stage.value for stage in VolumePipelineStage)
QUICKSTART_PHASES = tuple(phase.value for phase in QuickstartPhase)

# facts §10.12: style-profile.json ``source_type`` (a voice sample is one of the first two: VoiceSource)
STYLE_SOURCE_TYPES = ("original", "reference", "template", "write_then_extract")

# seed 000 §9.2: no chapter in flight. ``pipeline_stage`` records the last completed step (facts §3).
IDLE_PIPELINE_STAGES: tuple[str | None, ...] = (None, PipelineStage.COMMITTED)

# --- Step ids (facts §1) ----------------------------------------------------------------------------
# ``chapter:NNN:<stage>``: every stage the grammar accepts (Novelsite refuses title-fix and hook-fix).
CHAPTER_STEP_STAGES = ("draft", "summarize", "refine", "judge", "title-fix", "hook-fix", "review", "commit")
# facts §7.1: the chapter steps an agent runs (chapter-writer, summarizer, style-refiner, quality-judge)
CHAPTER_AGENT_STEPS = ("draft", "summarize", "refine", "judge")
# A chapter run's steps on the server, in order: the agents', commit, then Novelsite's memory upkeep.
CHAPTER_RUN_STEPS = (*CHAPTER_AGENT_STEPS, "commit", "maintain")
REVIEW_PHASES = ("collect", "audit", "report", "cleanup", "transition")  # facts §8, in order
STEP_PHASES: dict[str, tuple[str, ...]] = {  # ``<kind>:<phase>``, each in order
    "volume": VOLUME_PIPELINE_STAGES,
    "quickstart": QUICKSTART_PHASES,
    "review": REVIEW_PHASES,
}
# facts §3: what ``pipeline_stage`` records after each chapter step advances (the CLI also maps
# title-fix/hook-fix to ``refined``; Novelsite has neither step).
STAGE_AFTER: dict[str, str] = {
    "draft": PipelineStage.DRAFTING,
    "summarize": PipelineStage.DRAFTED,
    "refine": PipelineStage.REFINED,
    "judge": PipelineStage.JUDGED,
}


# --- Rules on the checkpoint (facts §3, §4.2) -------------------------------------------------------
def inflight_mismatch(stage: str | None, inflight: int | None) -> str | None:
    """How ``pipeline_stage`` and ``inflight_chapter`` disagree, if they do: ``"drop_inflight"`` when
    the stage is idle (null or committed) but a chapter is in flight, ``"infer_inflight"`` when a stage
    is in flight but no chapter is; None when they agree. The legacy rule reads either as ERROR_RETRY
    (facts §3); ERROR_RETRY healing mends each its own way (facts §4.2: ``healed_<kind>``)."""
    idle = stage in IDLE_PIPELINE_STAGES
    if idle and inflight is not None:
        return "drop_inflight"
    if not idle and inflight is None:
        return "infer_inflight"
    return None


def legacy_state(checkpoint: Mapping[str, Any]) -> str:
    """facts §3: the state of a checkpoint written without ``orchestrator_state``."""
    stage, inflight = checkpoint.get("pipeline_stage"), checkpoint.get("inflight_chapter")
    if inflight_mismatch(stage, inflight):
        return OrchestratorState.ERROR_RETRY
    return OrchestratorState.CHAPTER_REWRITE if stage == PipelineStage.REVISING else OrchestratorState.WRITING


def checkpoint_state(checkpoint: Mapping[str, Any]) -> str:
    """facts §3: the recorded state, or the one the legacy fields imply when there is none (or it is
    not a state)."""
    state = checkpoint.get("orchestrator_state")
    return state if state in ORCHESTRATOR_STATES else legacy_state(checkpoint)
