"""The book's state machine (facts §4): which step comes next for a project and why
(``next_step``, the ``novel next`` answer), and the one function that takes it (``advance``).

States: INIT → QUICK_START → VOL_PLANNING → WRITING (chapters) → at the volume's end VOL_REVIEW →
VOL_PLANNING (next volume) …; ERROR_RETRY when a run's retries are spent; CHAPTER_REWRITE while a
chapter is revised. Following the PRD where the original CLI differs (facts §15.4): after a review
the next volume is planned, and WRITING with no plan for the next chapter also means planning.
Every change of state is a ``StateTransition`` row (``checkpoint.checkpoint_update``).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction

from pipeline.questions.spec import format_step_id
from pipeline.nightly.budget import run_is_budget_waiting
from pipeline.runtime.runs import active_run
from pipeline.errors import PipelineNotReady
from pipeline.models import GateQuestion, GateStatus, PipelineRun, RunKind, RunStatus
from pipeline.nightly.batches import run_budget_resume
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.runtime.runs import chapter_run_start, run_retry
from pipeline.book.plan import plan_range, volume_plan_start
from pipeline.book.quickstart import quickstart_start
from pipeline.book.review import volume_end, volume_review_start
from projects.ids import CHAPTERS_PER_VOLUME
from projects.lock_objects import project_lock
from projects.models import OrchestratorState, PipelineStage, Project
from projects.vocabulary import QUICKSTART_PHASES, inflight_mismatch

# Where the step ``next_step`` names is not the one novel-writer-cli's ``novel next`` would give for the
# same checkpoint, and why (``evidence["differs_from_tool"]``; the README lists them all).
TOOL_DIFFERENCES = {
    "plan_rest_of_volume": (
        "novel-writer-cli would review the volume here (its volume ends at the last chapter of the outline); "
        "Novelsite plans the rest of the volume first, since a volume ends at chapter V*30 (facts §15.4)"),
    "plan_next_volume": (
        "novel-writer-cli would draft the next chapter with no plan; Novelsite plans the volume first "
        "(facts §4.2 [INF], §15.4)"),
    "pause_before_judge": (
        "novel-writer-cli would judge this refined chapter and stop at review on its guardrails; Novelsite asks "
        "first, since the hard craft findings outlived the revisions and a judged score cannot lift them"),
    "polish_then_commit": (
        "novel-writer-cli re-judges after a polish and counts it as a revision; Novelsite commits the polished "
        "chapter, as the references say (facts §15.5)"),
}


@dataclass(frozen=True)
class NextStep:
    """facts §4.2 ``NextStepResult`` plus what ``advance`` would do (``action``)."""

    step: str | None
    reason: str
    # start_quickstart | start_plan | write_chapter | start_review | retry | resume | heal | answer_gate |
    # import_step (an outside executor's run waits for its next step; advancing takes it over) | wait
    action: str
    inflight: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    run_id: int | None = None
    question_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_step_id(run: PipelineRun) -> str:
    """The facts §1 step id of where a run stands: a chapter waiting at Novelsite's ``gate`` stage is at
    the tool's ``chapter:NNN:review`` (facts §7.3), the memory upkeep after a commit is its ``commit``."""
    if run.kind in (RunKind.CHAPTER, RunKind.REWRITE) and run.chapter:
        stage = {"maintain": "commit", "gate": "review"}.get(run.stage, run.stage)
        return format_step_id("chapter", run.chapter, stage)
    return run.stage


def next_step(project: Project) -> NextStep:
    """What comes next for ``project`` and why; reads only (a handful of queries)."""
    inflight = {"chapter": project.inflight_chapter, "pipeline_stage": project.pipeline_stage}
    run = active_run(project)
    if run is not None:
        return _next_for_run(run, inflight)
    state = project.orchestrator_state
    if state == OrchestratorState.INIT:
        return NextStep("quickstart:world", "init:no_quickstart", "start_quickstart", inflight)
    if state == OrchestratorState.QUICK_START:
        phases = QUICKSTART_PHASES
        done = phases.index(project.quickstart_phase) + 1 if project.quickstart_phase in phases else 0
        return NextStep(f"quickstart:{phases[min(done, len(phases) - 1)]}", "quickstart:restart_from_world",
                        "start_quickstart", inflight, {"quickstart_phase": project.quickstart_phase})
    if state == OrchestratorState.VOL_PLANNING:
        return _planning(project, inflight, "vol_planning")
    if state == OrchestratorState.VOL_REVIEW:
        return NextStep("review:collect", f"vol_review:vol-{project.current_volume:02d}", "start_review", inflight)
    if state == OrchestratorState.ERROR_RETRY:
        heal = _healing(project)
        routed = _chapter_router(project, inflight)
        return NextStep(routed.step, f"error_retry:{heal}{routed.reason}", "heal", inflight, routed.evidence)
    return _chapter_router(project, inflight)


def _next_for_run(run: PipelineRun, inflight: dict[str, Any]) -> NextStep:
    step = run_step_id(run)
    if run.status == RunStatus.ERROR:
        return NextStep(step, f"error_retry:{run.error[:300]}", "retry", inflight, run_id=run.pk)
    if run.chapter and run.stage == "commit" and _polished(run):
        return NextStep(step, f"{run.status}:{run.kind}", "wait", inflight,
                        {"differs_from_tool": TOOL_DIFFERENCES["polish_then_commit"]}, run_id=run.pk)
    if run.status == RunStatus.WAITING:
        if run_is_budget_waiting(run):
            return NextStep(step, "waiting:cost_cap", "resume", inflight, run_id=run.pk)
        question = GateQuestion.objects.filter(run=run, status=GateStatus.OPEN).order_by("-pk").first()
        if question is not None:
            evidence = {"topic": question.topic, "answer_path": question.answer_path}
            if run.error:
                evidence["blocked"] = run.error
            if run.chapter and inflight["pipeline_stage"] == PipelineStage.REFINED:  # refine's hard-lint pause
                evidence["differs_from_tool"] = TOOL_DIFFERENCES["pause_before_judge"]
            return NextStep(question.step, f"waiting_for_answer:{question.topic}", "answer_gate", inflight, evidence,
                            run_id=run.pk, question_id=question.pk)
        if run.blackboard.get("meta", {}).get("external"):  # an outside executor runs it (pipeline.steps.import_step)
            return NextStep(step, "external:waiting_for_import", "import_step", inflight, run_id=run.pk)
        return NextStep(step, "waiting", "wait", inflight, run_id=run.pk)
    return NextStep(step, f"{run.status}:{run.kind}", "wait", inflight, run_id=run.pk)


def _planning(project: Project, inflight: dict[str, Any], why: str) -> NextStep:
    try:
        start, end, seed = plan_range(project)
    except PipelineNotReady as exc:
        return NextStep(None, f"{why}:{exc.message}", "wait", inflight)
    evidence = {"volume": project.current_volume, "plan_range": [start, end], "volume_plan_seed_range": seed}
    return NextStep("volume:outline", f"{why}:vol-{project.current_volume:02d}", "start_plan", inflight, evidence)


def _chapter_router(project: Project, inflight: dict[str, Any]) -> NextStep:
    last, volume = project.last_completed_chapter, project.current_volume
    end = volume_end(project, volume)
    if end is not None and last >= end and end >= volume * CHAPTERS_PER_VOLUME:
        return NextStep("review:collect", f"volume_end:vol-{volume:02d}:chapter-{end:03d}", "start_review", inflight,
                        {"volume": volume, "last_chapter": end})
    # the planned chapters are written but the volume has more (an F0 seed, a partial plan): plan the rest
    if not project.chapter_contracts.filter(chapter=last + 1).exists():
        routed = _planning(project, inflight, f"no_plan:chapter-{last + 1:03d}")
        if routed.step is not None:
            why = "plan_rest_of_volume" if end is not None and last >= end else "plan_next_volume"
            routed.evidence["differs_from_tool"] = TOOL_DIFFERENCES[why]
        return routed
    return NextStep(format_step_id("chapter", last + 1, "draft"), f"writing:chapter-{last + 1:03d}", "write_chapter",
                    inflight)


def _polished(run: PipelineRun) -> bool:
    """A chapter run going to commit after the gate's polish (refine read ``polish_pending``)."""
    gate = run.blackboard.get("content", {}).get("gate", {}).get("result") or {}
    return gate.get("decision") == "polish"


def _inflight_mismatch(project: Project) -> str | None:
    """``inflight_mismatch`` of the project's checkpoint; a blank stage (the admin's empty choice) is
    none, and so is chapter 0."""
    return inflight_mismatch(project.pipeline_stage or None, project.inflight_chapter or None)


def _healing(project: Project) -> str:
    """facts §4.2's ERROR_RETRY healing, as a reason prefix (``error_retry_heal`` applies it)."""
    mismatch = _inflight_mismatch(project)
    return f"healed_{mismatch}:" if mismatch else ""


@transaction.atomic(durable=True)
def error_retry_heal(*, project_id: int, user=None) -> None:
    """ERROR_RETRY with no run to retry (a run was cancelled, a checkpoint imported): make the
    checkpoint consistent as facts §4.2 says, then back to WRITING."""
    project = project_lock(project_id)
    if project.orchestrator_state != OrchestratorState.ERROR_RETRY:
        return
    fields: dict[str, Any] = {}
    mismatch = _inflight_mismatch(project)
    if mismatch == "drop_inflight":
        fields["inflight_chapter"] = None
    elif mismatch == "infer_inflight":
        # a stage in flight with no chapter: the chapter after the last committed one; a new run
        # starts it over, so the stage goes back to idle too
        fields.update(inflight_chapter=None, pipeline_stage=PipelineStage.COMMITTED)
    checkpoint_update(project.pk, orchestrator_state=OrchestratorState.WRITING, reason="error_retry healed",
                      actor=user, from_state=project.orchestrator_state, **fields)


def advance(*, project_id: int, user=None, step: str | None = None) -> PipelineRun | None:
    """Take the next step (``step``, if given, must be it). Starts or resumes the run that does the
    work; returns it (None when only the checkpoint changed). Refused with the reason when the
    project waits for a person or a run is already on its way."""
    project = Project.objects.get(pk=project_id)
    upcoming = next_step(project)
    if step is not None and step != upcoming.step:
        raise PipelineNotReady(f"the next step is {upcoming.step} ({upcoming.reason}), not {step}",
                               extra={"next": upcoming.as_dict()})
    action = upcoming.action
    if action == "heal":
        error_retry_heal(project_id=project_id, user=user)
        return advance(project_id=project_id, user=user)
    if action == "start_quickstart":
        return quickstart_start(project_id=project_id, user=user)
    if action == "start_plan":
        return volume_plan_start(project_id=project_id, user=user)
    if action == "start_review":
        return volume_review_start(project_id=project_id, user=user)
    if action == "write_chapter":
        return chapter_run_start(project_id=project_id, user=user)
    if action == "retry":
        return run_retry(run_id=upcoming.run_id, user=user)
    if action == "resume":  # a chapter parked at the night's cost cap: a person decides to spend
        return run_budget_resume(run_id=upcoming.run_id, user=user)
    if action == "import_step":  # an outside executor's chapter: Novelsite's own stages take the step
        from pipeline.steps.import_step import external_run_take_over

        return external_run_take_over(run_id=upcoming.run_id, user=user)
    if action == "answer_gate":
        raise PipelineNotReady(f"{upcoming.step} waits for an answer ({upcoming.evidence.get('topic')})",
                               extra={"next": upcoming.as_dict()})
    raise PipelineNotReady(f"nothing to advance: {upcoming.reason}", extra={"next": upcoming.as_dict()})
