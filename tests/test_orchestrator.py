"""The whole book: from a brief through the quick start, volume 1's planning (approved through the
gate API), 30 chapters, the volume review and volume 2's planning, with every state transition
recorded; and the state machine's routing (``novel next``) at each point.

Eager Celery (no broker): each step enqueues the next on commit and the trampoline runs them in
the call that started them, so ``django_db(transaction=True)``.
"""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from pipeline.errors import PipelineNotReady
from pipeline.questions.answers import gate_answer_submit
from pipeline.models import GateAnswer, GateQuestion, GateStatus, PipelineRun, RunKind, RunStatus, StateTransition
from pipeline.book.orchestrator import advance, next_step
from pipeline.runtime.runs import chapter_run_start
from projects.errors import InvalidData
from projects.models import (
    Character,
    Chapter,
    ChapterContract,
    ExtraFile,
    OrchestratorState,
    Project,
    StateChange,
    Storyline,
    Volume,
    VolumeStateSnapshot,
    WorldDoc,
    WorldRule,
)
from projects.services.projects import membership_set_role, project_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]

BRIEF = "北境少年林枫在雪原上救下一位神秘老人，卷入星火宗覆灭的旧案，一路南下追查预言的真相。"


@pytest.fixture
def team(make_user):
    owner, reviewer, viewer = make_user("owner"), make_user("reviewer"), make_user("viewer")
    project = project_create(owner=owner, slug="snow", title="雪原长夜", brief=BRIEF)
    membership_set_role(project=project, user=reviewer, role="reviewer")
    membership_set_role(project=project, user=viewer, role="viewer")
    return project, owner, reviewer, viewer


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def state(project: Project) -> str:
    project.refresh_from_db()
    return project.orchestrator_state


def open_question(project: Project) -> GateQuestion:
    return GateQuestion.objects.get(project=project, status=GateStatus.OPEN)


def test_a_book_from_brief_to_the_second_volume(team):
    project, owner, reviewer, viewer = team
    assert next_step(project).step == "quickstart:world"

    # QUICK_START stops at the platform/genre question first
    run = advance(project_id=project.pk, user=owner, step="quickstart:world")
    assert (run.kind, run.status) == (RunKind.QUICKSTART, RunStatus.WAITING)
    assert state(project) == OrchestratorState.QUICK_START
    question = open_question(project)
    assert question.topic == "init.platform_binding"
    upcoming = next_step(project)
    assert (upcoming.step, upcoming.action, upcoming.question_id) == ("quickstart:world", "answer_gate", question.pk)

    # a viewer may not answer; a reviewer may, and the six steps run
    url = f"/api/projects/snow/gates/{question.pk}/answer"
    assert api(viewer).post(url, {"answers": {"platform": "qidian", "genre": "xuanhuan"}},
                            format="json").status_code == 403
    response = api(reviewer).post(url, {"answers": {"platform": "qidian", "genre": "xuanhuan"}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["next"]["step"] == "volume:outline"
    project.refresh_from_db()
    assert (project.orchestrator_state, project.target_platform, project.genre) == (
        OrchestratorState.VOL_PLANNING, "qidian", "xuanhuan")
    # the platform answer binds qidian's profile and the genre its drive type (issue #17 §1)
    assert project.platform_profile["platform"] == "qidian" and project.genre_drive_type == "plot"
    assert WorldRule.objects.filter(project=project).count() >= 1
    assert WorldDoc.objects.filter(project=project).count() == 3
    assert Storyline.objects.filter(project=project, type="main_arc").count() == 1
    assert Character.objects.filter(project=project).count() >= 1
    assert project.style_profile["source_type"] == "template"
    assert list(ChapterContract.objects.filter(project=project).values_list("chapter", flat=True)) == [1, 2, 3]
    assert ExtraFile.objects.filter(project=project, path="logs/quickstart/trial-chapter.md").exists()
    assert Chapter.objects.filter(project=project).count() == 0  # the trial chapter is not chapter 1 (facts §5)

    # VOL_PLANNING: volume 1 is planned from chapter 4 (the F0 seed holds 1-3) and waits for approval
    upcoming = next_step(project)
    assert upcoming.evidence["plan_range"] == [4, 30] and upcoming.evidence["volume_plan_seed_range"] == [1, 3]
    plan_run = advance(project_id=project.pk, user=owner, step="volume:outline")
    plan_run.refresh_from_db()
    assert (plan_run.kind, plan_run.status, plan_run.stage) == (RunKind.PLAN, RunStatus.WAITING, "volume:validate")
    question = open_question(project)
    assert question.topic == "volume.01.plan_approval"
    project.refresh_from_db()
    assert project.volume_pipeline_stage == "validate"
    staged = plan_run.blackboard["content"]["staged_files"]
    assert "volumes/vol-01/outline.md" in staged and "volumes/vol-01/chapter-contracts/chapter-030.json" in staged
    response = api(reviewer).post(f"/api/projects/snow/gates/{question.pk}/answer",
                                  {"answers": {"decision": "approve"}}, format="json")
    assert response.status_code == 200, response.json()
    project.refresh_from_db()
    assert (project.orchestrator_state, project.last_committed_volume, project.volume_pipeline_stage) == (
        OrchestratorState.WRITING, 1, None)
    assert ChapterContract.objects.filter(project=project).count() == 30
    outline = Volume.objects.get(project=project, number=1).outline
    assert "### 第 1 章" in outline and "### 第 30 章" in outline  # the seed's blocks stay, the new ones follow

    # WRITING: 30 chapters in one batch
    assert next_step(project).step == "chapter:001:draft"
    chapter_run_start(project_id=project.pk, user=owner, batch_remaining=29)
    project.refresh_from_db()
    assert project.last_completed_chapter == 30
    assert Chapter.objects.filter(project=project).count() == 30
    assert StateChange.objects.filter(project=project, chapter__gte=1).count() == 30

    # the volume's end routes to VOL_REVIEW, which ends in VOL_PLANNING for volume 2
    upcoming = next_step(project)
    assert (upcoming.step, upcoming.reason) == ("review:collect", "volume_end:vol-01:chapter-030")
    review_run = advance(project_id=project.pk, user=owner)
    review_run.refresh_from_db()
    assert review_run.status == RunStatus.DONE
    project.refresh_from_db()
    assert (project.orchestrator_state, project.current_volume) == (OrchestratorState.VOL_PLANNING, 2)
    volume = Volume.objects.get(project=project, number=1)
    assert volume.status == "closed" and volume.review.startswith("# 第 1 卷回顾")
    assert VolumeStateSnapshot.objects.get(project=project, volume_number=1).data["last_updated_chapter"] == 30

    # volume 2: regenerate once with notes, then approve; its newcomer is woven in
    upcoming = next_step(project)
    assert upcoming.evidence["plan_range"] == [31, 60]
    advance(project_id=project.pk, user=owner, step="volume:outline")
    first = open_question(project)
    gate_answer_submit(question_id=first.pk, user=reviewer,
                       answers={"decision": "regenerate", "notes": "第二卷要更早引出南方港口"})
    second = open_question(project)
    assert second.pk != first.pk
    run = PipelineRun.objects.get(project=project, kind=RunKind.PLAN, status=RunStatus.WAITING)
    assert run.blackboard["content"]["book"]["notes"] == "第二卷要更早引出南方港口"
    gate_answer_submit(question_id=second.pk, user=reviewer, answers={"decision": "approve"})
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.WRITING and project.last_committed_volume == 2
    assert ChapterContract.objects.filter(project=project, chapter__range=(31, 60)).count() == 30
    assert Character.objects.filter(project=project, display_name="第2卷来客").exists()
    assert next_step(project).step == "chapter:031:draft"

    # every move of the state machine was recorded, in order, with its cause
    moves = list(StateTransition.objects.filter(project=project).values_list("from_state", "to_state"))
    assert moves == [("INIT", "QUICK_START"), ("QUICK_START", "VOL_PLANNING"), ("VOL_PLANNING", "WRITING"),
                     ("WRITING", "VOL_REVIEW"), ("VOL_REVIEW", "VOL_PLANNING"), ("VOL_PLANNING", "WRITING")]
    first_move = StateTransition.objects.filter(project=project).first()
    assert first_move.actor == owner and first_move.run is not None and first_move.reason


def test_answers_are_checked_against_the_question_and_nothing_is_stored_when_wrong(team):
    project, owner, reviewer, _viewer = team
    advance(project_id=project.pk, user=owner)
    question = open_question(project)
    client = api(reviewer)
    url = f"/api/projects/snow/gates/{question.pk}/answer"
    for answers in ({}, {"platform": "qidian"}, {"platform": "qidian", "genre": ["a", "a"]},
                    {"platform": "", "genre": "xuanhuan"}, {"Platform": "qidian", "genre": "x"}, "qidian", None):
        response = client.post(url, {"answers": answers}, format="json")
        assert response.status_code == 400, (answers, response.json())
        assert response.json()["code"] in ("invalid", "invalid_input", "parse_error")
    assert GateAnswer.objects.count() == 0 and open_question(project).pk == question.pk
    assert client.post("/api/projects/snow/gates/999999/answer", {"answers": {}}, format="json").status_code == 404
    # allow_other: a platform that is not among the options is accepted
    assert client.post(url, {"answers": {"platform": "zongheng", "genre": "wuxia"}}, format="json").status_code == 200
    answer = GateAnswer.objects.get()
    assert answer.answered_by == reviewer and answer.answer["answered_by"] == "reviewer"
    assert client.post(url, {"answers": {"platform": "qidian", "genre": "x"}}, format="json").status_code == 409


def test_a_plan_with_a_broken_rule_cannot_be_approved(team):
    from pipeline.book.plan import volume_plan_edit

    project, owner, reviewer, _viewer = team
    advance(project_id=project.pk, user=owner)
    gate_answer_submit(question_id=open_question(project).pk, user=reviewer,
                       answers={"platform": "qidian", "genre": "xuanhuan"})
    run = advance(project_id=project.pk, user=owner)
    run.refresh_from_db()
    plan = run.blackboard["content"]["book"]["plan"]
    broken = {**plan["contracts"], "7": {**plan["contracts"]["7"], "objectives": []}}
    with pytest.raises(InvalidData, match="chapter-007"):
        volume_plan_edit(run_id=run.pk, plan={"contracts": broken}, user=owner)
    without_block = plan["outline"].replace("### 第 9 章", "### 第 99 章")
    with pytest.raises(InvalidData):
        volume_plan_edit(run_id=run.pk, plan={"outline": without_block}, user=owner)
    # a valid edit replaces the staged plan; the earlier version stays in the history (for a diff)
    edited = plan["outline"].replace("- **Conflict**:", "- **Conflict**: 改", 1)
    volume_plan_edit(run_id=run.pk, plan={"outline": edited}, user=owner)
    run.refresh_from_db()
    assert run.blackboard["content"]["book"]["plan"]["outline"] == edited
    assert run.blackboard["history"]["book.plan"][-1]["value"]["outline"] == plan["outline"]
    gate_answer_submit(question_id=open_question(project).pk, user=reviewer, answers={"decision": "approve"})
    assert Volume.objects.get(project=project, number=1).outline.count("- **Conflict**: 改") == 1


def test_the_router_sends_a_written_out_volume_to_planning_and_refuses_the_wrong_step(sample_project):
    project = sample_project  # volume 1 planned for chapters 1-3 only
    assert next_step(project).step == "chapter:001:draft"
    with pytest.raises(PipelineNotReady, match="the next step is chapter:001:draft"):
        advance(project_id=project.pk, step="volume:outline")
    Project.objects.filter(pk=project.pk).update(last_completed_chapter=3)
    project.refresh_from_db()
    upcoming = next_step(project)  # the planned chapters are written, the volume is not: plan the rest
    assert (upcoming.step, upcoming.action, upcoming.evidence["plan_range"]) == \
        ("volume:outline", "start_plan", [4, 30])
    assert upcoming.reason == "no_plan:chapter-004:vol-01"


def test_error_retry_without_a_run_heals_the_checkpoint(sample_project):
    project = sample_project
    Project.objects.filter(pk=project.pk).update(orchestrator_state=OrchestratorState.ERROR_RETRY, inflight_chapter=1,
                                                 pipeline_stage="committed")
    project.refresh_from_db()
    upcoming = next_step(project)
    assert upcoming.reason.startswith("error_retry:healed_drop_inflight:") and upcoming.step == "chapter:001:draft"
    run = advance(project_id=project.pk)
    assert run.kind == RunKind.CHAPTER
    project.refresh_from_db()
    assert project.last_completed_chapter == 1 and project.orchestrator_state == OrchestratorState.WRITING
    assert StateTransition.objects.filter(project=project, from_state="ERROR_RETRY", to_state="WRITING").exists()


def test_novel_next_and_advance_on_the_command_line(team, capsys):
    project, *_ = team
    call_command("novel", "--json", "next", "snow")
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is True and data["data"]["step"] == "quickstart:world"
    call_command("novel", "--json", "advance", "snow", "quickstart:world")
    data = json.loads(capsys.readouterr().out)
    assert data["data"]["next"]["action"] == "answer_gate"
    with pytest.raises(SystemExit):
        call_command("novel", "--json", "advance", "snow", "volume:outline")
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["error"]["code"] == "pipeline_not_ready"


# --- CHAPTER_REWRITE -------------------------------------------------------------------------------


def _written(chapters: int, written: int) -> Project:
    from tests.test_pipeline import project_with_contracts

    project = project_with_contracts(chapters)
    chapter_run_start(project_id=project.pk, batch_remaining=written - 1)
    project.refresh_from_db()
    assert project.last_completed_chapter == written
    return project


def _changelog(project: Project) -> list[tuple[int, int, int]]:
    return list(StateChange.objects.filter(project=project).order_by("state_version").values_list(
        "base_state_version", "state_version", "chapter"))


def test_rewriting_the_latest_chapter_rolls_its_delta_back_and_writes_it_again(make_user):
    from pipeline.book.rewrite import chapter_rewrite_start
    from projects.models import StoryState
    from projects.state_ops import replay

    editor = make_user("editor")
    project = _written(5, 3)
    before_log, before_version = _changelog(project), StoryState.objects.get(project=project).state_version
    old = Chapter.objects.get(project=project, number=3)

    run = chapter_rewrite_start(project_id=project.pk, chapter=3, notes="结尾改成雪夜里的追逐", user=editor)
    run.refresh_from_db()
    assert run.kind == RunKind.CHAPTER and run.status == RunStatus.DONE
    assert run.blackboard["content"]["revision"]["required_fixes"] == ["结尾改成雪夜里的追逐"]
    project.refresh_from_db()
    assert (project.orchestrator_state, project.last_completed_chapter) == (OrchestratorState.WRITING, 3)
    state = StoryState.objects.get(project=project)
    assert state.state_version == before_version  # exact: no version lost or added
    assert _changelog(project) == before_log
    assert replay([c.delta for c in StateChange.objects.filter(project=project).order_by("state_version")]) == \
        state.data
    new = Chapter.objects.get(project=project, number=3)
    assert new.pk != old.pk and Chapter.objects.filter(project=project).count() == 3
    moves = list(StateTransition.objects.filter(project=project).values_list("from_state", "to_state", "actor"))
    assert moves[-2:] == [("WRITING", "CHAPTER_REWRITE", editor.pk), ("CHAPTER_REWRITE", "WRITING", None)]


def test_an_older_chapter_gets_a_text_only_revision_that_keeps_the_state(make_user):
    from pipeline.book.rewrite import chapter_rewrite_start
    from projects.models import ChapterSummary, StoryState

    editor = make_user("editor")
    project = _written(5, 3)
    before_log, state_before = _changelog(project), StoryState.objects.get(project=project).data
    chapter, summary = Chapter.objects.get(project=project, number=2), ChapterSummary.objects.get(chapter__number=2,
                                                                                                  project=project)
    run = chapter_rewrite_start(project_id=project.pk, chapter=2, notes="对话再紧凑些", user=editor)
    run.refresh_from_db()
    assert (run.kind, run.status) == (RunKind.REWRITE, RunStatus.DONE)
    revised = Chapter.objects.get(pk=chapter.pk)
    assert revised.version == chapter.version + 1 and revised.history.first().history_user == editor
    assert ChapterSummary.objects.get(pk=summary.pk).text == summary.text
    assert _changelog(project) == before_log and StoryState.objects.get(project=project).data == state_before
    project.refresh_from_db()
    assert (project.orchestrator_state, project.inflight_chapter) == (OrchestratorState.WRITING, None)


def test_a_latest_chapter_whose_state_was_edited_since_is_revised_text_only(make_user):
    from pipeline.book.rewrite import chapter_rewrite_start
    from projects.models import ChangeSource, StoryState
    from projects.services.story_state import story_state_apply_patch

    editor = make_user("editor")
    project = _written(5, 2)
    version = StoryState.objects.get(project=project).state_version
    story_state_apply_patch(project=project, source=ChangeSource.HUMAN, user=editor, delta={
        "chapter": 2, "base_state_version": version, "storyline_id": "main-arc",
        "ops": [{"op": "set", "path": "world_state.weather", "value": "大雪"}]})
    run = chapter_rewrite_start(project_id=project.pk, chapter=2, notes="节奏放慢", user=editor)
    assert run.kind == RunKind.REWRITE
    assert "not the last change" in run.blackboard["meta"]["why"]
    assert StoryState.objects.get(project=project).state_version == version + 1


def test_rewrite_requests_are_checked(make_user, sample_project):
    from pipeline.book.rewrite import chapter_rewrite_start

    project = sample_project
    with pytest.raises(InvalidData, match="notes"):
        chapter_rewrite_start(project_id=project.pk, chapter=1, notes="  ")
    with pytest.raises(InvalidData, match="not a committed chapter"):
        chapter_rewrite_start(project_id=project.pk, chapter=1, notes="改")
    Project.objects.filter(pk=project.pk).update(orchestrator_state=OrchestratorState.VOL_PLANNING)
    with pytest.raises(PipelineNotReady):
        chapter_rewrite_start(project_id=project.pk, chapter=1, notes="改")
    assert not PipelineRun.objects.filter(project=project).exists()


def test_novel_ask_validate_checks_question_and_answer_files(tmp_path, capsys, db):
    from projects.sample_project import sample_project_create  # noqa: F401  (a database is all it needs)

    spec = {"version": 1, "topic": "init.platform_binding", "questions": [
        {"id": "platform", "header": "平台", "question": "发在哪？", "kind": "single_choice", "required": True,
         "options": [{"label": "qidian", "description": "起点"}]}]}
    answer = {"version": 1, "topic": "init.platform_binding", "answers": {"platform": "fanqie"},
              "answered_at": "2026-11-23T02:00:00+08:00", "answered_by": "human"}
    (tmp_path / "q.json").write_text(json.dumps(spec), encoding="utf-8")
    (tmp_path / "a.json").write_text(json.dumps(answer), encoding="utf-8")
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    call_command("novel", "--json", "ask", "validate", str(tmp_path / "q.json"))
    assert json.loads(capsys.readouterr().out)["data"]["kind"] == "QuestionSpec"
    call_command("novel", "--json", "ask", "validate", str(tmp_path / "a.json"))
    assert json.loads(capsys.readouterr().out)["data"]["kind"] == "AnswerSpec"
    for args in (["a.json", "--questions", "q.json"], ["bad.json"]):  # fanqie is not an option (no allow_other)
        with pytest.raises(SystemExit):
            call_command("novel", "--json", "ask", "validate", str(tmp_path / args[0]),
                         *([args[1], str(tmp_path / args[2])] if len(args) > 1 else []))
        envelope = json.loads(capsys.readouterr().out)
        assert envelope["ok"] is False and envelope["error"]["message"]


def test_the_staged_plan_over_the_api_edits_and_refuses(team):
    project, owner, reviewer, viewer = team
    advance(project_id=project.pk, user=owner)
    gate_answer_submit(question_id=open_question(project).pk, user=reviewer,
                       answers={"platform": "qidian", "genre": "xuanhuan"})
    assert api(owner).get("/api/projects/snow/plan").status_code == 404  # nothing staged yet
    advance(project_id=project.pk, user=owner)
    data = api(viewer).get("/api/projects/snow/plan").json()
    assert data["plan"]["chapter_start"] == 4 and data["validation"]["errors"] == []
    plan = data["plan"]
    # viewers and reviewers read, editors edit; hostile or broken edits change nothing
    assert api(viewer).patch("/api/projects/snow/plan", {"outline": plan["outline"]}, format="json").status_code == 403
    for payload in ({"contracts": {"5": {"chapter": 5}}}, {"outline": "### 第 4 章"}, {"outline": 123},
                    {"schedule": {"active_storylines": []}}, {"new_characters": [{"name": "x", "role": "god"}]},
                    {"contracts": "nope"}):
        response = api(owner).patch("/api/projects/snow/plan", payload, format="json")
        assert response.status_code == 400, (payload, response.json())
    assert api(owner).get("/api/projects/snow/plan").json()["plan"] == plan
    edited = plan["outline"].replace("- **Arc**:", "- **Arc**: 新", 1)
    response = api(owner).patch("/api/projects/snow/plan", {"outline": edited}, format="json")
    assert response.status_code == 200 and response.json()["previous_versions"][-1]["outline"] == plan["outline"]
    assert api(owner).get("/api/projects/nope/plan").status_code == 404


def test_errors_park_any_run_in_error_retry_and_a_retry_returns_to_its_state(team, settings):
    project, owner, reviewer, _viewer = team
    settings.NOVELSITE_OFFLINE = {"faults": {"quickstart:style": {"kind": "server_error", "rate": 1.0}}}
    advance(project_id=project.pk, user=owner)
    gate_answer_submit(question_id=open_question(project).pk, user=reviewer,
                       answers={"platform": "qidian", "genre": "xuanhuan"})
    project.refresh_from_db()
    assert (project.orchestrator_state, project.quickstart_phase) == (OrchestratorState.ERROR_RETRY, "characters")
    upcoming = next_step(project)
    assert (upcoming.step, upcoming.action) == ("quickstart:style", "retry")
    settings.NOVELSITE_OFFLINE = {}
    advance(project_id=project.pk, user=owner, step="quickstart:style")
    assert state(project) == OrchestratorState.VOL_PLANNING
    moves = list(StateTransition.objects.filter(project=project).values_list("from_state", "to_state"))
    assert moves == [("INIT", "QUICK_START"), ("QUICK_START", "ERROR_RETRY"), ("ERROR_RETRY", "QUICK_START"),
                     ("QUICK_START", "VOL_PLANNING")]
    error_move = StateTransition.objects.get(project=project, to_state="ERROR_RETRY")
    assert "retries spent" in error_move.reason and error_move.run.kind == RunKind.QUICKSTART


def test_a_written_out_plan_is_planned_from_writing(sample_project):
    project = sample_project
    chapter_run_start(project_id=project.pk, batch_remaining=2)
    run = advance(project_id=project.pk, step="volume:outline")
    assert run.kind == RunKind.PLAN
    assert state(project) == OrchestratorState.VOL_PLANNING
    assert StateTransition.objects.filter(project=project, from_state="WRITING", to_state="VOL_PLANNING").exists()
    run.refresh_from_db()
    assert run.blackboard["meta"]["chapter_start"] == 4


def test_an_outside_executor_runs_a_step_against_an_exported_tree(sample_project, tmp_path, capsys):
    """`novel packet` → the executor writes the step's outputs → `novel validate` → `novel advance`."""
    call_command("novel", "export", "demo", str(tmp_path / "tree"))
    capsys.readouterr()
    tree = tmp_path / "tree"
    call_command("novel", "--json", "packet", "demo", "chapter:001:draft", "--write", str(tree))
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["packet"]["step"] == "chapter:001:draft" and data["written_manifest_path"].endswith(
        "staging/manifests/chapter-001-draft.packet.json")
    expected = [output["path"] for output in data["packet"]["expected_outputs"]]
    assert expected == ["staging/chapters/chapter-001.md"]

    with pytest.raises(SystemExit):  # nothing written yet: validate fails, advance is refused
        call_command("novel", "--json", "validate", "chapter:001:draft", "--tree", str(tree))
    assert json.loads(capsys.readouterr().out)["ok"] is False
    with pytest.raises(SystemExit):
        call_command("novel", "--json", "advance", "--tree", str(tree), "chapter:001:draft")
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "step_validation_failed"

    (tree / "staging" / "chapters").mkdir(parents=True, exist_ok=True)
    (tree / "staging" / "chapters" / "chapter-001.md").write_text("# 第1章 雪夜\n\n林枫在雪原上。\n", encoding="utf-8")
    call_command("novel", "--json", "validate", "chapter:001:draft", "--tree", str(tree))
    assert json.loads(capsys.readouterr().out)["data"]["ok"] is True
    call_command("novel", "--json", "advance", "--tree", str(tree), "chapter:001:draft")
    checkpoint = json.loads(capsys.readouterr().out)["data"]["checkpoint"]
    assert (checkpoint["pipeline_stage"], checkpoint["inflight_chapter"]) == ("drafting", 1)
    assert json.loads((tree / ".checkpoint.json").read_text(encoding="utf-8"))["inflight_chapter"] == 1


def test_an_outside_executor_writes_a_whole_chapter_through_import_step(sample_project, tmp_path, capsys):
    """draft → summarize → refine → judge → commit, each written into the tree by the executor,
    validated and imported; the server never calls its own LLM for the chapter and commits it."""
    import random

    from pipeline.jacquard.filament import parse
    from pipeline.llm.offline.writers import WRITERS
    from projects.models import StoryState

    call_command("novel", "export", "demo", str(tmp_path / "tree"))
    capsys.readouterr()
    tree, staging = tmp_path / "tree", tmp_path / "tree" / "staging"
    rng = random.Random(7)
    cast = [{"slug": "lin-feng", "display_name": "林枫"}]
    draft = WRITERS["draft"]({"chapter": 1, "title": "雪夜", "characters": cast, "objectives": ["入林"],
                              "place": "北境雪原", "target_chars": 3000, "blacklist": []}, rng)["chapter"]
    summary = WRITERS["summarize"]({"chapter": 1, "title": "雪夜", "storyline_id": "main-arc", "characters": cast,
                                    "place": "北境雪原", "foreshadowing_updates": {}}, rng)
    evaluation = WRITERS["judge"]({"chapter": 1, "objectives": [{"id": "OBJ-1-1", "description": "入林",
                                                                  "required": True}]}, rng)["evaluation"]
    version = StoryState.objects.get(project=sample_project).state_version

    def write(rel: str, text: str) -> None:
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(text, encoding="utf-8")

    def step(name: str) -> dict:
        call_command("novel", "--json", "import-step", "demo", str(tree), name)
        return json.loads(capsys.readouterr().out)["data"]

    with pytest.raises(SystemExit):  # nothing staged: refused, nothing imported
        call_command("novel", "--json", "import-step", "demo", str(tree), "chapter:001:draft")
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "step_validation_failed"
    assert not PipelineRun.objects.filter(project=sample_project).exists()

    write("chapters/chapter-001.md", draft)
    assert step("chapter:001:draft") == {"step": "chapter:001:draft", "run_id": step_run_id(sample_project),
                                         "next_stage": "summarize", "status": "waiting", "violations": []}
    assert next_step(sample_project).action == "import_step"
    write("summaries/chapter-001-summary.md", summary["summary"])
    write("state/chapter-001-delta.json", json.dumps({"chapter": 1, "base_state_version": version,
                                                      "storyline_id": "main-arc", "ops": [
        {"op": "set", "path": "characters.lin-feng.location", "value": "幽暗森林"}]}, ensure_ascii=False))
    write("state/chapter-001-crossref.json", "{}")
    write("storylines/main-arc/memory.md", summary["memory"])
    assert step("chapter:001:summarize")["next_stage"] == "refine"
    assert step("chapter:001:refine")["next_stage"] == "judge"
    judged = json.loads(parse(evaluation, ["evaluation"]).texts["evaluation"]
                        if evaluation.lstrip().startswith("<") else evaluation)
    judged["scores"].pop("style_naturalness")  # 7 of 8 dimensions: the tool goes by the stated overall (#20)
    write("evaluations/chapter-001-eval.json", json.dumps(judged, ensure_ascii=False))
    assert step("chapter:001:judge")["next_stage"] == "commit"
    step("chapter:001:commit")
    sample_project.refresh_from_db()
    assert sample_project.last_completed_chapter == 1
    assert StoryState.objects.get(project=sample_project).state_version == version + 1
    assert Chapter.objects.get(project=sample_project, number=1).text.strip()
    from pipeline.models import LLMCall
    assert not LLMCall.objects.filter(run__project=sample_project,
                                      call_key__regex=r":(draft|summarize|refine|judge):").exists()


def step_run_id(project: Project) -> int:
    return PipelineRun.objects.filter(project=project).values_list("pk", flat=True).get()


def test_an_outside_executors_volume_plan_is_imported_and_waits_for_approval(sample_project, tmp_path, capsys,
                                                                               make_user):
    import random

    from pipeline.llm.offline.writers import WRITERS

    chapter_run_start(project_id=sample_project.pk, batch_remaining=2)
    call_command("novel", "export", "demo", str(tmp_path / "tree"))
    capsys.readouterr()
    base = tmp_path / "tree" / "staging" / "volumes" / "vol-01"
    (base / "chapter-contracts").mkdir(parents=True)
    plan = WRITERS["plan"]({"volume": 1, "chapter_start": 4, "chapter_end": 30, "storylines": ["main-arc"],
                            "characters": [{"slug": "lin-feng", "display_name": "林枫"}],
                            "previous_state_keys": ["lin-feng", "chen-lao"]}, random.Random(3))
    (base / "outline.md").write_text(plan["outline"], encoding="utf-8")
    (base / "storyline-schedule.json").write_text(plan["schedule"], encoding="utf-8")
    (base / "foreshadowing.json").write_text(plan["foreshadowing"], encoding="utf-8")
    (base / "new-characters.json").write_text(plan["new_characters"], encoding="utf-8")
    for contract in json.loads(plan["contracts"]):
        (base / "chapter-contracts" / f"chapter-{contract['chapter']:03d}.json").write_text(
            json.dumps(contract, ensure_ascii=False), encoding="utf-8")
    call_command("novel", "--json", "import-step", "demo", str(tmp_path / "tree"), "volume:outline")
    assert json.loads(capsys.readouterr().out)["data"]["next_stage"] == "volume:validate"
    question = open_question(sample_project)
    assert question.topic == "volume.01.plan_approval"
    gate_answer_submit(question_id=question.pk, user=make_user("boss", superuser=True), answers={"decision": "approve"})
    assert ChapterContract.objects.filter(project=sample_project).count() == 30
    assert state(sample_project) == OrchestratorState.WRITING
