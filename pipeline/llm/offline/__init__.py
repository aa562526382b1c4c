"""The offline backend: deterministic, no network, valid output for every stage, and able to
misbehave on demand so tests and benchmarks can drive every path.

Output is seeded by the request's ``seed_key`` (project, chapter, stage, attempt) and built from its
structured slice (``writers``). Misbehaviour comes from an ``OfflineConfig`` (the setting
``NOVELSITE_OFFLINE`` or one passed in a test):

    {"latency_ms": 200,                       # per call, over which the text streams in
     "faults": {"draft": {"kind": "rate_limit", "rate": 0.2},   # stage name, or "*" for every stage
                "*": {"kind": "truncated", "rate": 1.0}},
     "score_mode": "low",                     # judge scores: normal | revise | low | incomplete
     "cost_usd_per_call": 0.01}               # what each call reports it cost (default 0), e.g. to
                                              # drive a nightly batch into its cost cap

Fault kinds: rate_limit, overloaded, server_error, timeout, connection, truncated (some text
streams, then LLMTruncatedStream), malformed (text that breaks the stage's protocol), permanent.
Whether a call fails is drawn from the seed, so a retry (a new attempt) may pass at rate < 1.
"""
from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pipeline.jacquard.tokens import estimate_tokens
from pipeline.llm.offline.writers import WRITERS
from pipeline.llm.types import (
    LLMConnectionError,
    LLMOverloaded,
    LLMPermanentError,
    LLMRateLimited,
    LLMRequest,
    LLMResult,
    LLMServerError,
    LLMTimeout,
    LLMTruncatedStream,
    TextCallback,
    Usage,
)

CHUNK_CHARS = 64
# A real stream's events come every 10-30 ms. With a short latency (a benchmark's 200 ms for a
# whole chapter) the text comes in fewer, bigger chunks rather than faster than any real stream,
# whose callbacks would then take more CPU per second than a real one's.
MIN_CHUNK_INTERVAL_S = 0.015
FAULT_ERRORS = {
    "rate_limit": (LLMRateLimited, 429, "rate limited (offline fault)"),
    "overloaded": (LLMOverloaded, 529, "overloaded (offline fault)"),
    "server_error": (LLMServerError, 500, "internal server error (offline fault)"),
    "timeout": (LLMTimeout, None, "timed out (offline fault)"),
    "connection": (LLMConnectionError, None, "connection refused (offline fault)"),
    "permanent": (LLMPermanentError, 400, "invalid request (offline fault)"),
}
FAULT_KINDS = (*FAULT_ERRORS, "truncated", "malformed")


@dataclass(frozen=True)
class OfflineConfig:
    latency_ms: int = 0
    faults: dict[str, dict[str, Any]] = field(default_factory=dict)
    score_mode: str = "normal"
    cost_usd_per_call: Decimal = Decimal(0)

    @classmethod
    def from_settings(cls) -> OfflineConfig:
        from django.conf import settings

        raw = getattr(settings, "NOVELSITE_OFFLINE", {}) or {}
        return cls(latency_ms=int(raw.get("latency_ms", 0)), faults=dict(raw.get("faults", {})),
                   score_mode=raw.get("score_mode", "normal"),
                   cost_usd_per_call=_cost(raw.get("cost_usd_per_call", 0)))

    def fault_for(self, stage: str) -> dict[str, Any] | None:
        fault = self.faults.get(stage) or self.faults.get("*")
        if fault and fault.get("kind") not in FAULT_KINDS:
            raise ValueError(f"unknown offline fault kind {fault.get('kind')!r}; one of {', '.join(FAULT_KINDS)}")
        return fault


def _cost(value: Any) -> Decimal:
    # via str: 0.01 as a JSON float would otherwise become 0.01000000000000000020816681711721685…
    try:
        cost = Decimal(str(value))
    except ArithmeticError:
        cost = Decimal(-1)
    if not cost.is_finite() or cost < 0:
        raise ValueError(f"NOVELSITE_OFFLINE cost_usd_per_call must be a number ≥ 0, not {value!r}")
    return cost


def render_filament(tags: dict[str, str]) -> str:
    return "\n".join(f"<{tag}>\n{content}\n</{tag}>" for tag, content in tags.items()) + "\n"


def malformed(stage: str, rng: random.Random) -> str:
    """Output that breaks the protocol the way real models do: a missing tag, cut-off JSON."""
    return rng.choice([
        "<thought>我先想一想这一章该怎么写。</thought>\n抱歉，我无法按要求的格式输出。",
        '<evaluation>{"chapter": 1, "scores": {"plot_logic": {"score": 4,\n</evaluation>',
        '<state_update>[["SET", "characters.lin-feng.location" "雪原"]]</state_update>',
        f"<{stage.split(':')[-1]}>未闭合的输出……",
    ])


def stream_chunks(text: str, latency_s: float) -> list[str]:
    """``text`` in the chunks it streams in: CHUNK_CHARS each, or fewer and bigger ones when the
    latency leaves less than MIN_CHUNK_INTERVAL_S per chunk."""
    count = max(1, -(-len(text) // CHUNK_CHARS))
    if latency_s:
        count = max(1, min(count, int(latency_s / MIN_CHUNK_INTERVAL_S)))
    size = max(1, -(-len(text) // count))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _seeded(request: LLMRequest, purpose: str) -> random.Random:
    return random.Random(hashlib.sha256(f"{request.seed_key}|{request.stage}|{purpose}".encode()).digest())


class OfflineBackend:
    name = "offline"

    def __init__(self, config: OfflineConfig | None = None, *, sleep=time.sleep, clock=time.monotonic) -> None:
        self._config = config  # None: read the settings at every call, so tests and workers can change them
        self._sleep, self._clock = sleep, clock

    @property
    def config(self) -> OfflineConfig:
        return self._config or OfflineConfig.from_settings()

    def complete(self, request: LLMRequest, on_text: TextCallback | None = None) -> LLMResult:
        started = time.monotonic()
        rng = _seeded(request, "output")
        config = self.config
        fault = config.fault_for(request.stage)
        # a separate draw, so the text of a call does not depend on whether faults are configured
        failing = fault is not None and _seeded(request, "fault").random() < float(fault.get("rate", 1.0))
        if failing and fault["kind"] in FAULT_ERRORS:
            error, status, message = FAULT_ERRORS[fault["kind"]]
            self._wait(config.latency_ms / 2)
            raise error(f"{request.stage}: {message}", status_code=status,
                        request_id=f"offline-{rng.randrange(1 << 32):08x}")
        text = self._text(request, rng, malformed_output=failing and fault["kind"] == "malformed")
        cut = len(text) // 2 if failing and fault["kind"] == "truncated" else None
        self._stream(text[:cut] if cut is not None else text, on_text, request.stream)
        if cut is not None:
            raise LLMTruncatedStream(f"{request.stage}: the stream ended early (offline fault)")
        return self._result(request, text, started, rng)

    def _text(self, request: LLMRequest, rng: random.Random, *, malformed_output: bool) -> str:
        if malformed_output:
            return malformed(request.stage, rng)
        writer = WRITERS.get(request.stage)
        if writer is None:
            raise LLMPermanentError(f"the offline backend has no writer for stage {request.stage!r}", status_code=400)
        slice_ = dict(request.slice)
        if request.stage in ("judge", "quickstart:results") and self.config.score_mode != "normal":
            slice_["score_mode"] = self.config.score_mode
        return render_filament(writer(slice_, rng))

    def _stream(self, text: str, on_text: TextCallback | None, stream: bool) -> None:
        latency = self.config.latency_ms / 1000
        chunks = stream_chunks(text, latency)
        started = self._clock()
        for index, chunk in enumerate(chunks, start=1):
            if latency:
                # Paced by the clock, as a server streams at its own speed while the client handles
                # what arrived: the callbacks' time overlaps the wait instead of adding to it.
                delay = started + latency * index / len(chunks) - self._clock()
                if delay > 0:
                    self._sleep(delay)
            if on_text is not None and stream and chunk:
                on_text(chunk)

    def _wait(self, milliseconds: float) -> None:
        if milliseconds:
            self._sleep(milliseconds / 1000)

    def _result(self, request: LLMRequest, text: str, started: float, rng: random.Random) -> LLMResult:
        prompt = "".join(b.text for b in request.system) + "".join(m.text for m in request.messages)
        usage = Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(text))
        return LLMResult(text=text, stop_reason="end_turn", usage=usage,
                         cost_usd=self.config.cost_usd_per_call,
                         duration_ms=int((time.monotonic() - started) * 1000),
                         request_id=f"offline-{rng.randrange(1 << 32):08x}", model=request.model, backend=self.name)
