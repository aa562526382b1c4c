"""VOL_REVIEW (facts §8, vol-review.md): at a volume's end, a quality summary of its chapters, a
continuity audit (the four issue types of facts §10.15), a review report, a foreshadowing audit
(overdue, dormant), then the transition: the final-state snapshot
(``state/history/vol-VV-final-state.json``), retired characters cleaned out of the state, the
report kept as the volume's ``review.md``, and VOL_PLANNING for the next volume (the PRD's
intent, facts §15.4; the CLI would go to WRITING).

Steps: ``review:collect`` → ``review:audit`` (the LLM's consistency audit) → ``review:report`` →
``review:cleanup`` → ``review:transition``.
"""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from pipeline.runtime.blackboard import Blackboard
from pipeline.book.staged import stage_content, staged
from pipeline.runtime.claims import finish_locked
from pipeline.runtime.runs import book_run_create
from pipeline.runtime.stage import Stage
from pipeline.errors import PipelineNotReady
from pipeline.llm.types import LLMBadOutput
from pipeline.models import PipelineRun, RunKind
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.runtime.claims import Claim, StageOutcome
from pipeline.chapter.stages.base import PromptBlock, data_block, json_output, project_llm_call
from projects.lock_objects import project_lock
from projects.models import ChangeSource, Evaluation, OrchestratorState, Project
from projects.selectors import foreshadowing_dormant, foreshadowing_overdue
from projects.services.volume_review import volume_review_close

STEPS = ["review:collect", "review:audit", "review:report", "review:cleanup", "review:transition"]
LOW_SCORE = 3.5  # facts §8: low_chapters are those below 3.5
ROLE = "你是连载小说的连续性审校（consistency-auditor）：找出人物状态、时间线、伏笔和故事线上的断裂。"
# facts §10.15: the four types the original tool reads (judge packets summarize them, pipeline.steps.packet_inline),
# then Novelsite's own two (the audit looks at foreshadowing and storylines too)
ISSUE_TYPES = ("character_mapping", "relationship_jump", "location_contradiction", "timeline_contradiction",
               "foreshadowing", "storyline")


def volume_end(project: Project, volume: int) -> int | None:
    """The last planned chapter of ``volume`` (facts §4.2: from the outline or the contracts)."""
    return project.chapter_contracts.filter(volume__number=volume).aggregate(m=Max("chapter"))["m"]


@transaction.atomic(durable=True)
def volume_review_start(*, project_id: int, user=None) -> PipelineRun:
    """Review the current volume once its last planned chapter is committed."""
    project = project_lock(project_id)
    volume, end = project.current_volume, volume_end(project, project.current_volume)
    if project.orchestrator_state not in (OrchestratorState.WRITING, OrchestratorState.VOL_REVIEW):
        raise PipelineNotReady(f"{project.slug} is in {project.orchestrator_state}; a volume is reviewed after "
                               "its last chapter is written")
    if end is None or project.last_completed_chapter < end:
        raise PipelineNotReady(f"volume {volume} is not finished: chapter {project.last_completed_chapter} of "
                               f"{end or '?'} is the last committed")
    start = project.chapter_contracts.filter(volume__number=volume).order_by("chapter").values_list(
        "chapter", flat=True).first()
    run = book_run_create(project, kind=RunKind.REVIEW, steps=STEPS, user=user, volume=volume,
                          meta={"volume": volume, "chapter_range": [start, end]})
    checkpoint_update(project.pk, orchestrator_state=OrchestratorState.VOL_REVIEW, reason=f"volume {volume} ended",
                      run=run, actor=user, from_state=project.orchestrator_state)
    return run


def _range(board: Blackboard) -> tuple[int, int, int]:
    meta = board.as_("slicer").read_meta
    start, end = meta("chapter_range")
    return meta("volume"), start, end


def _next(board: Blackboard, step: str, calls=()) -> StageOutcome:
    board.as_("orchestrator").update_step_status(step, "completed")
    index = STEPS.index(step)
    return StageOutcome(board.to_dict(), STEPS[index + 1] if index + 1 < len(STEPS) else None, calls=list(calls))


def quality_summary(project: Project, volume: int, start: int, end: int) -> dict[str, Any]:
    """facts §8 ``quality-summary.json``, from the committed evaluations (one query)."""
    rows = list(Evaluation.objects.filter(project=project, chapter__number__range=(start, end))
                .order_by("chapter__number")
                .values_list("chapter__number", "overall", "gate_decision", "revisions", "force_passed", "data"))
    chapters = []
    for number, overall, decision, revisions, forced, data in rows:
        final = (data or {}).get("overall_final", overall)
        verification = (data or {}).get("contract_verification") or {}
        chapters.append({"chapter": number, "eval_path": f"evaluations/chapter-{number:03d}-eval.json",
                         "overall_final": float(final) if final is not None else None, "gate_decision": decision,
                         "revisions": revisions, "force_passed": forced,
                         "has_high_confidence_violation": bool(verification.get("has_violations"))})
    scores = [c["overall_final"] for c in chapters if c["overall_final"] is not None]
    warnings = [f"chapter {n} has no evaluation" for n in range(start, end + 1)
                if n not in {c["chapter"] for c in chapters}]
    return {"schema_version": 1, "generated_at": timezone.now().isoformat(timespec="seconds"),
            "as_of": {"volume": volume, "chapter": project.last_completed_chapter}, "chapter_range": [start, end],
            "stats": {"chapters_total": end - start + 1, "chapters_with_eval": len(chapters),
                      "overall_avg": round(sum(scores) / len(scores), 4) if scores else None,
                      "overall_min": min(scores, default=None), "overall_max": max(scores, default=None)},
            "chapters": chapters, "low_chapters": [c["chapter"] for c in chapters
                                                   if c["overall_final"] is not None
                                                   and c["overall_final"] < LOW_SCORE],
            "warnings": warnings}


def _collect(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    volume, start, end = _range(board)
    summary = quality_summary(project, volume, start, end)
    stage_content(board, "quality", summary, {"vol-review/quality-summary.json": summary})
    return _next(board, "review:collect")


def audit_errors(report: Any) -> list[str]:
    """The continuity report's shape (facts §10.15): issues[] with a type of the four and a severity."""
    if not isinstance(report, dict) or not isinstance(report.get("issues"), list):
        return ["audit-report.json: must be an object with an issues[] array"]
    errors = []
    for i, issue in enumerate(report["issues"]):
        if not isinstance(issue, dict):
            errors.append(f"audit-report.json: issues[{i}] must be an object")
        elif issue.get("severity") not in ("high", "medium", "low"):
            errors.append(f"audit-report.json: issues[{i}].severity must be high, medium or low")
    return errors


def _audit(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    volume, start, end = _range(board)
    summaries = list(project.chapter_summaries.filter(chapter__number__range=(start, end)).order_by("chapter__number")
                     .values_list("text", flat=True))
    slice_ = {"volume": volume, "chapter_range": [start, end], "low_chapters": staged(board, "quality")["low_chapters"]}
    state = getattr(project, "story_state", None)
    call = project_llm_call(claim, project, label=f"vol{volume}", stage="review", slice_=slice_,
                            blocks=[PromptBlock("role", "system", ROLE, required=True, cacheable=True),
                                    data_block("summaries", "summary", "\n\n".join(summaries), priority=70,
                                               shrinkable=True),
                                    data_block("state", "state", str(state.data) if state else "", priority=50,
                                               shrinkable=True)],
                            template="review.j2", template_context=slice_, tags=["thought", "audit"],
                            required_tags=["audit"], on_text=on_text)
    report = json_output(call, "audit", stage="review:audit")
    if errors := audit_errors(report):
        raise LLMBadOutput("review:audit: " + "; ".join(errors))
    stage_content(board, "audit", report, {"vol-review/audit-report.json": report})
    return _next(board, "review:audit", [call])


def review_markdown(volume: int, quality: dict[str, Any], audit: dict[str, Any]) -> str:
    """The deterministic review report (``review-report.md``, kept as the volume's ``review.md``)."""
    stats = quality["stats"]
    lines = [f"# 第 {volume} 卷回顾", "",
             f"- 章节范围：第 {quality['chapter_range'][0]}–{quality['chapter_range'][1]} 章",
             f"- 有评审的章节：{stats['chapters_with_eval']} / {stats['chapters_total']}",
             f"- 平均分：{stats['overall_avg']}（最低 {stats['overall_min']}，最高 {stats['overall_max']}）",
             f"- 低分章节（< {LOW_SCORE}）：{'、'.join(map(str, quality['low_chapters'])) or '无'}", "",
             "## 连续性问题", ""]
    issues = audit.get("issues") or []
    lines += [f"- [{i.get('severity')}] {i.get('type', '')} 第 {i.get('chapters', '?')} 章：{i.get('description', '')}"
              for i in issues] or ["- 未发现问题"]
    return "\n".join(lines) + "\n"


def _report(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    volume, _start, _end = _range(board)
    text = review_markdown(volume, staged(board, "quality"), staged(board, "audit"))
    stage_content(board, "report", text, {"vol-review/review-report.md": text})
    return _next(board, "review:report")


def _cleanup(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    """facts §8 ``foreshadow-status.json``: the foreshadowing audit as of the volume's end."""
    _volume, _start, end = _range(board)
    status = {"schema_version": 1, "generated_at": timezone.now().isoformat(timespec="seconds"), "as_of": end,
              "foreshadowing_audit": {
                  "overdue": list(foreshadowing_overdue(project=project, as_of=end).values_list("fid", flat=True)),
                  "dormant": [{"id": d.foreshadowing.fid, "chapters_silent": d.chapters_since_last_update}
                              for d in foreshadowing_dormant(project=project, as_of=end)]},
              "bridge_check": {}, "storyline_rhythm": {}}
    retired = list(project.characters.filter(status="retired").values_list("slug", flat=True))
    stage_content(board, "cleanup", {"status": status, "retired": retired},
                  {"vol-review/foreshadow-status.json": status})
    return _next(board, "review:cleanup")


def _transition(claim: Claim, project: Project, board: Blackboard, on_text=None) -> StageOutcome:
    return _next(board, "review:transition")


@transaction.atomic(durable=True)
def _transition_finish(*, claim: Claim, outcome: StageOutcome) -> None:
    board = Blackboard(outcome.blackboard)
    volume, _start, end = _range(board)

    def write(project: Project, run: PipelineRun) -> None:
        cleanup = staged(board, "cleanup")
        volume_review_close(project=project, volume=volume, last_chapter=end, review=staged(board, "report"),
                            retired=cleanup["retired"], source=ChangeSource.PIPELINE)
        checkpoint_update(project.pk, orchestrator_state=OrchestratorState.VOL_PLANNING, current_volume=volume + 1,
                          volume_pipeline_stage=None, reason=f"volume {volume} reviewed", run=run,
                          from_state=project.orchestrator_state)

    finish_locked(claim, outcome, write)


REVIEW_STEPS: dict[str, Stage] = {
    "review:collect": Stage(_collect), "review:audit": Stage(_audit), "review:report": Stage(_report),
    "review:cleanup": Stage(_cleanup), "review:transition": Stage(_transition, _transition_finish),
}
