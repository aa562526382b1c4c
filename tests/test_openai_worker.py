"""A whole chapter written through the ``openai`` backend by a real ``celery worker`` on PostgreSQL and
Redis, against the fake Chat Completions server (tests/fake_openai.py), with receipts and costs.

The worker runs the issue's simplest setup: ``NOVELSITE_LLM_BACKEND=openai`` with ``OPENAI_BASE_URL``,
``OPENAI_API_KEY`` and ``NOVELSITE_DEFAULT_MODEL`` in its environment, plus one named provider from
``NOVELSITE_LLM_PROVIDERS_JSON`` (prices in USD) for the judge and an unpriced model for the polish.

The fake only sees prompt text, so what it answers comes from a first pass: the same sample novel
written by a worker on the offline backend, whose stored outputs (LLMCall) the fake replays stage by
stage (it tells the stage by the role text the system message opens with). The second project is
built the same way, so every replayed output is valid for it.
"""
from __future__ import annotations

import json
import threading
from collections import defaultdict, deque
from decimal import Decimal

import pytest

from pipeline.models import LLMCall, PipelineRun, RunKind, StageRun
from pipeline.runtime.runs import chapter_run_start
from pipeline.chapter.stages import draft, judge, refine, summarize
from projects.models import Chapter, Project
from tests.fake_openai import FakeOpenAI
from tests.test_pipeline_worker import assert_committed_once, batch_done
from tests.worker_harness import wait_for, writable_project

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

ROLES = {"draft": draft.ROLE, "summarize": summarize.ROLE, "refine": refine.ROLE, "judge": judge.ROLE}
OPENAI_KEY = "sk-openai-test-secret-1"
QWEN_KEY = "sk-qwen-test-secret-2"


class Replay:
    """The fake's reply: the next recorded output of the stage the request belongs to."""

    def __init__(self, project: Project) -> None:
        self.outputs: dict[str, deque[str]] = defaultdict(deque)
        for key, text in LLMCall.objects.filter(run__project=project).order_by("pk").values_list("call_key",
                                                                                                 "output_text"):
            self.outputs[key.split(":")[1]].append(text)
        self.stages: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        stage = next(name for name, role in ROLES.items() if role in system)  # after the book bible
        with self.lock:
            self.stages.append(stage)
            queue = self.outputs[stage]
            return queue.popleft() if len(queue) > 1 else queue[0]


def test_a_chapter_through_the_openai_backend_on_a_real_worker(workers, monkeypatch):
    # the first pass: the offline backend writes the sample's chapter 1
    recorded = writable_project(1, slug="recorded")
    first = workers.start()
    chapter_run_start(project_id=recorded.pk)
    wait_for(batch_done(recorded, 1), timeout=90, what="the offline chapter", diagnostics=workers.diagnostics(recorded))
    first.kill()
    replay = Replay(recorded)
    assert set(replay.outputs) == set(ROLES)

    with FakeOpenAI(reply=replay, chunk_chars=40) as fake:
        qwen = {"name": "qwenintl", "kind": "openai", "base_url": fake.base_url, "key_env": "QWENINTL_KEY",
                "default_model": "qwen-plus", "currency": "USD",
                "models": {"qwen-plus": {"input": 0.4, "cached_input": 0.16, "output": 1.2}, "qwen-free": None}}
        for name, value in {"NOVELSITE_LLM_BACKEND": "openai", "OPENAI_BASE_URL": fake.base_url,
                            "OPENAI_API_KEY": OPENAI_KEY, "NOVELSITE_DEFAULT_MODEL": "deepseek-flash",
                            "OPENAI_MAX_RETRIES": "0", "QWENINTL_KEY": QWEN_KEY,
                            "NOVELSITE_LLM_PROVIDERS_JSON": json.dumps([qwen])}.items():
            monkeypatch.setenv(name, value)
        project = writable_project(1, slug="demo")
        Project.objects.filter(pk=project.pk).update(
            stage_models={"judge": "qwenintl:qwen-plus", "refine": "qwenintl:qwen-free"})
        worker = workers.start()
        chapter_run_start(project_id=project.pk)
        wait_for(batch_done(project, 1), timeout=90, what="the chapter through the openai backend",
                 diagnostics=workers.diagnostics(project))
        assert worker.proc.poll() is None, worker.log_tail()
        sent = list(fake.chat_requests)

    assert_committed_once(project, 1)
    chapter = Chapter.objects.get(project=project, number=1)
    assert chapter.text and Chapter.objects.get(project=recorded, number=1).text == chapter.text

    # every LLM stage went to the server, streamed, with the key of its provider
    assert sorted(replay.stages) == sorted(ROLES)
    keys = {request.body["model"]: request.headers["authorization"] for request in sent}
    assert keys == {"deepseek-flash": f"Bearer {OPENAI_KEY}", "qwen-plus": f"Bearer {QWEN_KEY}",
                    "qwen-free": f"Bearer {QWEN_KEY}"}
    assert all(request.body.get("stream") is True for request in sent)

    # stored calls and stage runs: provider, model, currency, cost (or unknown)
    run = PipelineRun.objects.get(project=project, kind=RunKind.CHAPTER)
    calls = {key.split(":")[1]: row for key, row in
             ((c.call_key, c) for c in LLMCall.objects.filter(run=run))}
    assert set(calls) == set(ROLES)
    for stage in ("draft", "summarize"):
        # the published DeepSeek price applies, in its currency
        assert (calls[stage].backend, calls[stage].model, calls[stage].currency) == ("openai", "deepseek-flash", "CNY")
        assert calls[stage].cost_known and calls[stage].cost_usd > 0
        assert calls[stage].usage["counted_by"] == "api" and calls[stage].usage["output_tokens"] > 0
    assert (calls["judge"].backend, calls["judge"].model, calls["judge"].currency) == ("qwenintl", "qwen-plus", "USD")
    assert calls["judge"].cost_known and calls["judge"].cost_usd > 0
    assert (calls["refine"].backend, calls["refine"].cost_known, calls["refine"].cost_usd) == \
        ("qwenintl", False, Decimal(0))

    stage_runs = {s.stage: s for s in StageRun.objects.filter(run=run, status="succeeded")}
    assert stage_runs["draft"].currency == "CNY" and stage_runs["draft"].cost_usd == calls["draft"].cost_usd
    assert stage_runs["judge"].currency == "USD" and stage_runs["judge"].cost_known
    assert stage_runs["refine"].cost_known is False
    receipt = stage_runs["judge"].receipt
    assert (receipt["backend"], receipt["model"], receipt["currency"]) == ("qwenintl", "qwen-plus", "USD")
    assert receipt["usage_counted_by"] == "api" and Decimal(receipt["cost"]) > 0
    assert stage_runs["refine"].receipt["cost"] == "unknown"

    # the keys are nowhere: not in the database rows, not in the worker's log
    stored = json.dumps([list(LLMCall.objects.values()), list(StageRun.objects.values_list("receipt", "error"))],
                        default=str)
    assert OPENAI_KEY not in stored and QWEN_KEY not in stored
    assert OPENAI_KEY not in worker.log_tail(100_000) and QWEN_KEY not in worker.log_tail(100_000)
