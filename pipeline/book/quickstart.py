"""QUICK_START (facts §5): from the brief (and research notes) to a world, a cast, a style profile,
volume 1's F0 seed (chapters 1–3), a trial chapter and its evaluation, one step each, every
output validated as the original tool validates it before anything is committed. ``results``
commits it all in one transaction and the project moves on to VOL_PLANNING.

Before the first step the project's platform and genre are asked for (the ``init.platform_binding``
NOVEL_ASK gate, ``pipeline.questions.answers``); an earlier valid answer is reused.
"""
from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from pipeline.runtime.blackboard import Blackboard
from pipeline.book.staged import stage_content, staged
from pipeline.runtime.claims import finish_locked
from pipeline.runtime.runs import book_run_create, run_resume_at
from pipeline.runtime.stage import Stage
from pipeline.errors import PipelineNotReady
from pipeline.questions.answers import answer_path_for, gate_handler, question_open, question_reuse
from pipeline.llm.types import LLMBadOutput
from pipeline.models import RunKind, RunStatus
from pipeline.book.plan_validation import validate_volume_plan
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import PromptBlock, data_block, json_output, json_text, project_llm_call
from pipeline.chapter.stages.draft import MIN_CHARS, platform_draft_slice, split_chapter
from pipeline.chapter.stages.judge import platform_slice
from pipeline.book.plan import characters_from_call, plan_data, plan_files, plan_from_call, staged_plan
from pipeline.book.voice import sample_slice, style_call, style_profile_of
from projects.lock_objects import project_lock
from projects.models import OrchestratorState, Project, VoiceSample
from projects.platforms.genres import genre_from_brief
from projects.platforms.profiles import platform_from_brief
from projects.services.platforms import project_platform_bind
from projects.services.quickstart import StagedQuickstart, quickstart_commit
from projects.vocabulary import QUICKSTART_PHASES, STYLE_SOURCE_TYPES

STEPS = [f"quickstart:{phase}" for phase in QUICKSTART_PHASES]
F0_RANGE = (1, 3)  # facts §5: the mini-plan of chapters 1-3
ROLE = "你是网络小说的策划编辑，帮作者从一段简介起步：世界、人物、文风、开篇三章。"
PLATFORMS = [("qidian", "起点中文网"), ("fanqie", "番茄小说"), ("jinjiang", "晋江文学城"),
             ("general", "不针对特定平台")]
GENRES = [("xuanhuan", "玄幻"), ("xianxia", "仙侠"), ("dushi", "都市"), ("lishi", "历史"), ("kehuan", "科幻"),
          ("yanqing", "言情"), ("xuanyi", "悬疑")]
MAX_WORLD_DOC_CHARS = 300  # facts §5, WorldBuilder light mode
MAX_HARD_RULES = 3


def binding_question(project: Project) -> dict[str, Any]:
    """The platform and genre gate (facts §14.5's example topic ``init.platform_binding``)."""
    def choice(qid, header, text, options, current):
        labels = [label for label, _ in options]
        question = {"id": qid, "header": header, "question": text, "kind": "single_choice", "required": True,
                    "options": [{"label": label, "description": description} for label, description in options],
                    "allow_other": True}
        return {**question, "default": current} if current in labels else question
    # the defaults: what the project has, else what its brief says (issue #17 §1)
    platform = project.target_platform or platform_from_brief(project.brief)
    genre = project.genre or genre_from_brief(project.brief)
    return {"version": 1, "topic": "init.platform_binding", "questions": [
        choice("platform", "发布平台", "这部小说发在哪个平台？", PLATFORMS, platform),
        choice("genre", "类型", "这部小说是什么类型？", GENRES, genre)]}


@transaction.atomic(durable=True)
def quickstart_start(*, project_id: int, user=None) -> Any:
    """Start the quick start of a project in INIT (or resume one whose run was cancelled). Stops at
    the platform/genre question unless an earlier valid answer exists."""
    project = project_lock(project_id)
    if project.orchestrator_state not in (OrchestratorState.INIT, OrchestratorState.QUICK_START):
        raise PipelineNotReady(f"{project.slug} is in {project.orchestrator_state}; the quick start is for a new "
                               "project (INIT)")
    if not project.brief.strip():
        raise PipelineNotReady("the quick start needs a brief: write it first (≤1000 characters)")
    spec = binding_question(project)
    answers, blocked = question_reuse(project=project, step=STEPS[0], spec=spec)
    run = book_run_create(project, kind=RunKind.QUICKSTART, steps=STEPS, meta={"brief": project.brief}, user=user,
                          status=RunStatus.QUEUED if answers else RunStatus.WAITING)
    checkpoint_update(project.pk, orchestrator_state=OrchestratorState.QUICK_START, quickstart_phase=None,
                      reason="quick start", run=run, actor=user, from_state=project.orchestrator_state)
    if answers:
        _bind(project, answers)
    else:
        if blocked:  # shown with the new question, so the person knows why they are asked again
            run.error = blocked
            run.save(update_fields=["error"])
        question_open(run=run, step=STEPS[0], spec=spec, answer_path=answer_path_for(STEPS[0]))
    return run


def _bind(project: Project, answers: dict[str, Any]) -> None:
    """The answers set the platform (and its profile), the genre and the drive type (issue #17 §1)."""
    project_platform_bind(project_id=project.pk, platform=answers["platform"], genre=answers["genre"][:40])


@gate_handler("quickstart")
def binding_answered(*, project: Project, run, question, answers: dict, user) -> None:
    _bind(project, answers)
    run.error = ""
    run_resume_at(run, STEPS[0])


# --- the steps -------------------------------------------------------------------------------------


def _call(claim: Claim, project: Project, phase: str, slice_: dict, blocks: list, template: str, tags: list[str],
          on_text=None):
    return project_llm_call(claim, project, label="quickstart", stage=f"quickstart:{phase}", slice_=slice_,
                            blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True), *blocks],
                            template=template, template_context=slice_, tags=["thought", *tags], required_tags=tags,
                            on_text=on_text)


def _outcome(board: Blackboard, phase: str, calls: list) -> StageOutcome:
    board.as_("orchestrator").update_step_status(f"quickstart:{phase}", "completed")
    index = QUICKSTART_PHASES.index(phase)
    next_step = STEPS[index + 1] if index + 1 < len(STEPS) else None
    return StageOutcome(board.to_dict(), next_step, checkpoint={"quickstart_phase": phase}, calls=calls)


def world_errors(rules: Any, docs: Any, lines: Any) -> list[str]:
    """facts §5 ``world``: rules[] with non-empty id/category/rule, constraint_type hard|soft and
    an exceptions array; the light mode's limits (≤3 hard rules, docs ≤300 chars, one main_arc line)."""
    errors = []
    items = rules.get("rules") if isinstance(rules, dict) else None
    if not isinstance(items, list) or not items:
        return ["rules.json: must be an object with a non-empty rules[] array"]
    for i, rule in enumerate(items):
        at = f"rules.json: rules[{i}]"
        if not isinstance(rule, dict):
            errors.append(f"{at}: must be an object")
            continue
        errors += [f"{at}.{key}: must be a non-empty string" for key in ("id", "category", "rule")
                   if not isinstance(rule.get(key), str) or not rule[key].strip()]
        if rule.get("constraint_type") not in ("hard", "soft"):
            errors.append(f"{at}.constraint_type: must be hard or soft")
        if not isinstance(rule.get("exceptions"), list):
            errors.append(f"{at}.exceptions: must be an array")
    if sum(isinstance(r, dict) and r.get("constraint_type") == "hard" for r in items) > MAX_HARD_RULES:
        errors.append(f"rules.json: at most {MAX_HARD_RULES} hard rules in the quick start")
    if not isinstance(docs, dict) or any(not isinstance(v, str) or len(v) > MAX_WORLD_DOC_CHARS for v in docs.values()):
        errors.append(f"world docs: an object of texts of at most {MAX_WORLD_DOC_CHARS} characters each")
    main = [line for line in (lines or {}).get("storylines", []) if str(line.get("type", "")).removeprefix("type:")
            == "main_arc"] if isinstance(lines, dict) else []
    if len(main) != 1:
        errors.append("storylines.json: exactly one main_arc storyline")
    return errors


def _world(claim, project, board, on_text=None) -> StageOutcome:
    research = list(project.research_notes.values_list("name", flat=True)[:10])
    slice_ = {"brief": project.brief, "genre": project.genre, "platform": project.target_platform, "research": research}
    call = _call(claim, project, "world", slice_, [data_block("brief", "brief", project.brief, required=True)],
                 "world.j2", ["rules", "world_docs", "storylines"], on_text)
    rules, docs = json_output(call, "rules", stage="quickstart:world"), json_output(call, "world_docs")
    lines = json_output(call, "storylines")
    if errors := world_errors(rules, docs, lines):
        raise LLMBadOutput("quickstart:world: " + "; ".join(errors))
    stage_content(board, "world", {"rules": rules["rules"], "docs": docs, "storylines": lines["storylines"]},
                  {"quickstart/rules.json": rules})
    return _outcome(board, "world", [call])


def _characters(claim, project, board, on_text=None) -> StageOutcome:
    world = staged(board, "world")
    slice_ = {"brief": project.brief, "count": 3, "wanted": [],
              "rules": [{"id": r["id"], "rule": r["rule"]} for r in world["rules"]]}
    call = _call(claim, project, "characters", slice_, [data_block("brief", "brief", project.brief, required=True)],
                 "characters.j2", ["characters"], on_text)
    cast = characters_from_call(call, "quickstart:characters")
    stage_content(board, "characters", cast,
                  {f"quickstart/contracts/{c['id']}.json": {k: v for k, v in c.items() if k != "id"} for c in cast})
    return _outcome(board, "characters", [call])


def _style(claim, project, board, on_text=None) -> StageOutcome:
    # a voice sample given before the quick start (the voice page) is what the style is read from (#17 §3)
    sample = VoiceSample.objects.filter(project=project).first()
    slice_ = {"brief": project.brief, "genre": project.genre, **sample_slice(sample)}
    call = style_call(claim, project, stage="quickstart:style", label="quickstart", slice_=slice_, on_text=on_text)
    profile = style_profile_of(call, slice_=slice_, stage="quickstart:style")
    if profile.get("source_type") not in STYLE_SOURCE_TYPES:
        raise LLMBadOutput("quickstart:style: source_type must be original, reference, template or write_then_extract")
    stage_content(board, "style", profile, {"quickstart/style-profile.json": profile})
    return _outcome(board, "style", [call])


def _f0(claim, project, board, on_text=None) -> StageOutcome:
    lines = [line["id"] for line in staged(board, "world")["storylines"]]
    cast = [{"slug": c["id"], "display_name": c["display_name"]} for c in staged(board, "characters")]
    start, end = F0_RANGE
    slice_ = {"volume": 1, "chapter_start": start, "chapter_end": end, "storylines": lines, "characters": cast,
              "previous_state_keys": [], "brief": project.brief}
    call = project_llm_call(claim, project, label="quickstart", stage="quickstart:f0", slice_=slice_,
                            blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True),
                                    data_block("brief", "brief", project.brief, required=True)],
                            template="plan.j2", template_context=slice_, on_text=on_text,
                            tags=["thought", "outline", "schedule", "foreshadowing", "new_characters", "contracts"],
                            required_tags=["outline", "schedule", "foreshadowing", "new_characters", "contracts"])
    plan = plan_from_call(call, 1, start, end, "quickstart:f0")
    report = validate_volume_plan(plan)
    if not report.ok:
        raise LLMBadOutput("quickstart:f0: " + "; ".join(report.errors))
    stage_content(board, "f0", plan_data(plan), plan_files(plan))
    return _outcome(board, "f0", [call])


def _trial(claim, project, board, on_text=None) -> StageOutcome:
    f0 = staged(board, "f0")
    contract = f0["contracts"]["1"]
    cast = [{"slug": c["id"], "display_name": c["display_name"]} for c in staged(board, "characters")]
    slice_ = {"chapter": 1, "title": "试写", "storyline_id": contract["storyline_id"], "characters": cast,
              "objectives": [o.get("description", "") for o in contract.get("objectives", [])], "place": "",
              **platform_draft_slice(project), "blacklist": [], "required_fixes": [], "brief": project.brief}
    call = project_llm_call(claim, project, label="quickstart", stage="quickstart:trial", slice_=slice_,
                            blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True),
                                    PromptBlock("outline", "user", f0["outline"], required=True),
                                    PromptBlock("contract", "user", "契约：" + json_text(contract), required=True)],
                            template="draft.j2", template_context=slice_, tags=["thought", "chapter", "hints"],
                            required_tags=["chapter"], on_text=on_text)
    title, body = split_chapter(call.texts["chapter"], "试写")
    if len(body) < MIN_CHARS:
        raise LLMBadOutput(f"quickstart:trial: the trial chapter has {len(body)} characters")
    text = f"# {title}\n\n{body}\n"  # facts §5: warns when it does not start with '#': ours always does
    stage_content(board, "trial", {"title": title, "text": text, "objectives": contract.get("objectives", [])},
                  {"quickstart/trial-chapter.md": text})
    return _outcome(board, "trial", [call])


def _results(claim, project, board, on_text=None) -> StageOutcome:
    trial = staged(board, "trial")
    # the trial is not chapter 1 (facts §5): the hook policy applies, the golden gates do not
    slice_ = {"chapter": 1, "objectives": trial["objectives"], "checks": {},
              **platform_slice(project, 1, trial["text"]), "golden_gates": []}
    call = project_llm_call(claim, project, label="quickstart", stage="quickstart:results", slice_=slice_,
                            blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True),
                                    data_block("chapter", "chapter_content", trial["text"], required=True)],
                            template="judge.j2", template_context=slice_, tags=["thought", "evaluation"],
                            required_tags=["evaluation"], on_text=on_text)
    evaluation = json_output(call, "evaluation", stage="quickstart:results")
    if not isinstance(evaluation, dict):
        raise LLMBadOutput("quickstart:results: the evaluation must be a JSON object")
    warnings = [w for w, bad in (("overall is not a number", not isinstance(evaluation.get("overall"), (int, float))),
                                 ("recommendation is not a string",
                                  not isinstance(evaluation.get("recommendation"), str)))
                if bad]
    stage_content(board, "results", {"evaluation": evaluation, "warnings": warnings},
                  {"quickstart/evaluation.json": evaluation})
    board.as_("orchestrator").update_step_status("quickstart:results", "completed")
    return StageOutcome(board.to_dict(), None, calls=[call],
                        checkpoint={"quickstart_phase": None, "volume_pipeline_stage": None})


@transaction.atomic(durable=True)
def _results_finish(*, claim: Claim, outcome: StageOutcome) -> None:
    """facts §5 ``results``: everything to its final place, then VOL_PLANNING."""
    board = Blackboard(outcome.blackboard)

    def write(project: Project, run) -> None:
        world = staged(board, "world")
        quickstart_commit(project=project, user=run.created_by, staged=StagedQuickstart(
            rules=world["rules"], world_docs=world["docs"], storylines=world["storylines"],
            characters=staged(board, "characters"), style_profile=staged(board, "style"),
            f0=staged_plan(staged(board, "f0"), title="第1卷"), trial_chapter=staged(board, "trial")["text"],
            trial_evaluation=json.dumps(staged(board, "results")["evaluation"], ensure_ascii=False, indent=2)))
        checkpoint_update(project.pk, orchestrator_state=OrchestratorState.VOL_PLANNING, current_volume=1,
                          last_committed_volume=0, reason="quick start committed", run=run,
                          from_state=project.orchestrator_state)

    finish_locked(claim, outcome, write)


QUICKSTART_STEPS: dict[str, Stage] = {
    "quickstart:world": Stage(_world), "quickstart:characters": Stage(_characters), "quickstart:style": Stage(_style),
    "quickstart:f0": Stage(_f0), "quickstart:trial": Stage(_trial),
    "quickstart:results": Stage(_results, _results_finish),
}
