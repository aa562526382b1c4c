"""Fixtures of the tests that drive the chapter pipeline in this process (tests/test_pipeline.py and
the modules built on it), a pytest plugin (``pytest_plugins`` in tests/conftest.py):

- ``wakeups`` replaces ``queueing._send`` with a ``Wakeups``, which records the wake-ups instead of
  running them, so a test drives the stages by hand;
- ``backend_calls`` records every request that reached the (offline) LLM backend.
"""
from __future__ import annotations

import threading

import pytest

from pipeline.llm.offline import OfflineBackend
from pipeline.runtime import queueing
from pipeline.runtime.runner import stage_run


class Wakeups:
    """Stands in for ``queueing._send``: records each wake-up instead of running it, until ``live``."""

    def __init__(self, real):
        self.real, self.sent, self.live = real, [], False
        self.lock = threading.Lock()

    def __call__(self, run_id: int, stage: str) -> None:
        if self.live:
            self.real(run_id, stage)
            return
        with self.lock:
            self.sent.append((run_id, stage))

    def next_stage(self) -> str | None:
        return self.sent[0][1] if self.sent else None

    def step(self) -> str:
        """Run the oldest recorded wake-up as a worker would; return its stage."""
        run_id, stage = self.sent.pop(0)
        stage_run(run_id=run_id, stage=stage)
        return stage

    def drain(self) -> list[str]:
        """Run every wake-up, including those the steps queue; return the stages that ran."""
        ran = []
        while self.sent:
            ran.append(self.step())
        return ran

    def run_until(self, stage: str) -> list[str]:
        ran = []
        while self.sent and self.next_stage() != stage:
            ran.append(self.step())
        assert self.next_stage() == stage, (ran, self.sent)
        return ran


@pytest.fixture
def wakeups(monkeypatch) -> Wakeups:
    recorder = Wakeups(queueing._send)
    monkeypatch.setattr(queueing, "_send", recorder)
    return recorder


@pytest.fixture
def backend_calls(monkeypatch) -> list[tuple[str, dict]]:
    """Every request that reached the (offline) LLM backend: (stage, slice)."""
    calls: list[tuple[str, dict]] = []
    real = OfflineBackend.complete

    def complete(self, request, on_text=None):
        calls.append((request.stage, dict(request.slice)))
        return real(self, request, on_text=on_text)

    monkeypatch.setattr(OfflineBackend, "complete", complete)
    return calls
