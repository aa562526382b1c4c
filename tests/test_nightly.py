"""Nightly autopilot batches (issue #6): one batch per project and night, however often the beat
fires; it writes up to the project's chapters per night and stops at a gate, an error, the end of
the planned volume or the night's cost cap, with nothing half-committed and the stopped run
resumable; the morning summary is on the project's latest batch and goes by e-mail to the members
who opted in; the beat schedule runs at NOVELSITE_NIGHTLY_AT and a malformed time stops start-up.

Celery is eager here (as in test_pipeline.py): ``nightly_batch_start`` returns once the whole
chain ran in-process, so these tests need ``django_db(transaction=True)``.
"""
from __future__ import annotations

import sys
import threading
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from novelsite.nightly_schedule import nightly_at_parse
from pipeline.nightly.budget import BUDGET_NOTE, batch_budget_check, run_is_budget_waiting
from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.pause import chapter_pause_resolve
from pipeline.errors import PipelineBusy, PipelineNotReady
from pipeline.models import BatchRun, BatchStatus, GateQuestion, GateStatus, LLMCall, PipelineRun, RunStatus, StageRun
from pipeline.nightly.morning_summary import batch_morning_summary, batch_summary_email_send
from pipeline.nightly.batches import nightly_batch_start, nightly_batches_start, run_budget_resume
from pipeline.runtime.runs import chapter_run_start, run_cancel
from pipeline.tasks import nightly_batches_task
from projects.models import (
    ChangeSource,
    Chapter,
    ChapterSummary,
    Membership,
    OrchestratorState,
    Project,
    Role,
    StateChange,
)
from tests.pipeline_fixtures import Wakeups
from tests.test_pipeline import NO_ROWS, project_with_contracts, story_rows
from tests.test_runtime import _controlled_env, _probe, _run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]

NIGHT = date(2026, 3, 1)
LLM_CALLS_PER_CHAPTER = 4  # draft, summarize, refine, judge (normal scores pass at once)


def autopilot(chapters_planned: int, *, slug: str = "demo", per_night: int = 3, cap: str = "5.00") -> Project:
    project = project_with_contracts(chapters_planned, slug=slug)
    Project.objects.filter(pk=project.pk).update(autopilot_enabled=True, autopilot_chapters_per_night=per_night,
                                                 autopilot_cost_cap_usd=Decimal(cap))
    project.refresh_from_db()
    return project


def committed(project: Project) -> list[int]:
    return list(Chapter.objects.filter(project=project).order_by("number").values_list("number", flat=True))


def whole_chapters_only(project: Project) -> None:
    """Every chapter is in the story with all its records, or not at all."""
    project.refresh_from_db()
    done = project.last_completed_chapter
    assert committed(project) == list(range(1, done + 1))
    assert ChapterSummary.objects.filter(project=project).count() == done
    assert StateChange.objects.filter(project=project, source=ChangeSource.PIPELINE).count() == done
    for number in range(1, done + 1):
        assert set(story_rows(project, number).values()) == {1}
    assert story_rows(project, done + 1) == NO_ROWS


# --- 1. a night's batch --------------------------------------------------------------------------


def test_the_nightly_task_writes_each_autopilot_project_its_chapters_per_night(settings):
    project = autopilot(10, per_night=3)

    assert nightly_batches_task.delay() is not None

    batch = BatchRun.objects.get(project=project)
    project.refresh_from_db()
    assert (batch.status, batch.stop_reason, batch.chapters_requested, batch.first_chapter,
            batch.chapters_written) == (BatchStatus.DONE, "done", 3, 1, 3)
    assert project.last_completed_chapter == 3 and project.orchestrator_state == OrchestratorState.WRITING
    runs = PipelineRun.objects.filter(project=project).order_by("pk")
    assert [(r.chapter, r.status, r.batch_id) for r in runs] == [(n, RunStatus.DONE, batch.pk) for n in (1, 2, 3)]
    assert batch.finished_at is not None and batch.cost_usd == 0  # the offline backend is free by default
    titles = dict(Chapter.objects.filter(project=project).values_list("number", "title"))
    assert batch.summary["chapters"] == [{"number": n, "title": titles[n]} for n in (1, 2, 3)]
    assert batch.summary["gates"] == [] and batch.summary["cost_cap_usd"] == "5.0000"

    summary = batch_morning_summary(project=project)
    assert (summary.night, summary.status, summary.stop_reason) == (batch.date, BatchStatus.DONE, "done")
    assert summary.chapters == [(n, titles[n]) for n in (1, 2, 3)] and summary.gates_waiting == []


def test_a_second_start_the_same_night_writes_nothing_more_and_the_next_night_goes_on():
    project = autopilot(10, per_night=3)
    first = nightly_batches_start(night=NIGHT)
    calls = LLMCall.objects.count()

    again = nightly_batches_start(night=NIGHT)
    direct = nightly_batch_start(project_id=project.pk, night=NIGHT)

    assert [b.pk for b in first] == [b.pk for b in again] == [direct.pk]
    assert BatchRun.objects.filter(project=project).count() == 1
    assert PipelineRun.objects.filter(project=project).count() == 3 and LLMCall.objects.count() == calls
    assert committed(project) == [1, 2, 3]

    nightly_batches_start(night=NIGHT + timedelta(days=1))
    tomorrow = BatchRun.objects.get(project=project, date=NIGHT + timedelta(days=1))
    assert (tomorrow.status, tomorrow.first_chapter, tomorrow.chapters_written) == (BatchStatus.DONE, 4, 3)
    assert committed(project) == [1, 2, 3, 4, 5, 6]
    assert batch_morning_summary(project=project).batch_id == tomorrow.pk


def test_projects_with_autopilot_off_are_not_touched():
    on = autopilot(10, slug="on", per_night=2)
    off = project_with_contracts(10, slug="off")

    batches = nightly_batches_start(night=NIGHT)

    assert [b.project_id for b in batches] == [on.pk]
    assert not BatchRun.objects.filter(project=off).exists()
    assert not PipelineRun.objects.filter(project=off).exists() and committed(off) == []
    off.refresh_from_db()
    assert off.last_completed_chapter == 0
    assert committed(on) == [1, 2]
    assert batch_morning_summary(project=off) is None


def test_one_project_failing_costs_the_others_nothing(monkeypatch, caplog):
    from pipeline.nightly import batches as nightly

    broken, fine = autopilot(10, slug="broken", per_night=1), autopilot(10, slug="fine", per_night=1)
    real = nightly.nightly_batch_start

    def start(*, project_id, night):
        if project_id == broken.pk:
            raise RuntimeError("a bug in one project")
        return real(project_id=project_id, night=night)

    monkeypatch.setattr(nightly, "nightly_batch_start", start)

    batches = nightly_batches_start(night=NIGHT)

    assert [b.project_id for b in batches] == [fine.pk] and committed(fine) == [1]
    assert "nightly batch of project" in caplog.text and "a bug in one project" in caplog.text


@pytest.mark.postgres
def test_two_beats_at_once_start_one_batch(monkeypatch):
    from pipeline.runtime import queueing

    wakeups = Wakeups(queueing._send)  # record the first stage instead of running the chain
    monkeypatch.setattr(queueing, "_send", wakeups)
    project = autopilot(10)
    barrier, outcomes = threading.Barrier(2), []

    def start():
        try:
            barrier.wait(timeout=10)
            outcomes.append(nightly_batch_start(project_id=project.pk, night=NIGHT).pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert len(outcomes) == 2 and len(set(outcomes)) == 1
    assert BatchRun.objects.filter(project=project).count() == 1
    assert PipelineRun.objects.filter(project=project).count() == 1 and len(wakeups.sent) == 1


# --- 2. where a batch stops ----------------------------------------------------------------------


def test_the_batch_stops_at_a_gate_and_the_summary_lists_the_waiting_question(settings, make_user):
    settings.NOVELSITE_OFFLINE = {"score_mode": "low"}  # overall in [2, 3): a person decides
    project = autopilot(10, per_night=3)

    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    batch.refresh_from_db()
    question = GateQuestion.objects.get(project=project, status=GateStatus.OPEN)
    assert (batch.status, batch.stop_reason, batch.chapters_written) == (BatchStatus.STOPPED, "gate", 0)
    assert batch.summary["gates"] == [{"id": question.pk, "step": "chapter:001:review",
                                       "topic": "chapter.001.judge_pause", "run_id": question.run_id}]
    summary = batch_morning_summary(project=project)
    assert [(g.step, g.topic) for g in summary.gates_waiting] == [("chapter:001:review", "chapter.001.judge_pause")]
    assert summary.chapters == [] and "人工" in summary.reason_text
    whole_chapters_only(project)

    # the next night finds the question still open: nothing starts, and the summary says why
    skipped = nightly_batch_start(project_id=project.pk, night=NIGHT + timedelta(days=1))
    skipped.refresh_from_db()
    assert (skipped.status, skipped.stop_reason, skipped.first_chapter) == (BatchStatus.SKIPPED, "busy", None)
    assert skipped.summary["gates"][0]["step"] == "chapter:001:review"
    assert PipelineRun.objects.filter(project=project).count() == 1

    # a person's answer finishes the chapter; the night is over, so the chain does not go on
    settings.NOVELSITE_OFFLINE = {}
    chapter_pause_resolve(question_id=question.pk, choice="accept", user=make_user("editor"))
    assert committed(project) == [1] and PipelineRun.objects.filter(project=project).count() == 1
    assert batch_morning_summary(project=project).gates_waiting == []  # gates are read live
    batch.refresh_from_db()
    assert (batch.status, batch.chapters_written) == (BatchStatus.STOPPED, 0)  # the night's record stays


def test_the_batch_stops_at_the_end_of_the_planned_volume():
    project = autopilot(3, per_night=5)  # the demo plans chapters 1-3

    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    batch.refresh_from_db()
    assert (batch.status, batch.stop_reason, batch.chapters_written) == (BatchStatus.STOPPED, "end_of_plan", 3)
    assert "chapter 4 has no contract" in batch.summary["stop_detail"]
    assert committed(project) == [1, 2, 3]

    nothing_left = nightly_batch_start(project_id=project.pk, night=NIGHT + timedelta(days=1))
    assert (nothing_left.status, nothing_left.stop_reason) == (BatchStatus.SKIPPED, "end_of_plan")


def test_an_error_stops_the_batch(settings):
    settings.NOVELSITE_OFFLINE = {"faults": {"refine": {"kind": "permanent", "rate": 1.0}}}
    project = autopilot(10, per_night=3)

    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    batch.refresh_from_db()
    assert (batch.status, batch.stop_reason, batch.chapters_written) == (BatchStatus.STOPPED, "error", 0)
    assert "LLMPermanentError" in batch.summary["stop_detail"]
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.ERROR_RETRY
    whole_chapters_only(project)


def test_a_cancelled_run_stops_the_batch(monkeypatch):
    from pipeline.runtime import queueing

    monkeypatch.setattr(queueing, "_send", Wakeups(queueing._send))  # the chain waits at its first stage
    project = autopilot(10)
    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    run_cancel(run_id=PipelineRun.objects.get(project=project).pk)

    batch.refresh_from_db()
    assert (batch.status, batch.stop_reason, batch.chapters_written) == (BatchStatus.STOPPED, "cancelled", 0)


# --- 3. the cost cap -----------------------------------------------------------------------------


def test_the_cost_cap_parks_the_run_whole_and_the_next_night_resumes_it(settings):
    settings.NOVELSITE_OFFLINE = {"cost_usd_per_call": 0.01}
    project = autopilot(10, per_night=3, cap="0.06")  # 6 calls: chapter 1 (4) + chapter 2's draft, summarize

    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    batch.refresh_from_db()
    assert (batch.status, batch.stop_reason, batch.chapters_written, batch.cost_usd) == (
        BatchStatus.STOPPED, "cost_cap", 1, Decimal("0.06"))
    assert LLMCall.objects.filter(run__project=project).count() == 6  # no call once the cap was reached
    parked = PipelineRun.objects.get(project=project, chapter=2)
    assert (parked.status, parked.stage, parked.error) == (RunStatus.WAITING, "refine", "")
    assert run_is_budget_waiting(parked)
    note = Blackboard(parked.blackboard).as_("orchestrator").read_control(BUDGET_NOTE)
    assert (note["stage"], note["spent_usd"], note["cap_usd"]) == ("refine", "0.060000", "0.0600")
    # not an LLM error: no retry, no ERROR_RETRY; the stopped attempt is a finished one
    refine_rows = StageRun.objects.filter(run=parked, stage="refine")
    assert [(r.status, r.error.split(":")[0]) for r in refine_rows] == [("failed", "BudgetExhausted")]
    assert not Blackboard(parked.blackboard).as_("orchestrator").read_control("errors")
    project.refresh_from_db()
    assert (project.orchestrator_state, project.inflight_chapter, project.last_completed_chapter) == (
        OrchestratorState.WRITING, 2, 1)
    whole_chapters_only(project)
    summary = batch_morning_summary(project=project)
    assert (summary.cost_usd, summary.cost_cap_usd, summary.budget_waiting_chapter) == (
        Decimal("0.06"), Decimal("0.06"), 2)
    with pytest.raises(PipelineBusy):  # the parked run still holds the project
        chapter_run_start(project_id=project.pk)

    # the next night resumes the parked chapter first, at its stage, then goes on to the cap again
    tomorrow = nightly_batch_start(project_id=project.pk, night=NIGHT + timedelta(days=1))

    tomorrow.refresh_from_db()
    parked.refresh_from_db()
    assert parked.status == RunStatus.DONE and parked.batch_id == tomorrow.pk
    assert [r.stage for r in StageRun.objects.filter(run=parked).order_by("pk")] == [
        "draft", "summarize", "refine", "refine", "judge", "commit"]
    # night 2 paid for chapter 2's refine and judge (2) and chapter 3 (4): $0.06, its cap
    assert (tomorrow.first_chapter, tomorrow.status, tomorrow.stop_reason, tomorrow.cost_usd) == (
        2, BatchStatus.STOPPED, "cost_cap", Decimal("0.06"))
    assert [c["number"] for c in tomorrow.summary["chapters"]] == [2, 3]
    assert tomorrow.summary["budget_waiting_chapter"] is None  # stopped between chapters: nothing parked
    batch.refresh_from_db()
    assert (batch.chapters_written, batch.cost_usd) == (1, Decimal("0.06"))  # the first night's record stays
    whole_chapters_only(project)
    assert committed(project) == [1, 2, 3]

    third = nightly_batch_start(project_id=project.pk, night=NIGHT + timedelta(days=2))
    third.refresh_from_db()
    assert third.first_chapter == 4 and [c["number"] for c in third.summary["chapters"]] == [4]


def test_a_person_resumes_a_parked_run_outside_the_cap_and_the_chain_stops_there(settings, make_user):
    settings.NOVELSITE_OFFLINE = {"cost_usd_per_call": 0.01}
    project = autopilot(10, per_night=3, cap="0.02")  # chapter 1 parks at refine
    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)
    parked = PipelineRun.objects.get(project=project, chapter=1)
    assert run_is_budget_waiting(parked) and parked.stage == "refine"
    assert batch_morning_summary(project=project).budget_waiting_chapter == 1
    with pytest.raises(PipelineNotReady):
        run_budget_resume(run_id=PipelineRun.objects.create(project=project, kind="promotion").pk)

    run_budget_resume(run_id=parked.pk, user=make_user("editor"))

    parked.refresh_from_db()
    assert parked.status == RunStatus.DONE and not run_is_budget_waiting(parked)
    assert Blackboard(parked.blackboard).as_("orchestrator").read_control("budget_resumed")["by"] == "editor"
    assert committed(project) == [1]  # no second chapter: the night is over
    assert batch_morning_summary(project=project).budget_waiting_chapter is None
    assert PipelineRun.objects.filter(project=project, kind="chapter").count() == 1
    batch.refresh_from_db()
    assert (batch.status, batch.stop_reason, batch.chapters_written, batch.cost_usd) == (
        BatchStatus.STOPPED, "cost_cap", 0, Decimal("0.02"))
    with pytest.raises(PipelineNotReady):
        run_budget_resume(run_id=parked.pk)


def test_the_cap_is_checked_before_each_call_only_inside_a_running_batch(settings):
    settings.NOVELSITE_OFFLINE = {"cost_usd_per_call": 0.01}
    project = autopilot(10, per_night=1, cap="0")

    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    assert (batch.status, batch.stop_reason) == (BatchStatus.SKIPPED, "cost_cap")
    assert not PipelineRun.objects.filter(project=project).exists()
    # a run outside any batch (`novel write`, a person) has no nightly cap
    run = PipelineRun.objects.create(project=project, kind="promotion")
    batch_budget_check(run_id=run.pk, batch_id=run.batch_id)  # does not raise


# --- 4. the morning e-mail -----------------------------------------------------------------------


def test_the_morning_summary_is_mailed_once_to_the_members_who_opted_in(mailoutbox, make_user):
    project = autopilot(10, per_night=2)
    people = {name: make_user(name) for name in ("alice", "bob", "carol", "dave")}
    for name, user in people.items():
        user.email = "" if name == "carol" else f"{name}@example.com"
        user.is_active = name != "dave"
        user.save()
    opted = {"alice": True, "bob": False, "carol": True, "dave": True}  # carol has no address, dave left
    for name, user in people.items():
        Membership.objects.create(project=project, user=user, role=Role.EDITOR, morning_summary_email=opted[name])

    batch = nightly_batch_start(project_id=project.pk, night=NIGHT)

    assert [m.to for m in mailoutbox] == [["alice@example.com"]]
    message = mailoutbox[0]
    assert message.subject.startswith("[Novelsite] Nightly batch 2026-03-01") and "2 chapter(s)" in message.subject
    titles = dict(Chapter.objects.filter(project=project).values_list("number", "title"))
    assert f"第 1 章 {titles[1]}" in message.body and f"第 2 章 {titles[2]}" in message.body
    assert "写成 2 / 2 章" in message.body and "费用：$0.0000（上限 $5.00）" in message.body
    batch.refresh_from_db()
    assert batch.summary["emailed_to"] == 1

    assert batch_summary_email_send(batch_id=batch.pk) == 0  # once per batch (a redelivered task)
    nightly_batch_start(project_id=project.pk, night=NIGHT)  # the same night again: no new batch, no mail
    assert len(mailoutbox) == 1


def test_a_waiting_gate_is_in_the_mail(settings, mailoutbox, make_user):
    settings.NOVELSITE_OFFLINE = {"score_mode": "low"}
    project = autopilot(10)
    user = make_user("alice")
    user.email = "alice@example.com"
    user.save()
    Membership.objects.create(project=project, user=user, role=Role.OWNER, morning_summary_email=True)

    nightly_batch_start(project_id=project.pk, night=NIGHT)

    assert len(mailoutbox) == 1
    assert "chapter:001:review：chapter.001.judge_pause" in mailoutbox[0].body
    assert "写成 0 / 3 章" in mailoutbox[0].body


# --- 5. the schedule -----------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [("02:00", (2, 0)), ("7:05", (7, 5)), (" 23:59 ", (23, 59)),
                                             ("00:00", (0, 0))])
def test_nightly_at_accepts_a_time_of_day(value, expected):
    assert nightly_at_parse(value) == expected


@pytest.mark.parametrize("value", ["25:99", "24:00", "12:60", "2am", "", "02:00; rm -rf /", "02:00:00", "-1:30",
                                   "０２:００", None])
def test_nightly_at_refuses_anything_else_with_the_value_named(value):
    with pytest.raises(ImproperlyConfigured) as caught:
        nightly_at_parse(value)
    assert "NOVELSITE_NIGHTLY_AT" in str(caught.value) and repr(value) in str(caught.value)


def test_the_beat_schedule_starts_the_nightly_batches_at_02_00_in_time_zone(settings):
    from celery.schedules import crontab

    entry = settings.CELERY_BEAT_SCHEDULE["nightly-batches"]
    assert entry["task"] == nightly_batches_task.name == "pipeline.tasks.nightly_batches_task"
    assert isinstance(entry["schedule"], crontab)
    assert (entry["schedule"].hour, entry["schedule"].minute) == ({2}, {0})
    assert settings.CELERY_TIMEZONE == settings.TIME_ZONE


BEAT_PROBE = r"""
import json

import django

django.setup()
from novelsite.celery import app

entry = app.conf.beat_schedule["nightly-batches"]
print(json.dumps({"task": entry["task"], "hour": sorted(entry["schedule"].hour),
                  "minute": sorted(entry["schedule"].minute), "timezone": str(app.timezone)}))
"""


def test_the_nightly_time_and_time_zone_come_from_the_environment():
    probe = _probe(BEAT_PROBE, _controlled_env(NOVELSITE_NIGHTLY_AT="03:30", TIME_ZONE="Europe/Berlin"))
    assert probe == {"task": "pipeline.tasks.nightly_batches_task", "hour": [3], "minute": [30],
                     "timezone": "Europe/Berlin"}


def test_a_malformed_nightly_time_stops_the_start_up_with_a_clear_error():
    proc = _run([sys.executable, "manage.py", "check"], _controlled_env(NOVELSITE_NIGHTLY_AT="25:99"))
    assert proc.returncode != 0
    assert "NOVELSITE_NIGHTLY_AT='25:99' is not a time of day" in proc.stderr


@pytest.mark.parametrize("cost", [-0.01, "free", float("nan"), True])
def test_the_offline_cost_per_call_must_be_a_number_not_below_zero(settings, cost):
    from pipeline.llm.offline import OfflineConfig

    settings.NOVELSITE_OFFLINE = {"cost_usd_per_call": cost}
    with pytest.raises(ValueError, match="cost_usd_per_call"):
        OfflineConfig.from_settings()
    settings.NOVELSITE_OFFLINE = {"cost_usd_per_call": "0.25"}
    assert OfflineConfig.from_settings().cost_usd_per_call == Decimal("0.25")
