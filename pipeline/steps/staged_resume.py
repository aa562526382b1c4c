"""A tree imported in the middle of a chapter (#20 item 3): its checkpoint has a chapter in flight
(facts §3) and ``staging/`` holds that chapter's work so far (facts §7.1). The import turns that work
into the chapter's run, waiting at the step novel-writer-cli would take next (facts §7.2, §7.3):

* ``revising`` → draft (the staged chapter and evaluation kept, as the revision's draft and eval);
* ``drafting`` / ``drafted``: no chapter → draft; no summary, delta, crossref or storyline memory →
  summarize; otherwise → refine;
* ``refined`` / ``judged``: no chapter → draft; no (valid) evaluation → judge; otherwise the server's
  gate on it (``import_step.outside_evaluation_gate``): commit, refine (polish), draft (revise) or a
  person's decision at ``chapter:NNN:review``.

The run is an outside executor's (``import_step``): ``novel import-step`` takes the next step from a
tree, or ``novel advance`` has Novelsite's own stages take it over. The chapter's staged files are
taken from the tree, never kept as opaque files: the export writes the run's work at the same paths,
and work a later step would delete is dropped (a summary before a re-draft, an evaluation before a
refine), so nothing stale is exported. Staged files of a chapter that is not in flight are dropped
with a warning. Registered as the importer's staging reader (``PipelineConfig.ready``).
"""
from __future__ import annotations

import json
from typing import Any

from pipeline.runtime.blackboard import Blackboard
from pipeline.runtime.checkpoint_moves import checkpoint_update
from pipeline.questions.answers import question_open
from pipeline.steps.import_step import EXTERNAL, outside_evaluation_gate
from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.chapter.stages.draft import split_chapter
from pipeline.steps.step_files import chapter_staging, staged_memory_path
from projects.errors import InvalidData
from projects.json_validation import json_issues
from projects.models import Project
from projects.vocabulary import CHAPTER_RUN_STEPS, IDLE_PIPELINE_STAGES, PIPELINE_STAGES, PipelineStage

IN_FLIGHT = tuple(stage for stage in PIPELINE_STAGES if stage not in IDLE_PIPELINE_STAGES)
STAGED_DIRS = ("staging/chapters/", "staging/summaries/", "staging/state/", "staging/evaluations/",
               "staging/storylines/", "staging/logs/")


def resume_phase(stage: str, *, chapter: bool, summarized: bool, evaluated: bool) -> str:
    """The step the tool resumes a chapter at from its checkpoint stage and staged files (facts §7.2);
    ``gate`` when the evaluation decides (facts §7.3)."""
    if stage == PipelineStage.REVISING or not chapter:
        return "draft"
    if stage in (PipelineStage.DRAFTING, PipelineStage.DRAFTED):
        return "refine" if summarized else "summarize"
    return "gate" if evaluated else "judge"


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return None


def _summary(files: dict[str, str], number: int) -> dict[str, Any] | None:
    """The summarize step's outputs when all are there and usable (facts §7.1's validate)."""
    paths = chapter_staging(number)
    delta, crossref, text = _json(files.get(paths.delta)), _json(files.get(paths.crossref)), files.get(paths.summary)
    if text is None or not isinstance(crossref, dict) or json_issues("STATE_DELTA", delta):
        return None
    if not isinstance(delta.get("storyline_id"), str):
        return None
    memory = files.get(staged_memory_path(delta["storyline_id"]))
    if memory is None:
        return None
    return {"text": text, "delta": delta, "crossref": crossref, "memory": memory}


def staged_chapter_read(project: Project, files: dict[str, str]) -> tuple[set[str], list[str]]:
    """The importer's staging reader: (the paths it took, warnings). Inside the import's transaction."""
    chapter_files = {path for path in files if path.startswith(STAGED_DIRS)}
    if not chapter_files:
        return set(), []
    number, stage = project.inflight_chapter, project.pipeline_stage
    if not number or stage not in IN_FLIGHT or number != project.last_completed_chapter + 1:
        return chapter_files, [f"{path}: staged work of no chapter in flight (the checkpoint's stage is "
                               f"{stage or 'null'}), dropped" for path in sorted(chapter_files)]
    _resume(project, number, stage, files)
    return chapter_files, []


def _resume(project: Project, number: int, stage: str, files: dict[str, str]) -> PipelineRun:
    paths = chapter_staging(number)
    text = files.get(paths.chapter)
    text = text if text is not None and text.strip() else None
    summary = _summary(files, number) if text is not None else None
    evaluation = _json(files.get(paths.evaluation)) if text is not None else None
    evaluation = evaluation if isinstance(evaluation, dict) else None
    phase = resume_phase(stage, chapter=text is not None, summarized=summary is not None,
                         evaluated=evaluation is not None)
    contract = project.chapter_contracts.filter(chapter=number).values_list("volume__number", "data").first()
    volume, data = contract if contract else (project.current_volume, {})
    board = Blackboard()
    orchestrator = board.as_("orchestrator")
    orchestrator.initialise(meta={"kind": "chapter", "chapter": number, "volume": volume,
                                  "storyline_id": data.get("storyline_id"), "batch_remaining": 0},
                            steps=CHAPTER_RUN_STEPS)
    orchestrator.write_meta(EXTERNAL, True)
    worker = board.as_("worker")
    if text is not None:
        title, body = split_chapter(text, f"第{number}章")
        worker.write_content("chapter", "title", title)
        worker.write_content("chapter", "draft", body)
        worker.write_content("chapter", "imported_file", text)  # exported as it came while unchanged
        if stage in (PipelineStage.REFINED, PipelineStage.JUDGED) and phase != "draft":
            worker.write_content("chapter", "refined", body)
    if summary is not None and phase != "draft":
        for key, value in summary.items():
            worker.write_content("summary", key, value)
    next_stage, checkpoint, question = phase, {}, None
    if phase == "draft" and stage == PipelineStage.REVISING and evaluation is not None:
        worker.write_content("evaluation", "data", evaluation)  # the revision's chapter_eval (facts §12)
        worker.write_content("revision", "required_fixes", evaluation.get("required_fixes") or [])
    if phase == "gate":
        try:
            routed = outside_evaluation_gate(project, number, board, evaluation)
            next_stage, checkpoint, question = routed.next_stage, routed.checkpoint, routed.question
        except InvalidData:  # facts §7.2: an unreadable or invalid evaluation is judged again
            next_stage = "judge"
            for key in ("data", "checks"):
                worker.write_content("evaluation", key, None)
    run = PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=number, volume_number=volume,
                                     status=RunStatus.WAITING, stage=next_stage, blackboard=board.to_dict())
    if checkpoint:
        checkpoint_update(project.pk, run=run, **checkpoint)
    if question is not None:
        question_open(run=run, step=question["step"], spec=question["spec"], answer_path=question["answer_path"])
    return run
