"""Commit: the staged chapter enters the story in ONE transaction with the checkpoint and the run
(facts §7.4). A stale base_state_version (someone changed the state meanwhile) sends the run back
to summarize: the delta is rebuilt on the current state, never forced over it."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.lint import commit_blocked_by_lint
from pipeline.models import StageRun, StageRunStatus, StateTransition
from pipeline.runtime.claims import Claim, StageOutcome, apply_outcome, claim_locked
from pipeline.chapter.stages.maintain import batch_continue, maintenance_due
from projects.models import OrchestratorState, PipelineStage
from projects.services.chapter_commit import StagedChapter, chapter_commit_story_locked
from projects.state_ops import StalePatch


def _log(run, board: Blackboard, gate: dict) -> dict:
    stages = []
    succeeded = (StageRun.objects.filter(run=run, status=StageRunStatus.SUCCEEDED)
                 .exclude(stage__in=("commit", "maintain"))
                 .order_by("started_at", "pk").values_list("stage", "model", "duration_ms", "input_tokens",
                                                            "output_tokens", "cache_creation_tokens",
                                                            "cache_read_tokens", "cost_usd", "currency", "cost_known"))
    for stage, model, duration_ms, input_tokens, output_tokens, cache_creation, cache_read, cost, currency, known \
            in succeeded:
        # ``cost_usd`` keeps the log's key (facts §10.13) and holds the amount in ``currency``
        stages.append({"name": stage, "model": model, "duration_ms": duration_ms or 0,
                       "input_tokens": input_tokens, "output_tokens": output_tokens,
                       "cache_creation_input_tokens": cache_creation, "cache_read_input_tokens": cache_read,
                       "cost_usd": float(cost), "currency": currency, "cost_known": known})
    return {"chapter": run.chapter, "storyline_id": board.as_("slicer").read_meta("storyline_id") or "",
            "started_at": timezone.localtime(run.created_at).isoformat(timespec="seconds"), "stages": stages,
            "gate_decision": gate.get("decision"), "revisions": gate.get("revisions", 0),
            "force_passed": gate.get("force_passed", False),
            "total_duration_ms": sum(s["duration_ms"] for s in stages),
            "total_cost_usd": round(sum(s["cost_usd"] for s in stages), 6)}


def staged_chapter(run, board: Blackboard) -> StagedChapter:
    skill = board.as_("skill")
    gate = skill.read_content("gate", "result") or {}
    evaluation = {**(skill.read_content("evaluation", "data") or {}),
                  "gate": {"decision": gate.get("decision"), "revisions": gate.get("revisions", 0),
                           "force_passed": gate.get("force_passed", False)},
                  "deterministic_checks": skill.read_content("evaluation", "checks") or {}}
    if gate.get("overall") is not None:
        evaluation["overall_final"] = gate["overall"]  # the system's recomputed score (facts §11)
    return StagedChapter(
        number=run.chapter, volume_number=run.volume_number,
        storyline_slug=board.as_("slicer").read_meta("storyline_id") or "",
        title=skill.read_content("chapter", "title") or "",
        text=skill.read_content("chapter", "refined") or skill.read_content("chapter", "draft"),
        summary=skill.read_content("summary", "text"), delta=skill.read_content("summary", "delta"),
        memory=skill.read_content("summary", "memory"), evaluation=evaluation, log=_log(run, board, gate),
        facts=skill.read_content("summary", "facts"), crossref=skill.read_content("summary", "crossref"),
    )


@transaction.atomic(durable=True)  # nobody may wrap this and keep the project lock longer
def chapter_commit(*, run_id: int, owner: str) -> tuple[Claim, bool | None] | None:
    """Claim the commit stage and commit, in one transaction: there is no LLM call to wait for, so
    no lease needs to outlive it (a worker that dies here leaves nothing behind, and the
    redelivered task claims again). None when there was nothing to claim; otherwise the claim and
    True when the chapter was committed, False when the delta was stale and the run went back to
    summarize or its hard craft-lint findings sent it back to refine. (A rewrite commits through
    its own step, pipeline/book/revision.py.)"""
    claimed = claim_locked(run_id=run_id, stage="commit", owner=owner, with_context=False)
    if claimed is None:
        return None
    claim, run = claimed
    project = claim.project
    from_state = project.orchestrator_state
    board = Blackboard(run.blackboard)
    staged = staged_chapter(run, board)
    blocked = commit_blocked_by_lint(project, text=staged.text, chapter=run.chapter, title=staged.title,
                                     gate=board.as_("skill").read_content("gate", "result") or {})
    if blocked and not board.as_("slicer").read_meta("external"):  # issue #17: a hard finding never commits
        board.as_("orchestrator").append_error("commit", "hard_lint_findings", "; ".join(blocked)[:1000])
        apply_outcome(run, claim, StageOutcome(board.to_dict(), "refine",
                                               checkpoint={"pipeline_stage": PipelineStage.REVISING}))
        return claim, False
    try:  # under the project lock the claim took; a stale patch is refused before anything is written
        chapter_commit_story_locked(project=project, staged=staged)
    except StalePatch as exc:
        board.as_("orchestrator").append_error("commit", "stale_state_version", exc.message)
        # the kept context holds the old state: summarize must read the current one
        apply_outcome(run, claim, StageOutcome(board.to_dict(), "summarize", context={},
                                               checkpoint={"pipeline_stage": PipelineStage.DRAFTING}))
        return claim, False
    if from_state != OrchestratorState.WRITING:  # the commit ends a CHAPTER_REWRITE
        StateTransition.objects.create(project=project, from_state=from_state,
                                       to_state=OrchestratorState.WRITING, run=run,
                                       reason=f"chapter {run.chapter} committed")
    orchestrator = board.as_("orchestrator")
    orchestrator.update_step_status("commit", "completed")
    if maintenance_due(project_id=project.pk, chapter=run.chapter, volume=run.volume_number):
        apply_outcome(run, claim, StageOutcome(board.to_dict(), "maintain"))
        return claim, True
    orchestrator.update_step_status("maintain", "skipped")
    outcome = StageOutcome(board.to_dict(), None)
    apply_outcome(run, claim, outcome)  # the run is done
    batch_continue(run, outcome.blackboard, project=project)
    return claim, True
