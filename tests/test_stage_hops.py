"""The two transactions of every stage hop, taken apart: taking a stage's lease (``stage_claim``)
and finishing the stage (``stage_complete``), each one durable transaction of ORM code that locks
the project, then the run (``pipeline/runtime/locks.py``). Run on the test database, SQLite or
PostgreSQL: the code path is the same on both.

What a user relies on: a live lease is never taken over, an expired one is; a worker whose lease
was taken over writes nothing when it finishes; a finished stage releases its lease, keeps the
run's context unless it replaces it, and wakes the next stage; a project's prompt overrides are
noticed without a lookup per LLM call.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from pipeline.errors import LeaseLost
from pipeline.runtime.locks import project_lock_of_run, run_lock
from pipeline.models import PipelineRun, PromptTemplate, RunStatus, StageRun
from pipeline.prompts import default_source
from pipeline.runtime.runs import chapter_run_start
from pipeline.runtime.claims import StageOutcome, stage_claim, stage_complete
from projects.models import PipelineStage, Project
from projects.sample_project import sample_project_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(sent) -> PipelineRun:
    project = sample_project_create(slug="hops")
    started = chapter_run_start(project_id=project.pk)
    assert sent == [(started.pk, "draft")]
    return started


def test_a_claim_takes_the_lease_and_hands_the_stage_what_it_reads(run):
    claim = stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1")

    assert claim is not None and (claim.stage, claim.attempt, claim.chapter) == ("draft", 1, 1)
    assert claim.blackboard["meta"]["chapter"] == 1 and claim.project.slug == "hops"
    assert claim.project.style_profile == Project.objects.get(pk=run.project_id).style_profile  # JSON decoded
    assert not claim.project.has_prompt_overrides and not claim.resumed
    stored = PipelineRun.objects.get(pk=run.pk)
    assert (stored.status, stored.lease_owner) == (RunStatus.RUNNING, "worker-a:1")
    # a short lease, renewed by the worker's heartbeat while the stage works (pipeline/runtime/heartbeat.py)
    lease = timedelta(seconds=settings.NOVELSITE_LEASE_SECONDS)
    assert timezone.now() < stored.lease_expires_at <= timezone.now() + lease
    assert list(StageRun.objects.filter(run=run).values_list("stage", "status", "attempt")) == [("draft", "running", 1)]


def test_a_live_lease_is_never_taken_over_and_an_expired_one_is(run):
    assert stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1")
    assert stage_claim(run_id=run.pk, stage="draft", owner="worker-b:1") is None  # a's lease is live
    assert stage_claim(run_id=run.pk, stage="summarize", owner="worker-b:1") is None  # not at that stage
    assert PipelineRun.objects.get(pk=run.pk).lease_owner == "worker-a:1"

    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    taken = stage_claim(run_id=run.pk, stage="draft", owner="worker-b:1")

    assert taken is not None and taken.resumed and taken.attempt == 1  # same attempt: its stored call counts
    assert PipelineRun.objects.get(pk=run.pk).lease_owner == "worker-b:1"
    assert list(StageRun.objects.filter(run=run).order_by("pk").values_list("status", flat=True)) == [
        "abandoned", "running"]


def test_a_cancelled_or_finished_run_has_nothing_to_claim(run):
    PipelineRun.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    assert stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1") is None
    assert stage_claim(run_id=987654, stage="draft", owner="worker-a:1") is None  # no such run
    assert not StageRun.objects.exists()


def test_finishing_a_stage_releases_the_lease_and_wakes_the_next_one(run, sent):
    claim = stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1")
    board = {**claim.blackboard, "content": {"chapter": {"draft": "正文"}}}
    sent.clear()

    stage_complete(claim=claim, outcome=StageOutcome(board, "summarize", context={"v": 1, "chapter": 1},
                                                     checkpoint={"pipeline_stage": PipelineStage.DRAFTED}))

    stored = PipelineRun.objects.get(pk=run.pk)
    assert (stored.stage, stored.status, stored.lease_owner, stored.lease_expires_at) == (
        "summarize", RunStatus.QUEUED, "", None)
    assert stored.blackboard["content"]["chapter"]["draft"] == "正文" and stored.context == {"v": 1, "chapter": 1}
    assert StageRun.objects.get(pk=claim.stage_run_id).status == "succeeded"
    assert Project.objects.get(pk=run.project_id).pipeline_stage == PipelineStage.DRAFTED
    assert sent == [(run.pk, "summarize")]

    # the next stage keeps the context when its outcome does not replace it, and the run ends
    claim = stage_claim(run_id=run.pk, stage="summarize", owner="worker-b:1")
    assert claim.context == {"v": 1, "chapter": 1}
    stage_complete(claim=claim, outcome=StageOutcome(claim.blackboard, None))
    stored = PipelineRun.objects.get(pk=run.pk)
    assert stored.status == RunStatus.DONE and stored.finished_at is not None
    assert stored.context == {"v": 1, "chapter": 1}


def test_a_worker_whose_lease_was_taken_over_writes_nothing(run, sent):
    slow = stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1")
    PipelineRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    fast = stage_claim(run_id=run.pk, stage="draft", owner="worker-b:1")
    sent.clear()

    with pytest.raises(LeaseLost, match="moved on from draft"):
        stage_complete(claim=slow, outcome=StageOutcome({**slow.blackboard, "content": {"x": {"y": 1}}}, "summarize",
                                                        checkpoint={"pipeline_stage": PipelineStage.DRAFTED}))

    stored = PipelineRun.objects.get(pk=run.pk)
    assert (stored.stage, stored.status, stored.lease_owner) == ("draft", RunStatus.RUNNING, "worker-b:1")
    assert stored.blackboard == fast.blackboard
    assert StageRun.objects.get(pk=fast.stage_run_id).status == "running"
    assert Project.objects.get(pk=run.project_id).pipeline_stage == PipelineStage.DRAFTING
    assert sent == []


def test_a_project_with_an_override_is_seen_by_the_claim_and_its_stage_uses_it(run, settings):
    from django.db import transaction

    with transaction.atomic():
        assert project_lock_of_run(run.pk).has_prompt_overrides is not True
    PromptTemplate.objects.create(project_id=run.project_id, name="draft.j2", source="写第 {{ chapter }} 章。")
    with transaction.atomic():
        assert project_lock_of_run(run.pk).has_prompt_overrides

    settings.CELERY_TASK_ALWAYS_EAGER = True
    from pipeline.runtime.runner import stage_run

    stage_run(run_id=run.pk, stage="draft")
    receipt = StageRun.objects.get(run=run, stage="draft", status="succeeded").receipt
    task = next(block for block in receipt["blocks"] if block["name"] == "task")
    assert task["tokens"] < 20 < len(default_source("draft.j2"))  # the short override, not the default


def test_locked_rows_load_like_the_orm_with_unselected_fields_deferred(run):
    from django.db import transaction

    with transaction.atomic():
        lean = run_lock(run.pk, with_context=False, with_blackboard=False)
        full = run_lock(run.pk)
    orm = PipelineRun.objects.get(pk=run.pk)
    assert {"context", "blackboard"} <= lean.get_deferred_fields() and not full.get_deferred_fields()
    assert (full.created_at, full.blackboard, full.status) == (orm.created_at, orm.blackboard, orm.status)
    assert lean.blackboard == orm.blackboard  # a deferred field still loads on access


@pytest.mark.postgres
def test_on_postgresql_a_completion_locks_the_project_then_the_run_and_writes_only_under_its_lease(run, sent):
    """One transaction per completion, the locks in the one order every writer uses (project, then
    run): two completions can wait for each other but never deadlock. A lost lease writes nothing."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    claim = stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1")
    with CaptureQueriesContext(connection) as captured:
        stage_complete(claim=claim, outcome=StageOutcome(claim.blackboard, "summarize",
                                                         checkpoint={"pipeline_stage": PipelineStage.DRAFTED}))
    statements = [q["sql"] for q in captured.captured_queries]
    locks = [sql for sql in statements if "FOR UPDATE" in sql]
    assert statements[0] == "BEGIN" and statements[-1] == "COMMIT"
    assert 'FROM "projects_project"' in locks[0] and 'FOR UPDATE OF "projects_project"' in locks[0]
    assert 'FROM "pipeline_pipelinerun"' in locks[1]
    assert statements.index(locks[1]) < min(i for i, sql in enumerate(statements) if sql.startswith("UPDATE"))
    assert Project.objects.get(pk=run.project_id).pipeline_stage == PipelineStage.DRAFTED
    assert StageRun.objects.get(pk=claim.stage_run_id).status == "succeeded"

    claim = stage_claim(run_id=run.pk, stage="summarize", owner="worker-a:1")
    PipelineRun.objects.filter(pk=run.pk).update(lease_owner="worker-b:1")  # taken over meanwhile
    with CaptureQueriesContext(connection) as captured, pytest.raises(LeaseLost):
        stage_complete(claim=claim, outcome=StageOutcome(claim.blackboard, "refine"))
    statements = [q["sql"] for q in captured.captured_queries]
    assert not [sql for sql in statements if sql.startswith(("UPDATE", "INSERT"))]
    assert statements[-1] == "ROLLBACK"


def test_story_json_is_stored_as_text_not_escapes(run):
    """Chinese text in the blackboard (and every schema-checked JSON column) is stored as UTF-8,
    not as \\uXXXX escapes: half the bytes to send and parse for every stage."""
    from django.db import connection

    claim = stage_claim(run_id=run.pk, stage="draft", owner="worker-a:1")
    stage_complete(claim=claim, outcome=StageOutcome({**claim.blackboard, "content": {"chapter": {"draft": "林枫"}}},
                                                     "summarize"))
    # what the column is sent: text on SQLite, a jsonb adapter with its own dumps on PostgreSQL
    sent = PipelineRun._meta.get_field("blackboard").get_db_prep_value({"draft": "林枫"}, connection, prepared=False)
    text = sent if isinstance(sent, str) else sent.dumps(sent.obj)
    assert "林枫" in text and "\\u6797" not in text
    assert PipelineRun.objects.get(pk=run.pk).blackboard["content"]["chapter"]["draft"] == "林枫"
