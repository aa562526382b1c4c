"""VOL_PLANNING (facts §6): the PlotArchitect plans a volume (outline with a ``### 第 N 章`` block per
chapter, storyline schedule, foreshadowing plan, new characters, one contract per chapter), the
plan is validated exactly as the original tool validates it and staged, and a person approves it,
asks for a regeneration with notes, or edits it and approves (the ``volume.VV.plan_approval``
NOVEL_ASK gate). The commit writes the volume and the project goes back to WRITING; the plan's new
characters are then woven in by the CharacterWeaver.

Steps: ``volume:outline`` → ``volume:validate`` (waits at the gate) → ``volume:commit`` →
``volume:characters`` (only when the plan introduces characters).
"""
from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.db.models import Max

from pipeline.runtime.blackboard import Blackboard
from pipeline.book.staged import stage_content, staged
from pipeline.runtime.claims import finish_locked
from pipeline.runtime.runs import active_run, book_run_create, run_resume_at
from pipeline.runtime.stage import Stage
from pipeline.errors import PipelineNotReady
from pipeline.questions.answers import answer_path_for, gate_handler
from pipeline.llm.types import LLMBadOutput
from pipeline.runtime.locks import run_lock_pair
from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.book.plan_validation import VolumePlan, validate_volume_plan
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import PromptBlock, data_block, json_output, json_text, project_llm_call
from projects.errors import InvalidData
from projects.ids import CHAPTERS_PER_VOLUME
from projects.json_validation import json_issues
from projects.lock_objects import project_lock
from projects.models import ArchivedSummary, ChapterContract, OrchestratorState, PipelineStage, Project
from projects.schemas import SLUG_PATTERN
from projects.services.volume_plan import StagedVolumePlan, characters_add, volume_plan_commit
from projects.vocabulary import VolumePipelineStage

STEPS = ["volume:outline", "volume:validate", "volume:commit", "volume:characters"]
PLAN_TAGS = ["outline", "schedule", "foreshadowing", "new_characters", "contracts"]
ROLE = "你是网络小说的总策划（PlotArchitect）：规划一卷的大纲、故事线节奏、伏笔和每章契约。"
DECISIONS = [{"label": "approve", "description": "批准这一卷的规划并提交"},
             {"label": "regenerate", "description": "按备注重新生成规划"}]


def plan_range(project: Project) -> tuple[int, int, list[int] | None]:
    """facts §6: ``[last+1, V*30]``; chapters of the volume already planned (the F0 seed of volume 1)
    move the start, and are reported as the seed range."""
    volume = project.current_volume
    end = volume * CHAPTERS_PER_VOLUME
    planned = (ChapterContract.objects.filter(project=project, chapter__lte=end, volume__number=volume)
               .aggregate(m=Max("chapter"))["m"] or 0)
    start = max(project.last_completed_chapter, planned) + 1
    if start > end:
        raise PipelineNotReady(f"volume {volume} is planned up to chapter {end}; nothing to plan "
                               f"(plan_start {start} > plan_end {end})")
    first = (volume - 1) * CHAPTERS_PER_VOLUME + 1
    seed = [first, start - 1] if planned >= first and planned == start - 1 else None
    return start, end, seed


@transaction.atomic(durable=True)
def volume_plan_start(*, project_id: int, user=None, notes: str = "") -> PipelineRun:
    """Plan the current volume. From VOL_PLANNING, or from WRITING when the next chapter has no
    contract (facts §15.4: a volume without a plan needs planning)."""
    project = project_lock(project_id)
    state = project.orchestrator_state
    unplanned = not project.chapter_contracts.filter(chapter=project.last_completed_chapter + 1).exists()
    if not (state == OrchestratorState.VOL_PLANNING or (state == OrchestratorState.WRITING and unplanned)):
        raise PipelineNotReady(f"{project.slug} is in {state}; a volume is planned in VOL_PLANNING, or in WRITING "
                               "once the planned chapters are written")
    start, end, seed = plan_range(project)
    meta = {"volume": project.current_volume, "chapter_start": start, "chapter_end": end, "seed_range": seed}
    run = book_run_create(project, kind=RunKind.PLAN, steps=STEPS, meta=meta, user=user,
                          volume=project.current_volume)
    if notes.strip():  # the person's notes ride on the content zone, like a regeneration's
        board = Blackboard(run.blackboard)
        board.as_("worker").write_content("book", "notes", notes.strip())
        PipelineRun.objects.filter(pk=run.pk).update(blackboard=board.to_dict())
    checkpoint_update(project.pk, orchestrator_state=OrchestratorState.VOL_PLANNING,
                      volume_pipeline_stage=VolumePipelineStage.OUTLINE,
                      reason=f"planning volume {project.current_volume} (chapters {start}–{end})", run=run,
                      actor=user, from_state=state)
    return run


def plan_from_call(call, volume: int, start: int, end: int, stage: str) -> VolumePlan:
    """The five plan artifacts from a PlotArchitect answer (JSON parts must parse; the rules are
    checked by ``validate_volume_plan``)."""
    contracts = json_output(call, "contracts", stage=stage)
    if not isinstance(contracts, list) or not all(isinstance(c, dict) for c in contracts):
        raise LLMBadOutput(f"{stage}: <contracts> must be an array of contract objects")
    by_chapter = {c.get("chapter"): c for c in contracts if isinstance(c.get("chapter"), int)}
    return VolumePlan(volume=volume, chapter_start=start, chapter_end=end, outline=call.texts["outline"].strip(),
                      schedule=json_output(call, "schedule", stage=stage),
                      foreshadowing=json_output(call, "foreshadowing", stage=stage),
                      new_characters=json_output(call, "new_characters", stage=stage), contracts=by_chapter)


def plan_data(plan: VolumePlan) -> dict[str, Any]:
    return {"volume": plan.volume, "chapter_start": plan.chapter_start, "chapter_end": plan.chapter_end,
            "outline": plan.outline, "schedule": plan.schedule, "foreshadowing": plan.foreshadowing,
            "new_characters": plan.new_characters, "contracts": {str(k): v for k, v in plan.contracts.items()}}


def plan_files(plan: VolumePlan) -> dict[str, Any]:
    """The staged files of a plan (facts §6): ``volumes/vol-VV/…`` under staging/."""
    base = f"volumes/vol-{plan.volume:02d}"
    files: dict[str, Any] = {f"{base}/outline.md": plan.outline, f"{base}/storyline-schedule.json": plan.schedule,
                             f"{base}/foreshadowing.json": plan.foreshadowing,
                             f"{base}/new-characters.json": plan.new_characters}
    for chapter, contract in plan.contracts.items():
        files[f"{base}/chapter-contracts/chapter-{int(chapter):03d}.json"] = contract
    return files


def staged_plan(data: dict[str, Any], title: str = "") -> StagedVolumePlan:
    return StagedVolumePlan(volume=data["volume"], chapter_start=data["chapter_start"], chapter_end=data["chapter_end"],
                            outline=data["outline"], schedule=data["schedule"], foreshadowing=data["foreshadowing"],
                            new_characters=data["new_characters"], title=title,
                            contracts={int(k): v for k, v in data["contracts"].items()})


def characters_from_call(call, stage: str) -> list[dict[str, Any]]:
    """CharacterWeaver output: ≥1 object with a slug id, a display name and valid L2 contracts."""
    cast = json_output(call, "characters", stage=stage)
    if not isinstance(cast, list) or not cast or not all(isinstance(c, dict) for c in cast):
        raise LLMBadOutput(f"{stage}: <characters> must be a non-empty array of objects")
    for i, person in enumerate(cast):
        if not isinstance(person.get("id"), str) or not re.match(SLUG_PATTERN, person["id"]):
            raise LLMBadOutput(f"{stage}: characters[{i}].id must be a slug (lin-feng)")
        if not isinstance(person.get("display_name"), str) or not person["display_name"].strip():
            raise LLMBadOutput(f"{stage}: characters[{i}].display_name must be a non-empty string")
        if issues := json_issues("CHARACTER_CONTRACTS", person.get("contracts", [])):
            raise LLMBadOutput(f"{stage}: characters[{i}].contracts: " + "; ".join(map(str, issues)))
    return cast


def plan_of(data: dict[str, Any]) -> VolumePlan:
    return VolumePlan(volume=data["volume"], chapter_start=data["chapter_start"], chapter_end=data["chapter_end"],
                      outline=data["outline"], schedule=data["schedule"], foreshadowing=data["foreshadowing"],
                      new_characters=data["new_characters"],
                      contracts={int(k): v for k, v in (data.get("contracts") or {}).items()})


def previous_contract(project: Project, start: int) -> dict | None:
    return project.chapter_contracts.filter(chapter=start - 1).values_list("data", flat=True).first()


def _outline(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    meta = board.as_("slicer").read_meta
    volume, start, end = meta("volume"), meta("chapter_start"), meta("chapter_end")
    notes = staged(board, "notes") or ""
    previous = previous_contract(project, start)
    lines = list(project.storylines.filter(status="active").values_list("slug", flat=True)) or ["main-arc"]
    cast = [{"slug": s, "display_name": n} for s, n in
            project.characters.filter(status="active").values_list("slug", "display_name")[:15]]
    slice_ = {"volume": volume, "chapter_start": start, "chapter_end": end, "storylines": lines[:4],
              "characters": cast, "notes": notes, "brief": project.brief,
              "previous_state_keys": list(((previous or {}).get("postconditions") or {}).get("state_changes") or {})}
    memory = list(ArchivedSummary.objects.filter(project=project, superseded=False).order_by("chapter_start")
                  .values_list("text", flat=True))
    rules = list(project.world_rules.filter(constraint_type="hard").values_list("rule_id", "rule"))
    blocks = [PromptBlock("role", "system", ROLE, required=True, cacheable=True, priority=100),
              PromptBlock("world-rules", "system", "硬性世界规则：\n" + "\n".join(f"{i}: {r}" for i, r in rules)
                          if rules else "", cacheable=True, priority=95),
              data_block("brief", "brief", project.brief, priority=90),
              data_block("memory", "summary", "\n".join(memory), priority=60, shrinkable=True),
              data_block("previous-contract", "contract", json_text(previous) if previous else "", priority=80),
              PromptBlock("notes", "user", f"作者对上一版规划的意见：{notes}" if notes else "", priority=100)]
    call = project_llm_call(claim, project, label=f"vol{volume}", stage="plan", slice_=slice_, blocks=blocks,
                            template="plan.j2", template_context=slice_, tags=["thought", *PLAN_TAGS],
                            required_tags=PLAN_TAGS, on_text=on_text)
    plan = plan_from_call(call, volume, start, end, "volume:outline")
    report = validate_volume_plan(plan, previous_contract=previous)
    if not report.ok:  # the model is asked again (a retry) rather than a person shown a broken plan
        raise LLMBadOutput("volume:outline: " + "; ".join(report.errors))
    stage_content(board, "plan", plan_data(plan), plan_files(plan))
    board.as_("worker").write_content("book", "plan_warnings", report.warnings)
    board.as_("orchestrator").update_step_status("volume:outline", "completed")
    return StageOutcome(board.to_dict(), "volume:validate",
                        checkpoint={"volume_pipeline_stage": VolumePipelineStage.VALIDATE},
                        calls=[call])


def approval_question(volume: int, start: int, end: int, errors: list[str], warnings: list[str]) -> dict[str, Any]:
    problems = "；".join(errors) if errors else ("提示：" + "；".join(warnings) if warnings else "校验通过")
    return {"version": 1, "topic": f"volume.{volume:02d}.plan_approval", "questions": [
        {"id": "decision", "header": f"第 {volume} 卷规划（第 {start}–{end} 章）",
         "question": f"请审阅规划后决定。{problems}", "kind": "single_choice", "required": True,
         "options": DECISIONS, "default": "approve" if not errors else "regenerate"},
        {"id": "notes", "header": "意见", "question": "重新生成时给策划的意见（可选）", "kind": "free_text",
         "required": False}]}


def _validate(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    """Re-validate the staged plan (a person may have edited it) and stop at the approval gate."""
    plan = plan_of(staged(board, "plan"))
    report = validate_volume_plan(plan, previous_contract=previous_contract(project, plan.chapter_start))
    board.as_("orchestrator").write_control("plan_validation", {"errors": report.errors, "warnings": report.warnings})
    step = "volume:validate"
    spec = approval_question(plan.volume, plan.chapter_start, plan.chapter_end, report.errors, report.warnings)
    return StageOutcome(board.to_dict(), step, status=RunStatus.WAITING,
                        checkpoint={"volume_pipeline_stage": VolumePipelineStage.VALIDATE},
                        question={"step": step, "topic": spec["topic"], "spec": spec,
                                  "answer_path": answer_path_for(step)})


@gate_handler("volume")
def plan_decision(*, project: Project, run: PipelineRun, question, answers: dict, user) -> None:
    """approve → commit (refused while the staged plan breaks a rule); regenerate → plan again with
    the notes."""
    board = Blackboard(run.blackboard)
    if answers["decision"] == "approve":
        plan = plan_of(staged(board, "plan"))
        report = validate_volume_plan(plan, previous_contract=previous_contract(project, plan.chapter_start))
        if not report.ok:
            raise InvalidData("the staged plan cannot be approved: " + "; ".join(report.errors))
        checkpoint_update(project.pk, volume_pipeline_stage=VolumePipelineStage.COMMIT)
        run_resume_at(run, "volume:commit")
        return
    notes = str(answers.get("notes") or "").strip()
    board.as_("worker").write_content("book", "notes", notes or "换一种结构重新规划")
    checkpoint_update(project.pk, volume_pipeline_stage=VolumePipelineStage.OUTLINE)
    run_resume_at(run, "volume:outline", board)


@transaction.atomic(durable=True)
def volume_plan_edit(*, run_id: int, plan: dict[str, Any], user) -> list[str]:
    """A person edits the staged plan while it waits for approval: the edited plan (same volume and
    range) replaces the staged one if it passes the facts §6 rules (the previous version stays in
    the blackboard's history, for the diff view). Returns the warnings; InvalidData lists the errors."""
    locked = run_lock_pair(run_id)
    if locked is None:
        raise PipelineNotReady("no such run")
    project, run = locked
    if run.kind != RunKind.PLAN or run.status != RunStatus.WAITING:
        raise PipelineNotReady("only a plan waiting for approval can be edited")
    board = Blackboard(run.blackboard)
    current = staged(board, "plan")
    try:
        edited = plan_of({**current, **{k: plan[k] for k in ("outline", "schedule", "foreshadowing", "new_characters",
                                                              "contracts") if k in plan}})
    except (AttributeError, TypeError, ValueError) as exc:
        raise InvalidData(f"plan: {exc}") from exc
    report = validate_volume_plan(edited, previous_contract=previous_contract(project, edited.chapter_start))
    if not report.ok:
        raise InvalidData("the edited plan breaks the planning rules: " + "; ".join(report.errors),
                          extra={"errors": report.errors})
    stage_content(board, "plan", plan_data(edited), plan_files(edited))
    board.as_("worker").write_content("book", "edited_by", user.get_username())
    run.blackboard = board.to_dict()
    run.save(update_fields=["blackboard", "updated_at"])
    return report.warnings


def _commit(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    plan = staged(board, "plan")
    board.as_("orchestrator").update_step_status("volume:commit", "completed")
    next_step = "volume:characters" if plan["new_characters"] else None
    return StageOutcome(board.to_dict(), next_step)


@transaction.atomic(durable=True)
def _commit_finish(*, claim: Claim, outcome: StageOutcome) -> None:
    """facts §6 ``volume:commit``: the volume's files in place; WRITING, ready for its chapters."""
    board = Blackboard(outcome.blackboard)

    def write(project: Project, run: PipelineRun) -> None:
        plan = staged(board, "plan")
        volume_plan_commit(project=project, plan=staged_plan(plan), user=run.created_by)
        checkpoint_update(project.pk, orchestrator_state=OrchestratorState.WRITING, volume_pipeline_stage=None,
                          last_committed_volume=plan["volume"], pipeline_stage=PipelineStage.COMMITTED,
                          inflight_chapter=None, revision_count=0, hook_fix_count=0, title_fix_count=0,
                          reason=f"volume {plan['volume']} plan committed", run=run,
                          from_state=project.orchestrator_state)

    finish_locked(claim, outcome, write)


def _characters(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    wanted = sorted(staged(board, "plan")["new_characters"], key=lambda c: c.get("first_chapter") or 0)
    slice_ = {"brief": project.brief, "count": len(wanted), "wanted": wanted,
              "rules": [{"id": i, "rule": r} for i, r in project.world_rules.values_list("rule_id", "rule")[:10]]}
    call = project_llm_call(claim, project, label=f"vol{staged(board, 'plan')['volume']}", stage="weave",
                            slice_=slice_, blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True)],
                            template="characters.j2", template_context=slice_, tags=["thought", "characters"],
                            required_tags=["characters"], on_text=on_text)
    stage_content(board, "woven", characters_from_call(call, "volume:characters"))
    board.as_("orchestrator").update_step_status("volume:characters", "completed")
    return StageOutcome(board.to_dict(), None, calls=[call])


@transaction.atomic(durable=True)
def _characters_finish(*, claim: Claim, outcome: StageOutcome) -> None:
    board = Blackboard(outcome.blackboard)
    finish_locked(claim, outcome, lambda project, run: characters_add(
        project=project, characters=staged(board, "woven"), user=run.created_by))


def plan_waiting(project: Project) -> PipelineRun | None:
    run = active_run(project)
    return run if run is not None and run.kind == RunKind.PLAN and run.status == RunStatus.WAITING else None


PLAN_STEPS: dict[str, Stage] = {
    "volume:outline": Stage(_outline), "volume:validate": Stage(_validate),
    "volume:commit": Stage(_commit, _commit_finish), "volume:characters": Stage(_characters, _characters_finish),
}
