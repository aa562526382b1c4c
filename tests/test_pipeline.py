"""The chapter pipeline end to end: batches commit every chapter exactly once, the gate routes
chapters through revision, polish and a person's decision, a stale delta is rebuilt instead of
forced, LLM faults are retried and then parked in ERROR_RETRY without half a chapter, a crashed
worker's stored LLM call is reused, the reconciler wakes stuck runs, one project runs one chapter
at a time, and ``novel write`` drives it all from the command line.

Celery is eager here (no REDIS_URL): a stage enqueues the next on commit and the queueing
trampoline runs the whole batch inside the call that started it, so stage tests need
``django_db(transaction=True)``. Tests that drive stages by hand replace ``queueing._send`` with
``Wakeups``, which records the wake-ups instead of running them (the ``wakeups`` fixture,
tests/pipeline_fixtures.py).
"""
from __future__ import annotations

import io
import json
import re
import threading
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from pipeline.runtime import progress
from pipeline.runtime import queueing
from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.pause import chapter_pause_resolve
from pipeline.errors import PipelineBusy, PipelineNotReady
from pipeline.llm.offline.writers import WRITERS
from pipeline.models import GateAnswer, GateQuestion, GateStatus, LLMCall, PipelineRun, RunKind, RunStatus, StageRun
from pipeline.runtime.runner import stage_run
from pipeline.runtime.runs import chapter_run_start, run_retry, runs_reconcile
from pipeline.runtime.claims import stage_claim
from pipeline.tasks import stage_run_task
from projects.errors import InvalidData
from projects.json_validation import json_issues
from projects.models import (
    ArchivedSummary,
    ChangeSource,
    Chapter,
    ChapterContract,
    ChapterLog,
    ChapterSummary,
    Evaluation,
    OrchestratorState,
    PipelineStage,
    Project,
    StateChange,
    StoryState,
    Volume,
)
from projects.sample_project import sample_project_create
from projects.schemas import DEFAULT_SCORE_WEIGHTS, SCORE_DIMENSIONS
from projects.services.editing import story_object_create
from projects.services.story_state import story_state_apply_patch
from projects.state_ops import replay


pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]

LLM_STAGES = ["draft", "summarize", "refine", "judge"]
CHAPTERS_PER_VOLUME = 30
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
TRANSIENT_KINDS = ["rate_limit", "overloaded", "server_error", "timeout", "connection", "truncated", "malformed"]
# The offline backend draws its faults from the request's seed (project slug, chapter, stage,
# attempt), so the pattern is fixed: at rate 0.2, the demo project's chapters 1-5 fail at least one
# first attempt at each of these stages (draft would not), and never six times in a row.
FAULT_STAGE = {"rate_limit": "summarize", "overloaded": "refine", "server_error": "judge", "timeout": "summarize",
               "connection": "refine", "truncated": "judge", "malformed": "summarize"}
FAULT_ERROR = {"rate_limit": "LLMRateLimited", "overloaded": "LLMOverloaded", "server_error": "LLMServerError",
               "timeout": "LLMTimeout", "connection": "LLMConnectionError", "truncated": "LLMTruncatedStream",
               "malformed": "LLMBadOutput"}


# --- builders and helpers --------------------------------------------------------------------------


def contract_data(number: int) -> dict:
    return {
        "chapter": number, "storyline_id": "main-arc", "excitement_type": "setup",
        "preconditions": {"character_states": {"lin-feng": {"location": "北境雪原"}, "chen-lao": {}},
                          "required_world_rules": ["W-001"]},
        "objectives": [{"id": f"OBJ-{number}-1", "type": "plot", "required": True,
                        "description": f"推进第{number}章的主要冲突"}],
        "postconditions": {"state_changes": {"lin-feng": {"location": "幽暗森林"}}, "foreshadowing_updates": {}},
        "acceptance_criteria": ["林枫的行动符合其性格契约"],
    }


def outline_block(number: int) -> str:
    return "\n".join([f"### 第 {number} 章: 第{number}夜", "- **Storyline**: main-arc", "- **POV**: lin-feng",
                      "- **Location**: 幽暗森林", "- **Conflict**: 追兵逼近", "- **Arc**: 学会隐忍",
                      "- **Foreshadowing**: 无", "- **StateChanges**: lin-feng.location", "- **TransitionHint**: null",
                      ""])


def project_with_contracts(chapters: int, *, slug: str = "demo") -> Project:
    """The demo project (contracts for chapters 1-3) with valid contracts and outline blocks up to
    ``chapters``: 30 chapters a volume."""
    project = sample_project_create(slug=slug)
    for number in range(4, chapters + 1):
        volume_number = (number - 1) // CHAPTERS_PER_VOLUME + 1
        volume = Volume.objects.filter(project=project, number=volume_number).first()
        if volume is None:
            volume = story_object_create(instance=Volume(
                project=project, number=volume_number, title=f"第{volume_number}卷",
                outline=f"## 第 {volume_number} 卷大纲\n\n"), editor=None)
        Volume.objects.filter(pk=volume.pk).update(outline=volume.outline.rstrip("\n") + "\n\n" + outline_block(number))
        volume.refresh_from_db()
        story_object_create(instance=ChapterContract(project=project, volume=volume, chapter=number,
                                                     data=contract_data(number)), editor=None)
    project.refresh_from_db()
    return project


def stages_of(run: PipelineRun, status: str | None = None) -> list[str]:
    rows = StageRun.objects.filter(run=run).order_by("pk")
    if status is not None:
        rows = rows.filter(status=status)
    return list(rows.values_list("stage", flat=True))


def control(run: PipelineRun, key: str):
    run.refresh_from_db()
    return Blackboard(run.blackboard).as_("orchestrator").read_control(key)


def content(run: PipelineRun, zone: str, key: str):
    run.refresh_from_db()
    return Blackboard(run.blackboard).as_("skill").read_content(zone, key)


def story_rows(project: Project, chapter: int) -> dict[str, int]:
    return {"chapters": Chapter.objects.filter(project=project, number=chapter).count(),
            "summaries": ChapterSummary.objects.filter(project=project, chapter__number=chapter).count(),
            "evaluations": Evaluation.objects.filter(project=project, chapter__number=chapter).count(),
            "logs": ChapterLog.objects.filter(project=project, chapter__number=chapter).count(),
            "state_changes": StateChange.objects.filter(project=project, chapter=chapter).count()}


NO_ROWS = {"chapters": 0, "summaries": 0, "evaluations": 0, "logs": 0, "state_changes": 0}


@pytest.fixture
def draft_starts():
    """The project's revision_count each time a draft stage starts (progress events)."""
    seen: list[int] = []

    def listen(event):
        if event["event"] == "start" and event["stage"] == "draft":
            run = PipelineRun.objects.get(pk=event["run_id"])
            seen.append(Project.objects.get(pk=run.project_id).revision_count)

    with progress.listening(listen):
        yield seen


def offline(settings, **config) -> None:
    settings.NOVELSITE_OFFLINE = config


# --- 1. a batch ------------------------------------------------------------------------------------


def test_a_ten_chapter_batch_commits_each_chapter_once_with_its_records():
    project = project_with_contracts(12)
    assert StoryState.objects.get(project=project).state_version == 1
    first = chapter_run_start(project_id=project.pk, batch_remaining=9)

    project.refresh_from_db()
    assert (project.last_completed_chapter, project.pipeline_stage, project.inflight_chapter,
            project.orchestrator_state, project.revision_count) == (
        10, PipelineStage.COMMITTED, None, OrchestratorState.WRITING, 0)

    runs = list(PipelineRun.objects.filter(project=project).order_by("pk"))
    assert runs[0].pk == first.pk
    assert [r.chapter for r in runs] == list(range(1, 11))
    assert {r.status for r in runs} == {RunStatus.DONE}
    assert all(r.lease_owner == "" and r.finished_at for r in runs)

    chapters = list(Chapter.objects.filter(project=project).order_by("number"))
    assert [c.number for c in chapters] == list(range(1, 11))
    for chapter in chapters:
        assert len(chapter.text) > 1000 and chapter.title and chapter.word_count > 0
        assert chapter.summary.text.startswith(f"## 第 {chapter.number} 章摘要")
        assert chapter.evaluation.data["gate"]["decision"] == "pass"
        assert chapter.evaluation.overall >= 4
        log = chapter.log.data
        assert [s["name"] for s in log["stages"]] == LLM_STAGES
        assert all(s["input_tokens"] > 0 and s["output_tokens"] > 0 for s in log["stages"])
        assert log["gate_decision"] == "pass" and log["chapter"] == chapter.number

    # the story state moved once per chapter, and its changelog replays to the stored state
    state = StoryState.objects.get(project=project)
    assert state.state_version == 11 and state.data["state_version"] == 11
    changes = list(StateChange.objects.filter(project=project).order_by("state_version"))
    pipeline_changes = [c for c in changes if c.source == ChangeSource.PIPELINE]
    assert [c.chapter for c in pipeline_changes] == list(range(1, 11))
    assert [(c.base_state_version, c.state_version) for c in pipeline_changes] == [(v, v + 1) for v in range(1, 11)]
    assert replay([c.delta for c in changes]) == state.data

    # every stage paid for its call once: one stored call per LLM stage run, keys unique
    calls = LLMCall.objects.filter(run__project=project)
    keys = list(calls.values_list("call_key", flat=True))
    assert len(keys) == len(set(keys)) == 10 * len(LLM_STAGES) + 1  # + the memory consolidation
    for run in runs:
        # maintenance runs only when it has work: style drift every 5 chapters, the archive at 10
        maintained = run.chapter % 5 == 0
        assert stages_of(run) == [*LLM_STAGES, "commit", *(["maintain"] if maintained else [])]
        steps = Blackboard(run.blackboard).as_("orchestrator").read_control("step_status")
        assert steps["maintain"] == ("completed" if maintained else "skipped")
        for stage_run_row in StageRun.objects.filter(run=run, stage__in=LLM_STAGES):
            assert stage_run_row.status == "succeeded" and stage_run_row.llm_calls.count() == 1
            assert stage_run_row.receipt["reused_stored_output"] is False

    # seed 002: at chapter 10, latest - last archived = 10 -> the oldest 5 become one archive
    archives = list(ArchivedSummary.objects.filter(project=project).values_list(
        "level", "chapter_start", "chapter_end", "superseded"))
    assert archives == [("archive", 1, 5, False)]
    assert calls.filter(call_key__contains=":consolidate:").count() == 1


# --- 2. the gate -----------------------------------------------------------------------------------


def test_revise_scores_send_the_chapter_back_to_draft_then_force_pass_it(settings, backend_calls, draft_starts):
    offline(settings, score_mode="revise")  # every score 3: overall 3.0 -> revise
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)

    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert stages_of(run) == [*LLM_STAGES] * 3 + ["commit"]
    assert draft_starts == [0, 1, 2]  # revision_count went up with each revision

    # each revision really asked the writer again, with the judge's fixes, and was judged again
    drafts = [slice_ for stage, slice_ in backend_calls if stage == "draft"]
    assert len(drafts) == 3 and [s["required_fixes"] == [] for s in drafts] == [True, False, False]
    assert any("加快中段节奏" in fix for fix in drafts[1]["required_fixes"])
    assert [stage for stage, _ in backend_calls].count("judge") == 3
    draft_keys = list(LLMCall.objects.filter(run=run, call_key__contains=":draft:").values_list("call_key", flat=True))
    assert len(set(draft_keys)) == 3

    chapter = Chapter.objects.get(project=project, number=1)
    assert chapter.evaluation.data["gate"] == {"decision": "force_passed", "revisions": 2, "force_passed": True}
    assert chapter.evaluation.force_passed is True and chapter.evaluation.gate_decision == "force_passed"
    assert chapter.log.data["force_passed"] is True and chapter.log.data["revisions"] == 2
    project.refresh_from_db()
    assert (project.last_completed_chapter, project.revision_count, project.pipeline_stage) == (
        1, 0, PipelineStage.COMMITTED)


def test_polish_refines_once_more_and_commits_without_judging_again(monkeypatch, backend_calls):
    real_judge = WRITERS["judge"]

    def judge_3_point_something(slice_, rng):
        evaluation = json.loads(real_judge(slice_, rng)["evaluation"])
        heaviest = max(SCORE_DIMENSIONS, key=lambda dim: DEFAULT_SCORE_WEIGHTS[dim])
        for dim in SCORE_DIMENSIONS:
            evaluation["scores"][dim]["score"] = 3 if dim == heaviest else 4
        return {"evaluation": json.dumps(evaluation, ensure_ascii=False)}

    monkeypatch.setitem(WRITERS, "judge", judge_3_point_something)
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)

    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert stages_of(run) == ["draft", "summarize", "refine", "judge", "refine", "commit"]
    assert [stage for stage, _ in backend_calls].count("refine") == 2  # the polish pass asked again
    evaluation = Evaluation.objects.get(project=project, chapter__number=1)
    assert 3.5 <= evaluation.data["overall_final"] < 4.0
    assert evaluation.data["gate"]["decision"] == "polish" and evaluation.force_passed is False
    assert content(run, "gate", "polish_pending") is False


def _paused_chapter(settings, project: Project) -> tuple[PipelineRun, GateQuestion]:
    offline(settings, score_mode="low")  # scores 2-3: overall in [2, 3) -> a person decides
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()
    question = GateQuestion.objects.get(run=run)
    return run, question


def test_low_scores_stop_the_run_at_a_question_and_accept_commits(settings, make_user):
    project = project_with_contracts(3)
    run, question = _paused_chapter(settings, project)

    assert (run.status, run.stage) == (RunStatus.WAITING, "gate")
    assert content(run, "gate", "result")["decision"] == "pause_for_user"
    project.refresh_from_db()
    assert (project.pipeline_stage, project.inflight_chapter, project.last_completed_chapter) == (
        PipelineStage.JUDGED, 1, 0)
    assert story_rows(project, 1) == NO_ROWS
    assert runs_reconcile(stale_after_seconds=0) == []  # a waiting run is not "stuck"

    spec = question.spec
    assert question.status == GateStatus.OPEN and question.step == "chapter:001:review"
    assert question.answer_path == "staging/novel-ask/chapter-001-review.answers.json"
    assert json_issues("QUESTION_SPEC", spec) == []
    assert spec["version"] == 1 and spec["topic"] == question.topic == "chapter.001.judge_pause"
    decision = spec["questions"][0]
    assert (decision["id"], decision["kind"], decision["required"]) == ("decision", "single_choice", True)
    assert [o["label"] for o in decision["options"]] == ["accept", "revise", "rewrite"]
    assert decision["default"] in ("accept", "revise", "rewrite")
    with pytest.raises(PipelineBusy):  # the project waits for its person, not for another chapter
        chapter_run_start(project_id=project.pk)

    editor = make_user("editor")
    with pytest.raises(InvalidData):
        chapter_pause_resolve(question_id=question.pk, choice="publish", user=editor)
    assert not GateAnswer.objects.exists()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING

    answer = chapter_pause_resolve(question_id=question.pk, choice="accept", user=editor)

    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert stages_of(run) == [*LLM_STAGES, "commit"]
    assert answer.answered_by == editor
    assert json_issues("ANSWER_SPEC", answer.answer) == []
    assert answer.answer["answers"] == {"decision": "accept"}
    assert (answer.answer["version"], answer.answer["topic"], answer.answer["answered_by"]) == (
        1, question.topic, "editor")
    assert RFC3339.match(answer.answer["answered_at"]) and datetime.fromisoformat(answer.answer["answered_at"]).tzinfo
    question.refresh_from_db()
    assert question.status == GateStatus.ANSWERED
    evaluation = Evaluation.objects.get(project=project, chapter__number=1)
    assert evaluation.data["gate"]["decision"] == "force_passed" and evaluation.force_passed is True
    project.refresh_from_db()
    assert (project.last_completed_chapter, project.pipeline_stage) == (1, PipelineStage.COMMITTED)

    with pytest.raises(PipelineNotReady):
        chapter_pause_resolve(question_id=question.pk, choice="revise", user=editor)
    assert GateAnswer.objects.count() == 1


@pytest.mark.parametrize("choice", ["revise", "rewrite"])
def test_a_person_sends_a_paused_chapter_back_to_draft(settings, make_user, backend_calls, draft_starts, choice):
    project = project_with_contracts(3)
    run, question = _paused_chapter(settings, project)
    offline(settings)  # the rewritten chapter scores well
    notes = "结尾留一个悬念，陈老的身份先不要揭开"

    chapter_pause_resolve(question_id=question.pk, choice=choice, notes=notes, user=make_user("editor"))

    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert stages_of(run) == [*LLM_STAGES] * 2 + ["commit"]
    assert draft_starts == [0, 1]
    fixes = content(run, "revision", "required_fixes")
    assert fixes == ([notes] if choice == "revise" else ["整章重写：保留契约目标，换一种写法", notes])
    drafts = [slice_ for stage, slice_ in backend_calls if stage == "draft"]
    assert len(drafts) == 2 and drafts[1]["required_fixes"] == fixes
    assert GateAnswer.objects.get(question=question).answer["answers"] == {"decision": choice, "notes": notes}
    assert Chapter.objects.filter(project=project, number=1).count() == 1
    assert Evaluation.objects.get(project=project, chapter__number=1).data["gate"]["decision"] == "pass"


# --- 3. a stale delta ------------------------------------------------------------------------------


def test_a_state_change_between_summarize_and_commit_sends_the_run_back_to_summarize(wakeups, make_user):
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    assert wakeups.run_until("commit") == LLM_STAGES
    assert content(run, "summary", "delta")["base_state_version"] == 1

    # a person edits the state while the chapter waits to be committed
    story_state_apply_patch(project=project, source=ChangeSource.HUMAN, user=make_user("editor"), delta={
        "chapter": 0, "base_state_version": 1, "storyline_id": "main-arc",
        "ops": [{"op": "set", "path": "world_state.weather", "value": "大雪"}]})

    assert wakeups.step() == "commit"
    run.refresh_from_db()
    assert (run.status, run.stage) == (RunStatus.QUEUED, "summarize")
    assert wakeups.sent == [(run.pk, "summarize")]
    errors = control(run, "errors")
    assert [(e["step_id"], e["error_type"]) for e in errors] == [("commit", "stale_state_version")]
    assert story_rows(project, 1) == NO_ROWS
    project.refresh_from_db()
    assert (project.last_completed_chapter, project.inflight_chapter, project.pipeline_stage) == (
        0, 1, PipelineStage.DRAFTING)
    assert StoryState.objects.get(project=project).state_version == 2

    assert wakeups.drain() == ["summarize", "refine", "judge", "commit"]
    assert content(run, "summary", "delta")["base_state_version"] == 2  # rebuilt on the new state
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and wakeups.sent == []
    assert story_rows(project, 1) == {k: 1 for k in NO_ROWS}
    state = StoryState.objects.get(project=project)
    assert state.state_version == 3 and state.data["world_state"]["weather"] == "大雪"
    change = StateChange.objects.get(project=project, chapter=1)
    assert (change.base_state_version, change.state_version, change.source) == (2, 3, ChangeSource.PIPELINE)
    assert replay([c.delta for c in StateChange.objects.filter(project=project).order_by("state_version")]) == \
        state.data
    summarize_calls = LLMCall.objects.filter(run=run, call_key__contains=":summarize:")
    assert summarize_calls.values("call_key").distinct().count() == 2  # the second summary was asked for, not replayed


def test_the_story_is_read_once_per_draft_and_the_later_stages_reuse_it(wakeups, monkeypatch):
    from pipeline.runtime import runner as stage_runner

    reads = []
    real = stage_runner.chapter_context
    monkeypatch.setattr(stage_runner, "chapter_context", lambda project, chapter: reads.append(chapter) or
                        real(project, chapter))
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    wakeups.run_until("refine")
    run.refresh_from_db()
    assert (run.context["chapter"], run.context["state_version"]) == (1, 1)
    assert "lin-feng" in [member["slug"] for member in run.context["cast"]]

    PipelineRun.objects.filter(pk=run.pk).update(context={"v": -1})  # kept by an older release: re-read
    wakeups.drain()
    assert reads == [1, 1]
    assert story_rows(project, 1) == {k: 1 for k in NO_ROWS}


# --- 4. LLM faults ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", TRANSIENT_KINDS)
def test_occasional_transient_faults_are_retried_and_the_batch_completes(settings, kind):
    stage = FAULT_STAGE[kind]
    offline(settings, faults={stage: {"kind": kind, "rate": 0.2}})
    project = project_with_contracts(5)
    chapter_run_start(project_id=project.pk, batch_remaining=4)

    project.refresh_from_db()
    assert (project.last_completed_chapter, project.orchestrator_state) == (5, OrchestratorState.WRITING)
    assert Chapter.objects.filter(project=project).count() == 5
    runs = list(PipelineRun.objects.filter(project=project))
    assert {r.status for r in runs} == {RunStatus.DONE}
    failed = StageRun.objects.filter(run__project=project, status="failed")
    assert failed.count() >= 1 and set(failed.values_list("stage", flat=True)) == {stage}
    retries = sum((control(r, "retries") or {}).get(stage, 0) for r in runs)
    assert retries == failed.count()
    for run in runs:
        assert control(run, "error_retry") is None
        assert len(control(run, "errors") or []) == (control(run, "retries") or {}).get(stage, 0)


@pytest.mark.parametrize("kind", TRANSIENT_KINDS)
def test_persistent_transient_faults_park_the_run_in_error_retry_until_retried(settings, kind):
    stage = FAULT_STAGE[kind]
    offline(settings, faults={stage: {"kind": kind, "rate": 1.0}})
    project = project_with_contracts(3)
    state_before = StoryState.objects.get(project=project).data
    run = chapter_run_start(project_id=project.pk, batch_remaining=1)  # returns: the error is on the run

    run.refresh_from_db()
    assert (run.status, run.stage) == (RunStatus.ERROR, stage)
    attempts = 1 + stage_run_task.max_retries
    assert stages_of(run, "failed") == [stage] * attempts
    assert control(run, "retries") == {stage: attempts}
    assert run.error.startswith(f"{FAULT_ERROR[kind]}: {stage}: ")
    assert control(run, "error_retry")["stage"] == stage and control(run, "error_retry")["error"] == run.error
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.ERROR_RETRY
    assert (project.last_completed_chapter, project.inflight_chapter) == (0, 1)
    assert story_rows(project, 1) == NO_ROWS  # nothing of the chapter reached the story
    assert StoryState.objects.get(project=project).data == state_before
    with pytest.raises(PipelineBusy):
        chapter_run_start(project_id=project.pk)

    offline(settings)  # the provider recovered
    run_retry(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    retried = StageRun.objects.filter(run=run, stage=stage, status="succeeded").get()
    assert retried.attempt == attempts + 1 and retried.receipt["reused_stored_output"] is False
    project.refresh_from_db()
    assert (project.last_completed_chapter, project.orchestrator_state) == (2, OrchestratorState.WRITING)
    assert story_rows(project, 1) == {k: 1 for k in NO_ROWS}  # and the batch went on with chapter 2
    assert story_rows(project, 2) == {k: 1 for k in NO_ROWS}


def test_a_permanent_error_stops_the_run_without_retrying(settings):
    offline(settings, faults={"draft": {"kind": "permanent", "rate": 1.0}})
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)

    run.refresh_from_db()
    assert (run.status, run.stage) == (RunStatus.ERROR, "draft")
    assert stages_of(run) == ["draft"] and stages_of(run, "failed") == ["draft"]
    assert run.error.startswith("LLMPermanentError")
    assert control(run, "error_retry")["error"] == run.error
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.ERROR_RETRY
    assert story_rows(project, 1) == NO_ROWS

    offline(settings)
    run_retry(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and Chapter.objects.filter(project=project, number=1).exists()


# --- 5. idempotency --------------------------------------------------------------------------------


def test_a_stage_that_already_advanced_does_nothing_when_run_again(backend_calls):
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    counts = (StageRun.objects.count(), LLMCall.objects.count(), len(backend_calls),
              StateChange.objects.count(), Chapter.objects.count())

    for stage in [*LLM_STAGES, "commit", "maintain"]:
        stage_run(run_id=run.pk, stage=stage)  # a redelivered message
        stage_run_task.apply(kwargs={"run_id": run.pk, "stage": stage})

    assert (StageRun.objects.count(), LLMCall.objects.count(), len(backend_calls),
            StateChange.objects.count(), Chapter.objects.count()) == counts
    project.refresh_from_db()
    assert project.last_completed_chapter == 1


def completion_raising_once(monkeypatch, error: BaseException) -> None:
    """The next stage's completion raises ``error`` after its LLM calls are stored; later ones work."""
    from pipeline.runtime import runner as stage_runner

    real_complete = stage_runner.stage_complete

    def raise_once(**kwargs):
        monkeypatch.setattr(stage_runner, "stage_complete", real_complete)
        raise error

    monkeypatch.setattr(stage_runner, "stage_complete", raise_once)


def test_a_worker_dying_after_its_llm_call_is_resumed_from_the_stored_call(monkeypatch, wakeups, backend_calls):
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    completion_raising_once(monkeypatch, KeyboardInterrupt("worker killed"))  # a BaseException: nothing is recorded
    with pytest.raises(KeyboardInterrupt):
        wakeups.step()

    run.refresh_from_db()
    assert (run.status, run.stage) == (RunStatus.RUNNING, "draft") and run.lease_owner
    assert stages_of(run, "running") == ["draft"]
    assert [stage for stage, _ in backend_calls] == ["draft"]
    stored = LLMCall.objects.get(run=run)
    assert stored.call_key == f"run{run.pk}:draft:1:1"

    assert runs_reconcile() == []  # its lease still holds: maybe the worker is only slow
    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert runs_reconcile() == [run.pk]
    assert wakeups.sent == [(run.pk, "draft")]

    assert wakeups.step() == "draft"
    assert [stage for stage, _ in backend_calls] == ["draft"]  # not paid for twice
    assert LLMCall.objects.filter(run=run).count() == 1
    resumed = StageRun.objects.filter(run=run, stage="draft", status="succeeded").get()
    assert resumed.attempt == 1 and resumed.receipt["reused_stored_output"] is True
    assert resumed.output_tokens == stored.usage["output_tokens"]

    wakeups.live = True
    queueing._send(*wakeups.sent.pop())
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    assert [stage for stage, _ in backend_calls] == LLM_STAGES
    chapter = Chapter.objects.get(project=project, number=1)
    assert content(run, "chapter", "draft") in stored.output_text
    assert chapter.log.data["stages"][0]["name"] == "draft"



def test_a_database_error_after_the_llm_call_is_retried_with_the_stored_call(monkeypatch, wakeups, backend_calls):
    from django.db import OperationalError

    from pipeline.runtime import runner as stage_runner

    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    completion_raising_once(monkeypatch, OperationalError("deadlock detected"))
    with pytest.raises(OperationalError):  # the task retries it (Celery's autoretry, in a worker)
        wakeups.step()

    run.refresh_from_db()
    # recorded, and the lease released at once: the retry has no lease to wait for
    assert (run.status, run.stage, run.lease_owner) == (RunStatus.QUEUED, "draft", "")
    assert run.error == "OperationalError: deadlock detected"
    # the attempt is not over, as a dead worker's is not: its stored call stays usable
    assert stages_of(run, "running") == ["draft"]
    assert LLMCall.objects.filter(run=run).count() == 1

    stage_runner.stage_run(run_id=run.pk, stage="draft")  # the retry
    assert [stage for stage, _ in backend_calls] == ["draft"]  # not paid for twice
    assert list(StageRun.objects.filter(run=run, stage="draft").order_by("pk").values_list(
        "status", "attempt", "error")) == [("abandoned", 1, "OperationalError: deadlock detected"),
                                          ("succeeded", 1, "")]
    assert wakeups.sent == [(run.pk, "summarize")]


def test_database_errors_until_the_retries_are_spent_end_the_attempt_and_a_retry_starts_anew(monkeypatch, wakeups,
                                                                                                backend_calls):
    from django.db import OperationalError

    from pipeline.runtime import runner as stage_runner

    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    real_complete = stage_runner.stage_complete

    def deadlock(**kwargs):
        raise OperationalError("deadlock detected")

    monkeypatch.setattr(stage_runner, "stage_complete", deadlock)
    with pytest.raises(OperationalError):
        wakeups.step()
    # the task's retries are spent: its failure handler stops the run
    stage_runner.stage_run_failed(run_id=run.pk, stage="draft", error=OperationalError("deadlock detected"))
    run.refresh_from_db()
    assert run.status == RunStatus.ERROR
    assert list(StageRun.objects.filter(run=run).values_list("status", "attempt")) == [("failed", 1)]

    # a person's retry is a new attempt, with a new answer stored under a new key
    monkeypatch.setattr(stage_runner, "stage_complete", real_complete)
    run_retry(run_id=run.pk)
    assert wakeups.step() == "draft"
    assert list(StageRun.objects.filter(run=run).order_by("pk").values_list("status", "attempt")) == [
        ("failed", 1), ("succeeded", 2)]
    assert sorted(LLMCall.objects.filter(run=run).values_list("call_key", flat=True)) == [
        f"run{run.pk}:draft:1:1", f"run{run.pk}:draft:2:1"]
    assert [stage for stage, _ in backend_calls] == ["draft", "draft"]

# --- 6. the reconciler -----------------------------------------------------------------------------


def test_the_reconciler_wakes_runs_with_an_expired_lease_or_a_lost_message(wakeups):
    projects = {name: project_with_contracts(3, slug=name) for name in ("dead", "lost", "busy", "fresh")}
    runs = {name: chapter_run_start(project_id=p.pk) for name, p in projects.items()}
    wakeups.sent.clear()  # those messages were lost
    assert stage_claim(run_id=runs["dead"].pk, stage="draft", owner="worker-a:1")
    assert stage_claim(run_id=runs["busy"].pk, stage="draft", owner="worker-b:1")
    past = timezone.now() - timedelta(hours=1)
    PipelineRun.objects.filter(pk=runs["dead"].pk).update(lease_expires_at=past)
    PipelineRun.objects.filter(pk=runs["lost"].pk).update(updated_at=past)

    woken = runs_reconcile(stale_after_seconds=600)

    assert sorted(woken) == sorted([runs["dead"].pk, runs["lost"].pk])
    assert sorted(wakeups.sent) == sorted([(runs["dead"].pk, "draft"), (runs["lost"].pk, "draft")])
    # the healthy lease keeps its stage: a wake-up for it finds nothing to do
    before = StageRun.objects.filter(run=runs["busy"]).count()
    stage_run(run_id=runs["busy"].pk, stage="draft")
    assert StageRun.objects.filter(run=runs["busy"]).count() == before
    # the expired one is taken over and moves on
    stage_run(run_id=runs["dead"].pk, stage="draft")
    dead = PipelineRun.objects.get(pk=runs["dead"].pk)
    assert (dead.stage, dead.status) == ("summarize", RunStatus.QUEUED)


# --- 7. one chapter at a time ----------------------------------------------------------------------


@pytest.mark.postgres
def test_two_concurrent_starts_create_one_run(wakeups):
    project = project_with_contracts(3)
    for _round in range(3):
        barrier, outcomes = threading.Barrier(2), []

        def start():
            try:
                barrier.wait(timeout=10)
                outcomes.append(chapter_run_start(project_id=project.pk))
            except PipelineBusy as exc:
                outcomes.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)

        assert sorted(type(o).__name__ for o in outcomes) == ["PipelineBusy", "PipelineRun"]
        active = PipelineRun.objects.filter(project=project, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        assert active.count() == 1
        PipelineRun.objects.filter(pk=active.get().pk).update(status=RunStatus.CANCELLED)
    assert len(wakeups.sent) == 3


def test_the_database_refuses_a_second_active_run(wakeups):
    project = project_with_contracts(3)
    chapter_run_start(project_id=project.pk)
    with pytest.raises(IntegrityError), transaction.atomic():
        PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=1, status=RunStatus.WAITING,
                                   stage="draft")
    # beside it: finished runs and promotion posts
    PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=1, status=RunStatus.DONE)
    PipelineRun.objects.create(project=project, kind=RunKind.PROMOTION, status=RunStatus.QUEUED)
    assert PipelineRun.objects.filter(project=project).count() == 3


# --- 8. the command line ---------------------------------------------------------------------------


def test_novel_write_writes_chapters_and_shows_progress():
    project = project_with_contracts(3)
    out = io.StringIO()
    call_command("novel", "write", project.slug, "--chapters", "2", stdout=out)

    lines = out.getvalue().splitlines()
    for number in (1, 2):
        for label in ("起草", "摘要", "润色", "评审", "提交"):
            assert f"  第{number}章 {label} …" in lines
        assert any(line.startswith(f"  第{number}章 起草 done") for line in lines)
        assert f"  第{number}章 评审 done → commit" in lines
    assert any(re.fullmatch(r"    \[[#-]{20}\] \d+ chars", line) for line in lines)
    assert lines[-1] == "Wrote 2 of 2 chapter(s); last completed chapter 2."
    assert Chapter.objects.filter(project=project).count() == 2


def test_novel_write_json_prints_the_envelope():
    project = project_with_contracts(3)
    out = io.StringIO()
    call_command("novel", "--json", "write", project.slug, "--chapters", "2", stdout=out)

    envelope = json.loads(out.getvalue())
    assert envelope == {"ok": True, "command": "write", "data": {
        "project": project.slug, "written": 2, "last_completed_chapter": 2, "waiting": [], "errors": []}}


@pytest.mark.django_db(transaction=True)
def test_a_volume_end_folds_its_memory_into_one_volume_summary():
    """At the last chapter of volume 1 the archives of that volume (including the one made in the
    same maintenance step) are superseded by one volume summary, so later prompts carry one entry
    for the whole volume."""
    from projects.models import ArchivedSummary

    project = project_with_contracts(31)
    chapter_run_start(project_id=project.pk, batch_remaining=29)
    live = list(ArchivedSummary.objects.filter(project=project, superseded=False).values_list(
        "level", "chapter_start", "chapter_end"))
    assert live == [("volume", 1, 30)]
    assert ArchivedSummary.objects.filter(project=project, level="archive", superseded=True).count() == 5
    keys = list(LLMCall.objects.filter(call_key__contains=":consolidate:").values_list("call_key", flat=True))
    assert len(keys) == len(set(keys)) and any(k.endswith("volume-1-30") for k in keys)


def test_the_text_being_written_reaches_the_cache_for_the_live_progress(wakeups):
    from django.core.cache import cache

    from pipeline.runtime.progress import progress_cache_key

    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    seen = []
    with progress.listening(lambda event: seen.append(cache.get(progress_cache_key(project.pk)))):
        wakeups.step()  # the draft, streamed in chunks
    drafting = [entry for entry in seen if entry and entry["stage"] == "draft" and entry["tail"]]
    assert drafting, seen
    draft = content(run, "chapter", "draft")
    assert drafting[-1]["tail"].strip()[-50:] in draft
    assert max(entry["chars"] for entry in drafting) > 300


def test_a_batch_started_by_hand_stops_before_its_next_chapter_once_the_days_budget_is_spent():
    """pipeline/nightly/spending.py: the cap of work started by hand is a threshold, like the nightly one: the
    chapter under way is committed, the next one is not started."""
    project = project_with_contracts(5)
    Project.objects.filter(pk=project.pk).update(manual_cost_cap_usd=Decimal("0.00"))

    chapter_run_start(project_id=project.pk, batch_remaining=3)

    project.refresh_from_db()
    assert project.last_completed_chapter == 1
    assert list(PipelineRun.objects.filter(project=project).values_list("chapter", "status")) == [(1, RunStatus.DONE)]


def test_the_demo_runs_twice_in_a_row_like_make_demo():
    """``make demo`` = ``novel demo --reset`` then ``novel write demo --chapters 3``, twice."""
    for _ in range(2):
        call_command("novel", "demo", "--reset", stdout=io.StringIO())
        call_command("novel", "write", "demo", "--chapters", "3", stdout=io.StringIO())
        project = Project.objects.get(slug="demo")
        assert project.last_completed_chapter == 3
    assert Project.objects.filter(slug="demo").count() == 1
