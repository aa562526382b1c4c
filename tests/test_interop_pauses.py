"""A chapter paused for a person, as the original tool sees it (#20 item 5): its step is
``chapter:NNN:review`` (facts §7.3) wherever Novelsite names it outside (``novel next``, the
question, the answer path, the packet), the packet carries the question as ``novel_ask`` with its
``answer_path`` (facts §14.1), each new question gets an answer path of its own, and an answer an
adapter writes there comes back with ``novel import-step``."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from pipeline.questions.spec import answer_spec, validate_instruction_packet
from pipeline.chapter.pause import chapter_pause_gate, open_pause_question, pause_question
from pipeline.errors import PipelineNotReady
from pipeline.steps.import_step import step_import
from pipeline.models import GateQuestion, GateStatus, PipelineRun, RunStatus
from pipeline.book.orchestrator import next_step
from pipeline.steps.packets import instruction_packet
from projects.errors import InvalidData
from projects.filetree.export import export_to_path
from tests.sample_pages import paused_demo


@pytest.fixture
def paused(settings, make_user):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    owner = make_user("owner")
    demo, question = paused_demo(settings, owner)
    settings.NOVELSITE_OFFLINE = {}
    return demo, question, owner


def write_answer(root, question: GateQuestion, answers: dict, path: str | None = None) -> None:
    record = answer_spec(question_spec=question.spec, answers=answers, answered_by="claude_code",
                         answered_at=timezone.now())
    target = root / (path or question.answer_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")


def test_the_pause_question_is_asked_under_the_tools_step():
    gate = chapter_pause_gate(7, pause_question(7, "pause_for_user", 2.4))
    assert gate["step"] == "chapter:007:review"
    assert gate["answer_path"] == "staging/novel-ask/chapter-007-review.answers.json"
    assert gate["topic"] == gate["spec"]["topic"] == "chapter.007.judge_pause"


@pytest.mark.django_db(transaction=True)
def test_a_paused_chapter_is_at_chapter_review_with_a_fresh_answer_path(paused):
    demo, question, _owner = paused
    first = GateQuestion.objects.filter(project=demo).exclude(pk=question.pk).get()
    assert (first.step, question.step) == ("chapter:002:review", "chapter:002:review")
    assert first.answer_path == "staging/novel-ask/chapter-002-review.answers.json"
    assert question.answer_path == "staging/novel-ask/chapter-002-review-2.answers.json"
    upcoming = next_step(demo)
    assert (upcoming.step, upcoming.action) == ("chapter:002:review", "answer_gate")
    assert upcoming.evidence["answer_path"] == question.answer_path
    assert demo.pipeline_stage == "judged"  # the tool's router reaches :review from here (facts §7.2, §7.3)


@pytest.mark.django_db(transaction=True)
def test_the_review_packet_carries_the_open_question(paused):
    demo, question, _owner = paused
    packet = instruction_packet(demo, "chapter:002:review")
    assert validate_instruction_packet(packet) == []
    assert packet["agent"] == {"kind": "cli", "name": "manual-review"}
    assert packet["novel_ask"] == question.spec and packet["answer_path"] == question.answer_path
    assert packet["expected_outputs"][0]["path"] == question.answer_path
    assert packet["next_actions"][0]["command"] == f"novel import-step {demo.slug} . chapter:002:review"
    # another chapter's review packet has no question to carry
    assert "novel_ask" not in instruction_packet(demo, "chapter:003:review")


@pytest.mark.django_db(transaction=True)
def test_an_adapters_answer_comes_back_through_import_step(paused, tmp_path):
    demo, question, owner = paused
    export_to_path(demo, tmp_path / "tree")
    root = tmp_path / "tree"
    write_answer(root, question, {"decision": "accept"})
    imported = step_import(project_id=demo.pk, tree=root, step="chapter:002:review", user=owner)
    question.refresh_from_db()
    demo.refresh_from_db()
    assert question.status == GateStatus.ANSWERED
    assert question.answer.answer["answers"] == {"decision": "accept"}
    assert question.answer.answer["answered_by"] == "owner"  # who decided, not the adapter
    assert imported.step == "chapter:002:review"
    assert demo.last_completed_chapter == 2  # accepted: committed (eager queue)
    assert PipelineRun.objects.get(pk=imported.run_id).status == RunStatus.DONE


@pytest.mark.django_db(transaction=True)
def test_the_earlier_answer_is_never_taken_for_the_new_question(paused, tmp_path):
    demo, question, owner = paused
    export_to_path(demo, tmp_path / "tree")
    root = tmp_path / "tree"
    assert (root / "staging/novel-ask/chapter-002-review.answers.json").is_file()  # the first, answered
    with pytest.raises(InvalidData, match="chapter-002-review-2.answers.json"):
        step_import(project_id=demo.pk, tree=root, step="chapter:002:review", user=owner)
    question.refresh_from_db()
    assert question.status == GateStatus.OPEN


@pytest.mark.django_db(transaction=True)
def test_a_bad_answer_or_no_person_is_refused_and_nothing_is_stored(paused, tmp_path):
    demo, question, owner = paused
    export_to_path(demo, tmp_path / "tree")
    root = tmp_path / "tree"
    record = {"version": 1, "topic": question.topic, "answers": {"decision": "maybe"},
              "answered_at": "2026-11-24T10:00:00Z", "answered_by": "claude_code"}
    (root / question.answer_path).write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(InvalidData, match="answers.decision: must be one of the option labels"):
        step_import(project_id=demo.pk, tree=root, step="chapter:002:review", user=owner)
    write_answer(root, question, {"decision": "accept"})
    with pytest.raises(PipelineNotReady, match="--as"):
        step_import(project_id=demo.pk, tree=root, step="chapter:002:review", user=None)
    with pytest.raises(PipelineNotReady, match="not waiting"):
        step_import(project_id=demo.pk, tree=root, step="chapter:001:review", user=owner)
    question.refresh_from_db()
    assert question.status == GateStatus.OPEN


@pytest.mark.django_db(transaction=True)
def test_import_step_of_a_review_from_the_command_line(paused, tmp_path, capsys):
    demo, question, _owner = paused
    export_to_path(demo, tmp_path / "tree")
    write_answer(tmp_path / "tree", question, {"decision": "revise", "notes": "结尾再收紧一些"})
    call_command("novel", "--json", "import-step", demo.slug, str(tmp_path / "tree"), "chapter:002:review",
                 "--as", "owner")
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["step"] == "chapter:002:review"
    question.refresh_from_db()
    assert question.status == GateStatus.ANSWERED


@pytest.mark.django_db(transaction=True)
def test_a_question_opened_before_the_rename_is_still_found(paused):
    demo, question, _owner = paused
    GateQuestion.objects.filter(pk=question.pk).update(step="chapter:002:judge")
    assert open_pause_question(demo, 2).pk == question.pk
    assert instruction_packet(demo, "chapter:002:review")["answer_path"] == question.answer_path
