"""``novel import-step <project> <tree> <step>``: an outside executor (a coding agent using the
original tool's skills) ran a step against an exported tree; its staged outputs come into the
project once they validate (``pipeline.steps.tree_validate``; facts §9: never advance after a failed validate).

Chapter steps (draft, summarize, refine, judge, commit) go through an *external* chapter run: the
server never calls its own LLM for it; after each imported step the run waits at the next one, the
judge's gate is recomputed by the server (facts §11), and ``commit`` is the server's own commit
(one transaction, facts §7.4). ``chapter:NNN:review`` takes a paused chapter's answer (any paused
chapter, the server's own runs too) from the question's ``answer_path`` in the tree. A tree imported
in the middle of a chapter starts such a run too (``pipeline.steps.staged_resume``), and ``novel advance``
lets Novelsite's own stages take a waiting external chapter over (``external_run_take_over``).
``volume:outline`` stages the executor's plan in a plan run that then waits for approval like any
other. Quick-start and review steps are run by the server.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from pipeline.questions.spec import check_answer, parse_step_id
from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.pause import chapter_pause_gate, open_pause_question, pause_question
from pipeline.book.staged import stage_content
from pipeline.runtime.runs import active_run, book_run_create, run_resume_at
from pipeline.errors import PipelineNotReady
from pipeline.questions.answers import gate_answer_submit
from pipeline.chapter.quality_gate import ScoreError, decide, recompute_overall, stated_overall
from pipeline.runtime.locks import run_lock, run_lock_pair
from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.chapter.platform_rules import gate_settings_for, hook_field_problems, platform_review
from pipeline.book.plan_validation import validate_volume_plan
from pipeline.chapter.evidence import staged_chapter_checks
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.runtime.runs import chapter_run_create
from pipeline.chapter.stages.draft import split_chapter
from pipeline.book.plan import STEPS as PLAN_STEPS
from pipeline.book.plan import plan_data, plan_files, plan_of, plan_range, previous_contract
from pipeline.steps.step_files import chapter_staging, plan_dir, staged_memory_path
from pipeline.steps.tree_advance import StepValidationFailed
from pipeline.steps.tree_reader import TreeReader
from pipeline.steps.tree_validate import validate_step
from projects.errors import InvalidData
from projects.json_validation import json_issues
from projects.lock_objects import project_lock
from projects.models import OrchestratorState, PipelineStage, Project
from projects.permissions import Action
from projects.platforms.limits import platform_limits
from projects.selectors import project_get_for_member
from projects.vocabulary import STAGE_AFTER, VolumePipelineStage

EXTERNAL = "external"  # meta key of a run whose steps an outside executor runs


@dataclass(frozen=True)
class Imported:
    step: str
    run_id: int
    next_stage: str
    status: str
    violations: tuple[str, ...] = ()  # the deterministic checks' violations of an imported judge step (#18)


def step_import(*, project_id: int, tree: str | Path, step: str, user=None) -> Imported:
    """Validate ``step``'s outputs in ``tree`` and take them into the project. Raises
    StepValidationFailed (the validation's errors, nothing imported), PipelineNotReady (the project
    is not at that step) or InvalidData."""
    check = validate_step(tree, step)
    if not check.ok:
        raise StepValidationFailed(f"{step}: " + "; ".join(check.errors),
                                   extra={"errors": check.errors, "warnings": check.warnings})
    parsed = parse_step_id(step)
    if parsed.kind == "chapter" and parsed.phase == "review":
        return _pause_answer_import(project_id, Path(tree), parsed.chapter, step, user)
    if parsed.kind == "chapter":
        return _chapter_import(project_id, Path(tree), parsed.chapter, parsed.phase, step, user)
    if step == "volume:outline":
        return _plan_import(project_id, Path(tree), step, user)
    raise PipelineNotReady(f"{step}: the server runs {parsed.kind} steps itself (novel advance); only chapter "
                           "steps and volume:outline are imported from a tree")


def _read(tree: Path, rel: str, *, as_json: bool = False) -> Any:
    errors: list[str] = []
    reader = TreeReader(tree, errors)
    value = reader.json(rel) if as_json else reader.text(rel)
    if errors:
        raise InvalidData("; ".join(errors))
    return value


CHAPTER_ORDER = {"draft": "summarize", "summarize": "refine", "refine": "judge", "judge": "commit"}


@transaction.atomic(durable=True)
def _chapter_import(project_id: int, tree: Path, number: int, phase: str, step: str, user) -> Imported:
    project = project_lock(project_id)
    run = _external_chapter_run(project, number, phase, user)
    run = run_lock(run.pk)
    if run.stage != phase:
        raise PipelineNotReady(f"{step}: chapter {number} is at {run.stage}, not {phase}")
    board = Blackboard(run.blackboard)
    worker, paths = board.as_("worker"), chapter_staging(number)
    if phase == "commit":  # the server's own commit, as for any chapter
        run_resume_at(run, "commit", board)
        return Imported(step, run.pk, "commit", RunStatus.QUEUED)
    checkpoint: dict[str, Any] = {"pipeline_stage": STAGE_AFTER[phase]}
    next_stage, status, question = CHAPTER_ORDER[phase], RunStatus.WAITING, None
    violations: tuple[str, ...] = ()
    if phase in ("draft", "refine"):
        title, body = split_chapter(_read(tree, paths.chapter), f"第{number}章")
        worker.write_content("chapter", "title", title)
        worker.write_content("chapter", "draft" if phase == "draft" else "refined", body)
        if phase == "draft":
            worker.write_content("chapter", "refined", None)
    elif phase == "summarize":
        delta = _read(tree, paths.delta, as_json=True)
        if issues := json_issues("STATE_DELTA", delta):
            raise InvalidData(f"{paths.delta}: " + "; ".join(map(str, issues)))
        worker.write_content("summary", "text", _read(tree, paths.summary))
        worker.write_content("summary", "delta", delta)
        worker.write_content("summary", "crossref", _read(tree, paths.crossref, as_json=True))
        worker.write_content("summary", "memory", _read(tree, staged_memory_path(delta["storyline_id"])))
    else:  # judge: the server recomputes the gate from the executor's evaluation (facts §11)
        routed = outside_evaluation_gate(project, number, board, _read(tree, paths.evaluation, as_json=True),
                                         kept_context=run.context)
        next_stage, question, violations = routed.next_stage, routed.question, routed.violations
        checkpoint.update(routed.checkpoint)
    run.blackboard, run.stage, run.status = board.to_dict(), next_stage, status
    run.save(update_fields=["blackboard", "stage", "status", "updated_at"])
    checkpoint_update(project.pk, **checkpoint)
    if question is not None:
        from pipeline.questions.answers import question_open

        question_open(run=run, step=question["step"], spec=question["spec"], answer_path=question["answer_path"])
    return Imported(step, run.pk, next_stage, status, violations)


@dataclass(frozen=True)
class GateRouting:
    next_stage: str  # commit, refine, draft, or gate (a person decides)
    checkpoint: dict[str, Any]
    question: dict[str, Any] | None  # chapter_pause_gate's, for a pause
    violations: tuple[str, ...]


def outside_evaluation_gate(project: Project, number: int, board: Blackboard, evaluation: Any, *,
                            kept_context: dict | None = None) -> GateRouting:
    """The server's gate (facts §11) on an evaluation written outside, for the chapter staged on ``board``
    (an imported judge step, or a tree imported in the middle of a chapter): written to the board with
    the deterministic checks' results. Raises InvalidData for an evaluation the gate cannot read."""
    rel = chapter_staging(number).evaluation
    if issues := json_issues("EVALUATION", evaluation):
        raise InvalidData(f"{rel}: " + "; ".join(map(str, issues)))
    settings = gate_settings_for(project)
    if stated_overall(evaluation) is None:  # the tool reads the stated overall; without one, the scores
        try:
            recompute_overall(evaluation, settings.scoring_weights)
        except ScoreError as exc:
            raise InvalidData(f"{rel}: no overall_final or overall, and the scores give none ({exc}); judge the "
                              "chapter again") from exc
    if platform_limits(project)["hook_policy"]["required"] and (problems := hook_field_problems(evaluation)):
        raise InvalidData(f"{rel}: the platform requires a chapter-end hook verdict: "
                          + "; ".join(problems))  # facts §7.1: judge validation under hook_policy.required
    # the same deterministic checks as the pipeline's judge (#18): a violation sends it back to draft
    skill, worker = board.as_("skill"), board.as_("worker")
    text = skill.read_content("chapter", "refined") or skill.read_content("chapter", "draft") or ""
    checks = staged_chapter_checks(project, number, kept_context, skill.read_content("summary", "delta"), text)
    result = decide(evaluation, revision_count=project.revision_count, settings=settings,
                    policy_failures=platform_review(evaluation, project, number),
                    deterministic_violations=checks.violations, outside=True)  # its stated overall (#20)
    worker.write_content("evaluation", "checks", checks.as_dict())
    worker.write_content("evaluation", "data", evaluation)
    worker.write_content("gate", "result", {**result.as_dict(), "revisions": project.revision_count})
    next_stage = {"pass": "commit", "force_passed": "commit", "polish": "refine", "revise": "draft"}.get(
        result.decision, "gate")
    checkpoint: dict[str, Any] = {}
    if result.decision == "revise":
        worker.write_content("revision", "required_fixes", result.required_fixes)
        checkpoint.update(pipeline_stage=PipelineStage.REVISING, revision_count=project.revision_count + 1)
    question = None
    if next_stage == "gate":
        question = chapter_pause_gate(number, pause_question(number, result.decision, result.overall))
    return GateRouting(next_stage, checkpoint, question, tuple(checks.violations))


@transaction.atomic(durable=True)
def external_run_take_over(*, run_id: int, user=None) -> PipelineRun:
    """Novelsite's own stages take an outside executor's chapter over at the step it waits at (``novel
    advance``). Locks: the project, then the run; the stage is queued on commit."""
    locked = run_lock_pair(run_id)
    if locked is None:
        raise PipelineNotReady(f"no run {run_id}")
    _project, run = locked
    board = Blackboard(run.blackboard)
    if run.status != RunStatus.WAITING or not board.as_("slicer").read_meta(EXTERNAL):
        raise PipelineNotReady(f"{run} is not waiting for an outside executor")
    board.as_("orchestrator").write_meta(EXTERNAL, False)
    run_resume_at(run, run.stage, board)
    return run


def _pause_answer_import(project_id: int, tree: Path, number: int, step: str, user) -> Imported:
    """A paused chapter's answer, written by an outside adapter at the question's ``answer_path``
    (facts §14.5: an invalid answer is a hard error, a missing one leaves the step blocked), is
    the person's decision: stored and applied as if answered on the site (``pipeline.chapter.pause``)."""
    project = Project.objects.get(pk=project_id)
    question = open_pause_question(project, number)
    if question is None:
        raise PipelineNotReady(f"{step}: chapter {number} is not waiting for a person's decision")
    if user is None:
        raise PipelineNotReady(f"{step}: name the person whose decision this is (--as)")
    project_get_for_member(user=user, slug=project.slug, action=Action.DECIDE)
    record = _read(tree, question.answer_path, as_json=True)
    if errors := check_answer(record, question.spec):
        raise InvalidData(f"{question.answer_path}: " + "; ".join(errors), extra={"errors": errors})
    gate_answer_submit(question_id=question.pk, answers=record["answers"], user=user)
    run = PipelineRun.objects.get(pk=question.run_id)
    return Imported(step, run.pk, run.stage, run.status)


def _external_chapter_run(project: Project, number: int, phase: str, user) -> PipelineRun:
    """The chapter's external run; a draft of the next chapter starts one."""
    run = active_run(project)
    if run is not None:
        meta = run.blackboard.get("meta", {})
        if run.kind != RunKind.CHAPTER or run.chapter != number or not meta.get(EXTERNAL):
            raise PipelineNotReady(f"{project.slug} is busy with {run} (not an outside executor's chapter {number})")
        return run
    if phase != "draft":
        raise PipelineNotReady(f"chapter {number} has no draft yet: import chapter:{number:03d}:draft first")
    if number != project.last_completed_chapter + 1:
        raise PipelineNotReady(f"the next chapter is {project.last_completed_chapter + 1}, not {number}")
    run = chapter_run_create(project, user=user)  # its queued draft wake-up finds the run moved on
    board = Blackboard(run.blackboard)
    board.as_("orchestrator").write_meta(EXTERNAL, True)
    run.blackboard, run.status = board.to_dict(), RunStatus.WAITING
    run.save(update_fields=["blackboard", "status", "updated_at"])
    return run


@transaction.atomic(durable=True)
def _plan_import(project_id: int, tree: Path, step: str, user) -> Imported:
    """The executor's staged plan becomes the plan run's, validated; then it waits for approval."""
    project = project_lock(project_id)
    unplanned = not project.chapter_contracts.filter(chapter=project.last_completed_chapter + 1).exists()
    planning = project.orchestrator_state == OrchestratorState.VOL_PLANNING or (
        project.orchestrator_state == OrchestratorState.WRITING and unplanned)  # facts §15.4
    if not planning or active_run(project) is not None:
        raise PipelineNotReady(f"{project.slug} is not ready to plan a volume ({project.orchestrator_state}, "
                               f"{'busy' if active_run(project) else 'its next chapter is planned'})")
    start, end, seed = plan_range(project)
    volume = project.current_volume
    base = plan_dir(volume, staged=True)
    data = {"volume": volume, "chapter_start": start, "chapter_end": end,
            "outline": _read(tree, f"{base}/outline.md"),
            "schedule": _read(tree, f"{base}/storyline-schedule.json", as_json=True),
            "foreshadowing": _read(tree, f"{base}/foreshadowing.json", as_json=True),
            "new_characters": _read(tree, f"{base}/new-characters.json", as_json=True),
            "contracts": {str(n): _read(tree, f"{base}/chapter-contracts/chapter-{n:03d}.json", as_json=True)
                          for n in range(start, end + 1)}}
    plan = plan_of(data)
    report = validate_volume_plan(plan, previous_contract=previous_contract(project, start))
    if not report.ok:
        raise InvalidData("the plan breaks the planning rules: " + "; ".join(report.errors),
                          extra={"errors": report.errors})
    run = book_run_create(project, kind=RunKind.PLAN, steps=PLAN_STEPS, user=user, volume=volume,
                          status=RunStatus.WAITING, meta={"volume": volume, "chapter_start": start, "chapter_end": end,
                                                          "seed_range": seed, EXTERNAL: True})
    board = Blackboard(run.blackboard)
    stage_content(board, "plan", plan_data(plan), plan_files(plan))
    board.as_("worker").write_content("book", "plan_warnings", report.warnings)
    run_resume_at(run, "volume:validate", board)  # the server's validate step opens the approval question
    checkpoint_update(project.pk, volume_pipeline_stage=VolumePipelineStage.VALIDATE,
                      orchestrator_state=OrchestratorState.VOL_PLANNING,
                      run=run, actor=user, from_state=project.orchestrator_state,
                      reason=f"an outside executor's plan of volume {volume} imported")
    return Imported(step, run.pk, "volume:validate", RunStatus.QUEUED)


