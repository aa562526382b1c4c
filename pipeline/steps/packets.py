"""InstructionPackets (facts §14.1) for every step, built from the database, so that an outside executor (a
coding agent using novel-writer-cli's skills) can run a step against the project's exported tree and hand
the result back with ``novel validate`` / ``novel advance`` (``pipeline.steps.tree_validate``,
``pipeline.steps.tree_advance``).

* agents: facts §5 (quick start), §6 (plot-architect, cli/manual-review, cli/novel), §7.1, §8;
* ``manifest.inline``: what the orchestrator computes (chapter, volume, storyline_id, plan range with the F0
  seed rule, review_targets, contracts_output_dir …; the writer's ``statistical_targets`` and
  ``genre_overrides``, the judge's ``continuity_report_summary`` and ``prejudge_guardrails``:
  ``pipeline.steps.packet_inline``); ``manifest.paths``: project-relative files of the
  exported tree the agent reads. Optional keys are omitted when the export has no such file (facts §12);
  a step's inputs staged by the step before it are always named, since that step's validate required them;
* ``expected_outputs``: the staging paths of facts §5, §6, §7.1, §8; a NOVEL_ASK gate prepends its
  ``answer_path`` (facts §14.5; refused on ``review:*``). The packet of a paused chapter's
  ``chapter:NNN:review`` carries the question it waits on as ``novel_ask`` with its ``answer_path``
  (facts §14.1; a question asked again has an answer path of its own);
* ``next_actions``: ``novel validate <step>``, ``novel advance <step>``, then what comes next.

``chapter:NNN:title-fix`` and ``hook-fix`` are refused (``StepUnsupported``): Novelsite implements no platform
title or hook policy, so those steps never come up; a chapter that needs it goes to ``chapter:NNN:review``.

Reads only: building a packet writes nothing (the CLI's ``--write-manifest`` is the caller's business, at
``packet_manifest_path(step)``).
"""
from __future__ import annotations

from typing import Any

from pipeline.questions.spec import StepId, validate_gate_wiring, validate_instruction_packet
from pipeline.chapter.pause import open_pause_question
from pipeline.steps.exported_tree import ExportView, character_paths, hard_rules
from pipeline.steps.packet_inline import continuity_inline, prejudge_guardrails
from pipeline.book.plan_validation import HEADING, outline_blocks
from pipeline.steps.step_files import (
    MEMORY_TEMPLATE, QUICKSTART, SEED_RANGE, VOL_REVIEW, advance_command, chapter_staging,
    chapter_step, instructions_command, next_command, plan_dir, plan_files, refuse_unsupported,
    step_of, validate_command,
)
from projects.errors import NovelsiteError
from projects.filetree import paths as tree
from projects.filetree.canonical import dump_text
from projects.ids import chapter_id
from projects.models import Project
from projects.platforms.genre_overrides import genre_overrides
from projects.style_targets import packet_statistical_targets
from projects.vocabulary import QUICKSTART_PHASES, PipelineStage, QuickstartPhase

QUICKSTART_AGENTS = {"world": "world-builder", "characters": "character-weaver", "style": "style-analyzer",
                     "f0": "plot-architect", "trial": "chapter-writer", "results": "quality-judge"}
CHAPTER_AGENTS = {"draft": ("subagent", "chapter-writer"), "summarize": ("subagent", "summarizer"),
                  "refine": ("subagent", "style-refiner"), "judge": ("subagent", "quality-judge"),
                  "review": ("cli", "manual-review"), "commit": ("cli", "novel")}
GATE_NOTE = "AnswerSpec JSON record for the NOVEL_ASK gate (written before main step execution)."
JUDGE_NOTE = "QualityJudge returns JSON; the executor should write it to this path."
PAUSE_NOTE = ("On Novelsite the chapter waits for this answer: after writing the AnswerSpec at answer_path, hand "
              "it back from the tree's root (accept commits the chapter; revise and rewrite send it back to draft).")


class PacketRefused(NovelsiteError):
    """No InstructionPacket can be built for this step."""

    code = "packet_refused"
    http_status = 400


def packet_manifest_path(step: str) -> str:
    """facts §1: ``staging/manifests/<step id with ":" replaced by "-">.packet.json`` (canonical step id)."""
    return f"staging/manifests/{step_of(step)[1].replace(':', '-')}.packet.json"


def default_answer_path(step: str) -> str:
    """seed 003's recommended answer path: ``staging/novel-ask/chapter-048-draft.answers.json``."""
    return f"staging/novel-ask/{step_of(step)[1].replace(':', '-')}.answers.json"


def instruction_packet(project: Project, step: str, *, embed_brief: bool = False,
                       novel_ask: dict[str, Any] | None = None, answer_path: str | None = None) -> dict[str, Any]:
    """The packet for ``step`` of ``project`` (its current checkpoint). Raises ``InvalidStep``,
    ``StepUnsupported`` (title-fix, hook-fix), ``PlanRangeError`` or ``PacketRefused`` (bad gate wiring, a
    gate on a review step, no review range). The result always passes ``validate_instruction_packet``."""
    parsed, step_id = step_of(step)
    refuse_unsupported(parsed, step_id)
    pause = None
    if novel_ask is None and answer_path is None and parsed.kind == "chapter" and parsed.phase == "review":
        pause = open_pause_question(project, parsed.chapter)
        if pause is not None:  # facts §14.1: the paused chapter's question and where its answer goes
            novel_ask, answer_path = pause.spec, pause.answer_path
    gated = novel_ask is not None or answer_path is not None
    if gated:
        errors = validate_gate_wiring(step_id, novel_ask, answer_path)
        if errors:
            raise PacketRefused(f"{step_id}: invalid NOVEL_ASK gate: " + "; ".join(errors), extra={"errors": errors})
    view = ExportView(project)
    agent, inline, paths, outputs, actions = BUILDERS[parsed.kind](view, parsed, step_id)
    packet: dict[str, Any] = {"version": 1, "step": step_id, "agent": {"kind": agent[0], "name": agent[1]}}
    if gated:
        packet.update(novel_ask=novel_ask, answer_path=answer_path)
        outputs.insert(0, {"path": answer_path, "required": True, "note": GATE_NOTE})
    if pause is not None:
        actions.insert(0, {"kind": "command", "command": f"novel import-step {project.slug} . {step_id}",
                           "note": PAUSE_NOTE})
    manifest: dict[str, Any] = {"mode": "paths+embed" if embed_brief else "paths", "inline": inline, "paths": paths}
    if embed_brief:  # the first 2000 characters of brief.md as exported; null when there is no brief
        manifest["embed"] = {"brief_preview": dump_text(project.brief).decode()[:2000] or None}
    packet.update(manifest=manifest, expected_outputs=outputs, next_actions=actions)
    errors = validate_instruction_packet(packet)
    if errors:  # a bug here, not the caller's: never hand out a packet the executor would reject
        raise PacketRefused(f"{step_id}: built an invalid packet: " + "; ".join(errors), extra={"errors": errors})
    return packet


def _actions(step_id: str, *more: dict[str, str]) -> list[dict[str, str]]:
    return [validate_command(step_id), advance_command(step_id), *more]


def _output(path: str, required: bool = True, note: str | None = None) -> dict[str, Any]:
    return {"path": path, "required": required, **({"note": note} if note else {})}


# --- Quick start (facts §5) -------------------------------------------------------------------------
def _quickstart(view: ExportView, step: StepId, step_id: str):
    p, phase = view.project, step.phase
    done = QUICKSTART_PHASES.index(phase)  # phases before this one have validated, staged outputs
    trial = phase in (QuickstartPhase.TRIAL, QuickstartPhase.RESULTS)
    inline: dict[str, Any] = {"quickstart_phase": phase, "trial_mode": trial, "volume": p.current_volume}
    if trial:
        inline["chapter"] = max(1, p.last_completed_chapter + 1)
    paths = view.pick("project_brief", "platform_profile", "platform_writing_guide")
    if p.research_notes.exists():
        paths["research"] = "research/*.md"
    if "style_profile" in view.root_paths:
        paths["style_profile_template"] = tree.STYLE_PROFILE
        paths["style_profile"] = tree.STYLE_PROFILE
    staged = (("world", "quickstart_rules", "rules", "world_rules"),
              ("characters", "quickstart_contracts_dir", "contracts_dir", "character_contracts_dir"),
              ("style", "quickstart_style_profile", "style_profile", "style_profile"),
              ("trial", "quickstart_trial_chapter", "trial_chapter", "chapter_draft"))
    for earlier, key, artifact, alias in staged:
        if QUICKSTART_PHASES.index(earlier) < done:
            paths[key] = paths[alias] = QUICKSTART[artifact]
    following = QUICKSTART_PHASES[done + 1] if phase != QuickstartPhase.RESULTS else None
    note = "Compute the next deterministic step (skips already-generated artifacts)."
    more = [next_command(note)]
    if following:
        more.append(instructions_command(f"quickstart:{following}",
                                         f"After advance, proceed to quickstart:{following}."))
    if phase == "characters":
        inline["contracts_output_dir"] = QUICKSTART["contracts_dir"]
        outputs = [_output(QUICKSTART["contracts_dir"],
                           note="Write at least 1 character contract JSON under this dir.")]
    elif phase == "f0":  # facts §5: mini-planning of chapters 1–3, validated as a volume plan
        inline["volume_plan"] = {"volume": 1, "chapter_range": list(SEED_RANGE)}
        inline["expected_outputs_base_dir"] = plan_dir(1, staged=True)
        outputs = [_output(path) for path in plan_files(1, range(SEED_RANGE[0], SEED_RANGE[1] + 1), staged=True)]
    elif phase == "results":
        outputs = [_output(QUICKSTART["evaluation"], note=JUDGE_NOTE)]
        more = [next_command("After advance, the pipeline transitions to VOL_PLANNING.")]
    else:
        outputs = [_output(QUICKSTART[{"world": "rules", "style": "style_profile", "trial": "trial_chapter"}[phase]])]
    return ("subagent", QUICKSTART_AGENTS[phase]), inline, paths, outputs, _actions(step_id, *more)


# --- Volume planning (facts §6) ---------------------------------------------------------------------
def _volume(view: ExportView, step: StepId, step_id: str):
    p = view.project
    number = p.current_volume
    chapters, seed = view.plan_range()
    inline: dict[str, Any] = {"volume": number,
                              "volume_plan": {"volume": number, "chapter_range": [chapters.start, chapters.stop - 1]}}
    paths = view.pick("project_brief", "style_profile", "platform_profile", "genre_weight_profiles", "storylines",
                      "world_rules", "global_foreshadowing")
    previous = view.volume(number - 1) if number > 1 else None
    if previous is not None and previous.review:
        paths["prev_volume_review"] = f"{tree.volume_dir(number - 1)}/review.md"
    elif recent := view.summaries_before(p.last_completed_chapter + 1, 3):  # facts §12: they stand in for it
        paths["prev_chapter_summaries"] = recent
    if p.world_docs.exists():
        paths["world_docs"] = "world/*.md"
    if view.characters:
        paths.update(characters_md="characters/active/*.md", characters_contracts="characters/active/*.json")
    final = plan_dir(number, staged=False)
    if seed:  # facts §6: plan only after the seed, never rewrite it; commit merges into it
        inline["volume_plan_seed_range"] = list(seed)
        paths.update(existing_volume_outline=f"{final}/outline.md",
                     existing_storyline_schedule=f"{final}/storyline-schedule.json",
                     existing_foreshadowing=f"{final}/foreshadowing.json",
                     existing_chapter_contracts_dir=f"{final}/chapter-contracts")
    staged = plan_dir(number, staged=True)
    if step.phase == "outline":
        inline["expected_outputs_base_dir"] = staged
        more = [instructions_command("volume:validate", "After advance, proceed to validate/approve.")]
        return ("subagent", "plot-architect"), inline, paths, _plan_outputs(number, chapters, True), _actions(
            step_id, *more)
    if step.phase == "validate":
        inline["review_targets"] = {"outline": f"{staged}/outline.md",
                                    "storyline_schedule": f"{staged}/storyline-schedule.json",
                                    "foreshadowing": f"{staged}/foreshadowing.json",
                                    "new_characters": f"{staged}/new-characters.json",
                                    "chapter_contracts_dir": f"{staged}/chapter-contracts"}
        more = [instructions_command("volume:commit", "After approval, proceed to commit.")]
        return ("cli", "manual-review"), inline, paths, _plan_outputs(number, chapters, True), _actions(step_id, *more)
    inline.update(commit_from=staged, commit_to=final)
    actions = [{"kind": "command", "command": f"novel commit --volume {number}",
                "note": "On Novelsite the server commits: import the tree's staging (novel import-step)."},
               next_command("After commit, resume the writing pipeline.")]
    return ("cli", "novel"), inline, paths, _plan_outputs(number, chapters, False), actions


def _plan_outputs(volume: int, chapters: range, staged: bool) -> list[dict[str, Any]]:
    return [_output(path) for path in plan_files(volume, chapters, staged=staged)]


# --- Chapter pipeline (facts §7.1, §12) -------------------------------------------------------------
def _chapter(view: ExportView, step: StepId, step_id: str):
    p, number, stage = view.project, step.chapter, step.phase
    files = chapter_staging(number)
    contract = view.contract(number)
    volume_number = contract.volume.number if contract else p.current_volume
    data = contract.data if contract and isinstance(contract.data, dict) else {}
    inline: dict[str, Any] = {"chapter": number, "volume": volume_number}
    if isinstance(data.get("storyline_id"), str):
        inline["storyline_id"] = data["storyline_id"]
    paths = view.pick("project_brief", "style_profile", "platform_profile", "platform_writing_guide", "ai_blacklist",
                      "web_novel_cliche_lint", "genre_weight_profiles", "current_state", "world_rules")
    volume = view.volume(volume_number)
    if volume is not None:
        paths["volume_outline"] = f"{tree.volume_dir(volume_number)}/outline.md"
    if contract:
        paths["chapter_contract"] = tree.contract_path(volume_number, number)
    block = outline_blocks(volume.outline).get(number) if volume is not None else None
    if stage != "draft":
        paths["chapter_draft"] = files.chapter  # staged by draft, whose validate required it
    more: list[dict[str, str]] = []
    if stage == "draft":
        _writer_context(view, inline, paths, data, number, block)
        inline["statistical_targets"] = packet_statistical_targets(p)  # facts §12, as Novelsite's writer aims
        if (overrides := genre_overrides(p)) is not None:
            inline["genre_overrides"] = overrides
        revising = p.pipeline_stage in (PipelineStage.JUDGED, PipelineStage.REVISING)
        if p.inflight_chapter == number and revising:  # revision mode
            paths.update(chapter_draft=files.chapter, chapter_eval=files.evaluation)
        outputs = [_output(files.chapter)]
        more.append(instructions_command(chapter_step(number, "summarize"), "After advance, proceed to summarize."))
    elif stage == "summarize":
        inline["entity_id_map"] = {slug: name for slug, name, _status in view.characters}
        outputs = [_output(files.summary), _output(files.delta), _output(files.crossref),
                   _output(MEMORY_TEMPLATE, note="storyline_id comes from delta.json (the contract's is "
                                                 "inline.storyline_id)")]
    elif stage == "refine":
        paths.update(view.pick("style_drift"))
        outputs = [_output(files.chapter), _output(files.refiner_changes, required=False)]
    elif stage == "judge":
        _judge_context(view, inline, paths, data, number, block, volume_number if volume else None)
        inline.update(continuity_inline(p))
        if (guardrails := prejudge_guardrails(p, number)) is not None:
            inline["prejudge_guardrails"] = guardrails
        paths["cross_references"] = files.crossref
        outputs = [_output(files.evaluation, note=JUDGE_NOTE)]
        more.append(next_command("After advance, compute the next step (commit, refine, draft or review)."))
    elif stage == "review":
        paths["chapter_eval"] = files.evaluation
        return CHAPTER_AGENTS[stage], inline, paths, [], [instructions_command(
            chapter_step(number, "judge"), "After fixing the chapter by hand, re-run QualityJudge.")]
    else:  # commit (facts §7.4): the staged chapter, summary, eval and crossref reach their final places
        outputs = [_output(tree.chapter_path(number)), _output(tree.summary_path(number)),
                   _output(tree.evaluation_path(number)), _output(f"state/{chapter_id(number)}-crossref.json")]
        return CHAPTER_AGENTS[stage], inline, paths, outputs, [
            {"kind": "command", "command": f"novel commit --chapter {number}",
             "note": "On Novelsite the server commits: import the tree's staging (novel import-step)."},
            next_command("After commit, compute the next step.")]
    return CHAPTER_AGENTS[stage], inline, paths, outputs, _actions(step_id, *more)


def _writer_context(view: ExportView, inline: dict, paths: dict, data: dict, number: int, block: str | None) -> None:
    inline["hard_rules_list"] = hard_rules(view)
    planned = [{"id": rid, "constraint_type": kind, "canon_status": "planned", "rule": rule}
               for rid, rule, kind, status in view.rules if status == "planned"]
    if planned:
        inline["planned_rules_info"] = planned
    if block:
        inline["chapter_outline_block"] = block.strip()
    if isinstance(data.get("transition_hint"), dict):
        inline["transition_hint"] = data["transition_hint"]
    paths.update(character_paths(view, data, planned=True))
    paths.update(view.pick("style_drift"))
    storyline = inline.get("storyline_id")
    if storyline in view.storylines:
        paths["storyline_memory"] = tree.memory_path(storyline)
    recent = view.summaries_before(number, 3)
    if recent:
        paths["recent_summaries"] = recent


def _judge_context(view: ExportView, inline: dict, paths: dict, data: dict, number: int, block: str | None,
                   volume: int | None) -> None:
    inline["hard_rules_list"] = hard_rules(view)
    if block:
        inline["chapter_outline_block"] = block.strip()
    inline["excitement_type"] = data.get("excitement_type")
    paths.update(character_paths(view, data, planned=False))
    previous = view.summaries_before(number, 1)
    if previous and previous[0] == tree.summary_path(number - 1):
        paths["prev_summary"] = previous[0]
    if view.project.storyline_spec:
        paths["storyline_spec"] = tree.STORYLINE_SPEC
    if volume is not None:
        paths["storyline_schedule"] = f"{tree.volume_dir(volume)}/storyline-schedule.json"


# --- Volume review (facts §8) -----------------------------------------------------------------------
def _review_range(view: ExportView) -> tuple[int, int]:
    """facts §8: the volume's outline chapters, else its contracts, else the last 10 chapters."""
    p = view.project
    volume = view.volume(p.current_volume)
    numbers = [int(n) for n in HEADING.findall(volume.outline)] if volume is not None else []
    if not numbers and volume is not None:
        numbers = list(volume.contracts.values_list("chapter", flat=True))
    if numbers:
        return min(numbers), max(numbers)
    if p.last_completed_chapter >= 1:
        return max(1, p.last_completed_chapter - 9), p.last_completed_chapter
    raise PacketRefused(f"cannot resolve the volume review chapter range (no outline or contracts for volume "
                        f"{p.current_volume}, last_completed_chapter={p.last_completed_chapter})")


def _review(view: ExportView, step: StepId, step_id: str):
    p, phase = view.project, step.phase
    start, end = _review_range(view)
    number = p.current_volume
    inline: dict[str, Any] = {"volume": number, "chapter_range": [start, end]}
    paths = view.pick("project_brief", "style_profile", "platform_profile", "storylines")
    if "global_foreshadowing" in view.root_paths:  # the review's name for the ledger (the planner's differs)
        paths["foreshadowing_global"] = view.root_paths["global_foreshadowing"]
    if view.volume(number) is not None:
        paths["volume_outline"] = f"{tree.volume_dir(number)}/outline.md"
    tool = {"collect": "collect", "report": "report", "cleanup": "cleanup"}.get(phase)
    before = [{"kind": "command", "command": f"novel volume-review {tool}"}] if tool else []
    if phase == "collect":
        paths["quality_summary"] = VOL_REVIEW["quality_summary"]
        outputs = [_output(VOL_REVIEW["quality_summary"])]
    elif phase == "audit":
        inline.update(scope="volume_end", stride=5, window=10)
        written = p.chapters.filter(number__range=(start, end)).values_list("number", flat=True)
        paths["chapters"] = [tree.chapter_path(n) for n in sorted(written)]
        contracts = p.chapter_contracts.filter(chapter__range=(start, end)).select_related("volume")
        if contracts:
            paths["chapter_contracts"] = [tree.contract_path(c.volume.number, c.chapter) for c in contracts]
        if p.storyline_spec:
            paths["storyline_spec"] = tree.STORYLINE_SPEC
        if "volume_outline" in paths:
            paths["storyline_schedule"] = f"{tree.volume_dir(number)}/storyline-schedule.json"
        if "current_state" in view.root_paths:
            paths["state_current"] = view.root_paths["current_state"]
        if p.state_changes.exists():
            paths["state_changelog"] = tree.STATE_CHANGELOG
        if view.characters:
            paths["characters_active"] = [tree.character_path("active", c[0], "json") for c in view.characters]
        paths["quality_summary"] = VOL_REVIEW["quality_summary"]
        outputs = [_output(VOL_REVIEW["audit_report"], note="ConsistencyAuditor returns JSON; the executor should "
                                                            "write it to this path.")]
        return ("subagent", "consistency-auditor"), inline, paths, outputs, _actions(step_id)
    elif phase == "report":
        paths.update(quality_summary=VOL_REVIEW["quality_summary"], audit_report=VOL_REVIEW["audit_report"])
        outputs = [_output(VOL_REVIEW["review_report"])]
    elif phase == "cleanup":
        outputs = [_output(VOL_REVIEW["foreshadow_status"])]
    else:  # transition: advance only
        outputs = [_output(tree.CHECKPOINT, note="Advance updates .checkpoint.json: current_volume+1, and clears "
                                                 "staging/vol-review/.")]
        return ("cli", "novel"), inline, paths, outputs, _actions(step_id)
    return ("cli", "volume-review"), inline, paths, outputs, before + _actions(step_id)


BUILDERS = {"quickstart": _quickstart, "volume": _volume, "chapter": _chapter, "review": _review}
