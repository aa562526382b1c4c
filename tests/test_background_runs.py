"""Nothing long runs inside a request (#16): every action that makes the model work answers at
once, with a slow model too, and the run goes on without it: in eager mode in the background thread
of the web process (pipeline/runtime/background.py), with workers on the queue.

Every call of the offline model here takes 1.5 s, so a request that ran even one stage would take
longer than the 1 s allowed. Once a request has answered, the model is made fast again and the test
waits (polling the database) for the run to finish in the background.

PostgreSQL: the background thread has its own connection, next to the test's.
"""
from __future__ import annotations

import time

import pytest
from django.urls import reverse

from pipeline.runtime.background import background_idle_wait
from pipeline.models import GateQuestion, GateStatus, PipelineRun, RunKind, RunStatus, StageRun
from projects.models import OrchestratorState, Project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BRIEF = "北境少年林枫在雪原上救下一位神秘老人，卷入星火宗覆灭的旧案，一路南下追查预言的真相。"
SLOW = {"latency_ms": 1500}
ANSWER_WITHIN_S = 1.0
FINISH_WITHIN_S = 120


@pytest.fixture
def owner(client, make_user):
    user = make_user("owner")
    client.force_login(user)
    return user


@pytest.fixture
def book(owner, sample_project_for):
    return sample_project_for(owner)


@pytest.fixture
def sample_project_for(db):
    from projects.sample_project import sample_project_create

    return lambda user: sample_project_create(owner=user)


def answered_at_once(settings, send):
    """Send the request with a slow model; it must answer within ANSWER_WITHIN_S. Then the model is
    fast again, for the run to finish quickly in the background."""
    settings.NOVELSITE_OFFLINE = SLOW
    started = time.monotonic()
    response = send()
    took = time.monotonic() - started
    settings.NOVELSITE_OFFLINE = {}
    assert took < ANSWER_WITHIN_S, f"the request took {took:.2f} s"
    return response


def post_at_once(client, settings, url, data=None, **extra):
    return answered_at_once(settings, lambda: client.post(url, data or {}, **extra))


def eventually(check, *, what: str):
    """Poll the database until ``check()`` is true (the background thread is working meanwhile)."""
    deadline = time.monotonic() + FINISH_WITHIN_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"not done within {FINISH_WITHIN_S} s: {what}")


def latest_run(project: Project, **filters) -> PipelineRun:
    return PipelineRun.objects.filter(project=project, **filters).order_by("-pk").first()


def run_is(project: Project, status: str, **filters) -> bool:
    run = latest_run(project, **filters)
    return run is not None and run.status == status


def chapters_written(project: Project) -> int:
    project.refresh_from_db()
    return project.last_completed_chapter


# --- eager mode: the background thread ----------------------------------------------------------------


def test_quick_start_gate_and_plan_decisions_answer_at_once(client, settings, owner, background_runs_on):
    response = client.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": BRIEF})
    assert response.status_code == 302
    project = Project.objects.get(slug="snow")

    # take the next step: the quick start runs until its platform/genre question
    response = post_at_once(client, settings, reverse("advance", args=["snow"]), {"step": "quickstart:world"})
    assert response.status_code == 302 and response.url == reverse("dashboard", args=["snow"])
    eventually(lambda: GateQuestion.objects.filter(project=project, status=GateStatus.OPEN).exists(),
               what="the quick start asks its question")

    # the answer: the quick start goes on to the volume planning
    question = GateQuestion.objects.get(project=project, status=GateStatus.OPEN)
    response = post_at_once(client, settings, reverse("gate-answer-web", args=["snow", question.pk]),
                            {"q-platform": "qidian", "q-genre": "xuanhuan"})
    assert response.status_code == 302
    eventually(lambda: Project.objects.get(pk=project.pk).orchestrator_state == OrchestratorState.VOL_PLANNING
               and not PipelineRun.objects.filter(project=project, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
               .exists(), what="the quick start finishes")

    # the plan is staged, regenerated with notes, then approved
    post_at_once(client, settings, reverse("advance", args=["snow"]), {"step": "volume:outline"})
    eventually(lambda: run_is(project, RunStatus.WAITING, kind=RunKind.PLAN), what="the plan waits for approval")
    versions = len(latest_run(project, kind=RunKind.PLAN).blackboard.get("history", {}).get("book.plan", []))
    post_at_once(client, settings, reverse("plan-decide", args=["snow"]),
                 {"decision": "regenerate", "notes": "第一卷结尾留出悬念。"})
    eventually(lambda: run_is(project, RunStatus.WAITING, kind=RunKind.PLAN)
               and len(latest_run(project, kind=RunKind.PLAN).blackboard.get("history", {}).get("book.plan", []))
               > versions, what="the regenerated plan waits for approval")
    post_at_once(client, settings, reverse("plan-decide", args=["snow"]), {"decision": "approve"})
    eventually(lambda: Project.objects.get(pk=project.pk).orchestrator_state == OrchestratorState.WRITING,
               what="the approved plan's chapters can be written")


def test_writing_answers_at_once_and_the_dashboard_follows(client, settings, book, background_runs_on):
    response = post_at_once(client, settings, reverse("write", args=[book.slug]), {"count": "2"})
    assert response.status_code == 302
    assert latest_run(book).status in (RunStatus.QUEUED, RunStatus.RUNNING)  # not written in the request
    page = client.get(reverse("dashboard", args=[book.slug])).content.decode()
    assert 'data-poll="1"' in page and 'id="run-working"' in page  # the page follows the run
    progress = client.get(reverse("progress", args=[book.slug])).json()
    assert progress["active"] and progress["status"] in ("queued", "running")

    # a second click while it works is refused, and the page says why
    response = client.post(reverse("write", args=[book.slug]), {"count": "1"}, follow=True)
    assert "这个项目已有一项任务正在进行" in response.content.decode()  # "A run of this project is already working"

    eventually(lambda: chapters_written(book) == 2, what="two chapters")
    # then "take the next step" writes the third
    post_at_once(client, settings, reverse("advance", args=[book.slug]), {"step": "chapter:003:draft"})
    eventually(lambda: chapters_written(book) == 3, what="chapter 3")


def test_retry_and_rewrite_answer_at_once(client, settings, book, background_runs_on):
    # a permanent model error in the background: the run stops in ERROR with its cause
    settings.NOVELSITE_OFFLINE = {"faults": {"draft": {"kind": "permanent"}}}
    client.post(reverse("write", args=[book.slug]), {"count": "1"})
    eventually(lambda: run_is(book, RunStatus.ERROR), what="the failed draft is recorded")
    assert Project.objects.get(pk=book.pk).orchestrator_state == OrchestratorState.ERROR_RETRY
    assert "draft" in latest_run(book).error

    response = post_at_once(client, settings, reverse("retry", args=[book.slug]))
    assert response.status_code == 302
    eventually(lambda: chapters_written(book) == 1, what="the retried chapter")

    response = post_at_once(client, settings, reverse("chapter-rewrite", args=[book.slug, 1]),
                            {"notes": "让老人更神秘一些。"})
    assert response.status_code == 302
    eventually(lambda: run_is(book, RunStatus.DONE) and latest_run(book).kind in (RunKind.CHAPTER, RunKind.REWRITE)
               and chapters_written(book) == 1 and latest_run(book).blackboard["meta"].get("chapter") == 1,
               what="the rewritten chapter")


def test_promotions_answer_at_once(client, settings, book, background_runs_on):
    settings.NOVELSITE_EAGER_IN_BACKGROUND = False
    client.post(reverse("write", args=[book.slug]), {"count": "1"})  # one chapter to promote
    settings.NOVELSITE_EAGER_IN_BACKGROUND = True
    response = post_at_once(client, settings, reverse("promotions", args=[book.slug]),
                            {"target_kind": "chapter", "target": "1", "platform": "xiaohongshu", "style": "casual"})
    run = latest_run(book, kind=RunKind.PROMOTION)
    assert response.status_code == 302 and response.url == reverse("promotion", args=[book.slug, run.pk])
    page = client.get(response.url).content.decode()
    assert 'http-equiv="refresh"' in page  # the promotion page follows the run
    eventually(lambda: run_is(book, RunStatus.DONE, kind=RunKind.PROMOTION), what="the promotion")

    post_at_once(client, settings, reverse("promotion-regenerate", args=[book.slug, run.pk]), {"step": "cta"})
    eventually(lambda: run_is(book, RunStatus.DONE, kind=RunKind.PROMOTION), what="the regenerated step")


def test_api_actions_answer_202_at_once(client, settings, book, background_runs_on):
    api = f"/api/projects/{book.slug}"
    response = answered_at_once(settings, lambda: client.post(f"{api}/write", {"chapters": 1},
                                                              content_type="application/json"))
    assert response.status_code == 202 and response.json()["status"] in ("queued", "running")
    busy = client.post(f"{api}/advance", {}, content_type="application/json")
    assert busy.status_code == 409 and busy.json()["code"] == "pipeline_busy"
    eventually(lambda: chapters_written(book) == 1, what="chapter 1")

    response = answered_at_once(settings, lambda: client.post(f"{api}/advance", {},
                                                              content_type="application/json"))
    assert response.status_code == 202
    eventually(lambda: chapters_written(book) == 2, what="chapter 2")
    response = answered_at_once(settings, lambda: client.post(f"{api}/chapters/2/rewrite", {"notes": "更紧凑"},
                                                              content_type="application/json"))
    assert response.status_code == 202
    eventually(lambda: run_is(book, RunStatus.DONE), what="the rewrite")
    response = answered_at_once(settings, lambda: client.post(
        f"/api/projects/{book.slug}/promotions", {"chapter": 1}, content_type="application/json"))
    assert response.status_code == 202
    eventually(lambda: run_is(book, RunStatus.DONE, kind=RunKind.PROMOTION), what="the promotion")


def test_a_bug_in_the_background_marks_the_run_failed_with_its_cause(client, settings, book, background_runs_on,
                                                                      monkeypatch, caplog):
    from pipeline.models import RunKind
    from pipeline.runtime.registry import STAGES
    from pipeline.runtime.stage import CHAPTER, Stage

    def broken(*args, **kwargs):
        raise RuntimeError("the draft stage broke")

    monkeypatch.setitem(STAGES, (RunKind.CHAPTER, "draft"), Stage(broken, reads=CHAPTER))
    post_at_once(client, settings, reverse("write", args=[book.slug]), {"count": "1"})
    eventually(lambda: run_is(book, RunStatus.ERROR), what="the failure is recorded")
    assert background_idle_wait(30)
    run = latest_run(book)
    assert run.error == "RuntimeError: the draft stage broke"
    assert run.blackboard["control"]["error_retry"]["error"] == "RuntimeError: the draft stage broke"
    assert Project.objects.get(pk=book.pk).orchestrator_state == OrchestratorState.ERROR_RETRY
    assert "a background pipeline job failed" in caplog.text  # logged, not lost with the thread

    # the thread lives on: the next job (a retry, once the bug is gone) runs
    monkeypatch.undo()
    post_at_once(client, settings, reverse("retry", args=[book.slug]))
    eventually(lambda: chapters_written(book) == 1, what="the retried chapter")


# --- with workers: every path only sends a message ----------------------------------------------------


@pytest.fixture
def worker_messages(settings, monkeypatch):
    """No eager mode: the wake-ups go to the broker (recorded here); nothing runs in the request."""
    from pipeline.tasks import stage_run_task

    sent: list[dict] = []
    monkeypatch.setattr(stage_run_task, "apply_async", lambda kwargs, **options: sent.append(kwargs))

    def switch_on():
        settings.CELERY_TASK_ALWAYS_EAGER = False
        return sent
    return switch_on


def test_with_workers_every_action_only_queues(client, settings, owner, sample_project_for, worker_messages):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the setting up runs in the requests
    client.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": BRIEF})
    snow = Project.objects.get(slug="snow")
    client.post(reverse("advance", args=["snow"]), {"step": "quickstart:world"})
    question = GateQuestion.objects.get(project=snow, status=GateStatus.OPEN)
    book = sample_project_for(owner)
    client.post(reverse("write", args=[book.slug]), {"count": "1"})
    assert chapters_written(book) == 1

    sent = worker_messages()
    actions = [
        (reverse("gate-answer-web", args=["snow", question.pk]), {"q-platform": "qidian", "q-genre": "xuanhuan"}),
        (reverse("write", args=[book.slug]), {"count": "3"}),
        (reverse("promotions", args=[book.slug]), {"target_kind": "chapter", "target": "1"}),
        (reverse("chapter-rewrite", args=[book.slug, 1]), {"notes": "再写一遍"}),
    ]
    stages_run = StageRun.objects.count()
    for url, data in actions:
        response = post_at_once(client, settings, url, data)
        assert response.status_code == 302, ([str(m) for m in response.context["messages"]][-1:]
                                             if response.context else "")
        assert not PipelineRun.objects.filter(status=RunStatus.RUNNING).exists()
        # nobody works the queue here: stop the run, or the next action would find the project busy
        PipelineRun.objects.filter(project=book, status=RunStatus.QUEUED).update(status=RunStatus.CANCELLED)
    assert [message["stage"] for message in sent] == ["quickstart:world", "draft", "promote:titles", "draft"]
    assert StageRun.objects.count() == stages_run  # no stage ran in a request
