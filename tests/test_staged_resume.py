"""A novel-writer-cli tree stopped in the middle of a chapter (#20 item 3): the checkpoint has chapter 3
in flight and ``staging/`` holds its work so far, in the tool's shapes. The import makes that work the
chapter's run, waiting at the step the tool would take (facts §7.2, §7.3); ``novel import-step`` goes
on from there, or ``novel advance`` lets Novelsite's own stages take over; nothing stale is exported."""
from __future__ import annotations

import json

import pytest

from pipeline.models import GateQuestion, GateStatus, PipelineRun, RunStatus
from pipeline.book.orchestrator import advance, next_step
from pipeline.steps.import_step import step_import
from pipeline.steps.staged_resume import resume_phase
from projects.filetree.export import export_to_path, tree_files
from projects.models import ExtraFile
from tests.test_filetree import cli_files, import_files

CH3 = "staging/chapters/chapter-003.md"
SUMMARY = "staging/summaries/chapter-003-summary.md"
DELTA = "staging/state/chapter-003-delta.json"
CROSSREF = "staging/state/chapter-003-crossref.json"
MEMORY = "staging/storylines/main-arc/memory.md"
EVAL = "staging/evaluations/chapter-003-eval.json"
TEXT = ("# 第3章 钟声\n\n雾还没有散。沈砚站在雾城码头，听见钟楼敲了三下。\n\n"
        "陆青从货栈后面走出来，把半封信递给他。“你父亲当年也听过这钟声。”\n\n"
        "沈砚把信收好，转身走进旧巷。巷口的灯笼被风吹得直晃，他忽然明白，钟声是在数人。\n")


def evaluation(overall: float) -> dict:
    dims = ("plot_logic", "character", "immersion", "foreshadowing", "pacing", "style_naturalness",
            "emotional_impact", "storyline_coherence")
    return {"chapter": 3, "overall": overall, "overall_final": overall, "recommendation": "pass",
            # gated on the stated overall
            "scores": {dim: {"score": 4, "reason": "稳", "evidence": "原文"} for dim in dims},
            "contract_verification": {"l1_checks": [], "l2_checks": [], "l3_checks": [], "ls_checks": [],
                                      "has_violations": False},
            "hook": {"present": True, "type": "question", "evidence": "钟声是在数人", "reason": "悬念",
                     "strength": 4},
            "required_fixes": []}


def tool_tree(stage: str | None, *, inflight: int | None = 3, **staged: str | dict) -> dict[str, bytes]:
    files = cli_files()
    checkpoint = json.loads(files[".checkpoint.json"])
    checkpoint.update(pipeline_stage=stage, inflight_chapter=inflight, orchestrator_state="WRITING")
    files[".checkpoint.json"] = json.dumps(checkpoint).encode()
    for path, value in staged.items():
        files[path] = (json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value).encode()
    return files


def summarized(**more) -> dict[str, str | dict]:
    return {SUMMARY: "沈砚在码头听见钟声，从陆青手里拿到半封信，走进旧巷。",
            DELTA: {"chapter": 3, "base_state_version": 2, "storyline_id": "main-arc",
                    "ops": [{"op": "set", "path": "characters.shen-yan.location", "value": "雾城旧巷"},
                            {"op": "foreshadow", "path": "torn_letter", "value": "advanced",
                             "detail": "陆青交出半封信"}]},
            CROSSREF: {"leak_risk": "low"}, MEMORY: "# 主线\n\n沈砚拿到半封信，钟声在数人。\n", **more}


def imported(files: dict[str, bytes], make_user):
    report = import_files(files, slug="wucheng", owner=make_user("owner"))
    run = PipelineRun.objects.get(project=report.project)
    return report, report.project, run


@pytest.mark.parametrize(("stage", "have", "expected"), [
    ("revising", (True, True, True), "draft"),
    ("drafting", (False, False, False), "draft"),
    ("drafted", (True, False, False), "summarize"),
    ("drafted", (True, True, True), "refine"),  # an evaluation before refine is stale
    ("refined", (True, True, False), "judge"),
    ("judged", (False, True, True), "draft"),
    ("judged", (True, True, True), "gate"),
])
def test_the_tools_resume_rules(stage, have, expected):
    chapter, summary, evaluated = have
    assert resume_phase(stage, chapter=chapter, summarized=summary, evaluated=evaluated) == expected


@pytest.mark.django_db
def test_a_drafted_chapter_resumes_at_summarize_and_its_draft_is_the_runs(make_user):
    report, project, run = imported(tool_tree("drafted", **{CH3: TEXT}), make_user)
    assert (run.chapter, run.stage, run.status) == (3, "summarize", RunStatus.WAITING)
    assert run.blackboard["meta"]["external"] is True
    assert run.blackboard["content"]["chapter"]["title"] == "钟声"
    upcoming = next_step(project)
    assert (upcoming.step, upcoming.action) == ("chapter:003:summarize", "import_step")
    assert not ExtraFile.objects.filter(project=project, path__startswith="staging/chapters").exists()
    assert CH3 not in report.kept
    files = dict(tree_files(project))
    assert files[CH3].decode() == TEXT  # the run's draft, unchanged: written back as the tool wrote it


@pytest.mark.django_db
def test_a_drafted_and_summarized_chapter_resumes_at_refine_and_a_stale_eval_is_dropped(make_user):
    _report, project, run = imported(tool_tree("drafted", **{CH3: TEXT, EVAL: evaluation(4.5)}, **summarized()),
                                     make_user)
    assert run.stage == "refine"
    assert run.blackboard["content"]["summary"]["delta"]["base_state_version"] == 2
    files = dict(tree_files(project))
    assert {SUMMARY, DELTA, CROSSREF, MEMORY} <= set(files) and EVAL not in files


@pytest.mark.django_db
def test_a_refined_chapter_with_an_unreadable_eval_is_judged_again(make_user):
    # (a file that is not JSON at all refuses the whole import, as any other; this one is an object)
    files = tool_tree("refined", **{CH3: TEXT, EVAL: {"chapter": 3, "recommendation": "pass"}}, **summarized())
    _report, project, run = imported(files, make_user)
    assert run.stage == "judge"
    assert EVAL not in dict(tree_files(project))


@pytest.mark.django_db(transaction=True)
def test_a_judged_chapter_that_passes_waits_at_commit_and_commits_through_import_step(settings, make_user,
                                                                                    tmp_path):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _report, project, run = imported(tool_tree("judged", **{CH3: TEXT, EVAL: evaluation(4.5)}, **summarized()),
                                     make_user)
    assert run.stage == "commit" and run.blackboard["content"]["gate"]["result"]["decision"] == "pass"
    assert next_step(project).step == "chapter:003:commit"
    export_to_path(project, tmp_path / "tree")
    step_import(project_id=project.pk, tree=tmp_path / "tree", step="chapter:003:commit")
    project.refresh_from_db()
    assert project.last_completed_chapter == 3
    assert project.story_state.data["characters"]["shen-yan"]["location"] == "雾城旧巷"
    assert project.chapters.get(number=3).title == "钟声"


@pytest.mark.django_db
def test_a_judged_chapter_the_gate_pauses_waits_for_a_person_at_review(make_user):
    _report, project, run = imported(tool_tree("judged", **{CH3: TEXT, EVAL: evaluation(2.4)}, **summarized()),
                                     make_user)
    assert (run.stage, run.status) == ("gate", RunStatus.WAITING)
    question = GateQuestion.objects.get(run=run, status=GateStatus.OPEN)
    assert question.step == "chapter:003:review"
    assert next_step(project).step == "chapter:003:review"


@pytest.mark.django_db
def test_a_revising_chapter_resumes_at_draft_with_its_draft_and_eval(make_user):
    judged = {**evaluation(3.2), "required_fixes": ["结尾的钟声要早一点埋下"]}
    _report, project, run = imported(tool_tree("revising", **{CH3: TEXT, EVAL: judged}, **summarized()), make_user)
    assert run.stage == "draft"
    assert run.blackboard["content"]["revision"]["required_fixes"] == ["结尾的钟声要早一点埋下"]
    files = dict(tree_files(project))
    assert CH3 in files and EVAL in files and SUMMARY not in files  # the revision's inputs, not the stale summary


@pytest.mark.django_db
def test_staged_work_of_no_chapter_in_flight_is_dropped_with_a_warning(make_user):
    report = import_files(tool_tree("committed", inflight=None, **{CH3: TEXT}), slug="wucheng",
                          owner=make_user("owner"))
    assert not PipelineRun.objects.filter(project=report.project).exists()
    assert any(w.startswith(f"{CH3}: staged work of no chapter in flight") for w in report.warnings)
    assert CH3 not in dict(tree_files(report.project))
    assert "staging/manifests/chapter-002-draft.packet.json" in report.kept  # other staging is kept as it was


@pytest.mark.django_db(transaction=True)
def test_novelsites_own_stages_can_take_the_chapter_over(settings, make_user):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    _report, project, run = imported(tool_tree("drafted", **{CH3: TEXT}), make_user)
    taken = advance(project_id=project.pk)
    assert taken.pk == run.pk
    run.refresh_from_db()
    assert run.blackboard["meta"]["external"] is False
    assert run.stage != "summarize"  # summarize ran on the server, and the stages went on from there
    assert run.stage_runs.filter(stage="summarize", status="succeeded").exists()
