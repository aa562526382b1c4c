"""Jacquard: one LLM call as a pipeline of plugins (seed 004 §2):
Planner → Skein Builder → Template Renderer → Assembler → Invoker → Filament Parser → State Updater.

ORM-free. A stage supplies the slice, a function that builds its Skein, the template context and,
optionally, a ``CallStore`` that keeps finished calls so a redelivered task reuses the stored
output instead of paying twice. Every call leaves a receipt: the blocks that went in (name, role,
tokens, cacheable), what was trimmed and why, the prompt hash, backend, model, usage, cost and
duration: what the web page shows for "why did the model see this".
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from novelsite.llm_providers import ProviderConfigError
from pipeline.jacquard.filament import parse as parse_filament
from pipeline.jacquard.skein import Assembled, PromptBlock, Skein, assemble
from pipeline.jacquard.templates import render_string
from pipeline.llm.backends import get_backend, resolve
from pipeline.llm.cache_policy import plan_cache
from pipeline.llm.types import LLMBadOutput, LLMPermanentError, LLMRequest, LLMResult, TextCallback
from projects.state_ops import PatchError, apply_delta

# Prompt budgets in estimator tokens (DESIGN §6), and output caps, per stage family. A budget is for
# the stage's own part: a shared head marked ``cache_break`` (the book bible, pipeline/chapter/book_bible.py,
# ≤ 6K and cached) comes on top of it, so the bible never pushes the chapter's material out.
DEFAULT_BUDGETS = {"draft": 12_000, "summarize": 10_000, "refine": 8_000, "judge": 14_000, "plan": 24_000,
                   "quickstart": 16_000, "consolidate": 8_000, "review": 16_000, "promote": 6_000}
MAX_OUTPUT_TOKENS = {"draft": 8_000, "plan": 16_000, "quickstart": 12_000, "summarize": 3_000, "refine": 3_000,
                     "judge": 4_000, "consolidate": 1_500, "review": 6_000, "promote": 3_000}


class CallStore(Protocol):
    def get(self, call_key: str) -> LLMResult | None: ...

    def put(self, call_key: str, result: LLMResult, receipt: dict[str, Any],
            request: LLMRequest | None = None) -> None: ...


@dataclass
class CallSpec:
    """What a stage asks for."""

    stage: str
    slice: Mapping[str, Any]
    build_skein: Callable[[Mapping[str, Any]], Skein]
    call_key: str  # run:stage:attempt:sequence; the store's key
    tags: Sequence[str]
    required_tags: Sequence[str] = ()
    template_context: Mapping[str, Any] = field(default_factory=dict)
    stage_models: Mapping[str, str] = field(default_factory=dict)
    budget: int | None = None
    seed_key: str = ""
    state: Mapping[str, Any] | None = None  # with delta_header: validate the ops against it
    delta_header: Mapping[str, Any] | None = None  # chapter, base_state_version, storyline_id
    on_text: TextCallback | None = None
    count_tokens_with_api: bool = False  # ask the backend's real tokenizer too (anthropic only)
    receipt_extra: Mapping[str, Any] = field(default_factory=dict)  # what the stage adds to its receipt
    cache_ttl: str = "5m"  # the prompt cache's lifetime: "5m", or "1h" for nightly batches


@dataclass
class CallContext:
    spec: CallSpec
    backend: str = ""
    model: str = ""
    budget: int = 0
    max_output_tokens: int = 0
    skein: Skein | None = None
    assembled: Assembled | None = None
    result: LLMResult | None = None
    reused: bool = False
    texts: dict[str, str] = field(default_factory=dict)
    ops: list[dict[str, Any]] = field(default_factory=list)
    delta: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, int] = field(default_factory=dict)
    api_input_tokens: int | None = None  # from the backend's count_tokens, when asked for

    def receipt(self) -> dict[str, Any]:
        counter = "anthropic_count_tokens" if self.api_input_tokens is not None else "estimator"
        receipt = self.assembled.receipt(token_counter=counter) if self.assembled else {"blocks": [], "trimmed": []}
        if self.assembled:  # whether the stable prefix reaches the model's minimum, and where the markers go
            receipt["cache"] = plan_cache(self.assembled.system, self.assembled.messages, model=self.model,
                                          ttl=self.spec.cache_ttl).receipt()
        receipt.update(self.spec.receipt_extra)
        if self.api_input_tokens is not None:
            receipt["api_input_tokens"] = self.api_input_tokens
        usage = self.result.usage.as_dict() if self.result else {}
        known = self.result.cost_known if self.result else True
        receipt.update({"stage": self.spec.stage, "backend": self.backend, "model": self.model,
                        "usage": usage, "cost_usd": str(self.result.cost_usd) if self.result else "0",
                        # the amount is in ``currency``; "unknown" when the model has no price
                        "cost": (str(self.result.cost_usd) if self.result else "0") if known else "unknown",
                        "currency": self.result.currency if self.result else "USD",
                        "usage_counted_by": self.result.usage_source if self.result else "",
                        "duration_ms": self.result.duration_ms if self.result else 0,
                        "request_id": self.result.request_id if self.result else "",
                        "reused_stored_output": self.reused, "plugin_ms": self.timings_ms, "notes": self.notes})
        return receipt


class Plugin(Protocol):
    name: str

    def run(self, ctx: CallContext) -> None: ...


class Planner:
    name = "planner"

    def run(self, ctx: CallContext) -> None:
        family = ctx.spec.stage.split(":", 1)[0]
        try:
            ctx.backend, ctx.model = resolve(ctx.spec.stage, ctx.spec.stage_models)
        except ProviderConfigError as exc:  # a model the site does not offer: no retry can help
            raise LLMPermanentError(f"{ctx.spec.stage}: {exc}") from exc
        ctx.budget = ctx.spec.budget or DEFAULT_BUDGETS.get(family, 12_000)
        ctx.max_output_tokens = MAX_OUTPUT_TOKENS.get(family, 4_000)


class SkeinBuilder:
    name = "skein_builder"

    def run(self, ctx: CallContext) -> None:
        ctx.skein = ctx.spec.build_skein(ctx.spec.slice)


class TemplateRenderer:
    name = "template_renderer"

    def run(self, ctx: CallContext) -> None:
        context = dict(ctx.spec.template_context)

        def render(block: PromptBlock) -> PromptBlock:
            if block.template is None:
                return block
            return replace(block, content=render_string(block.template, context), template=None)

        ctx.skein = ctx.skein.map(render)


class Assembler:
    name = "assembler"

    def run(self, ctx: CallContext) -> None:
        head = sum(block.tokens for block in ctx.skein.system if block.cache_break and block.content)
        ctx.budget += head
        ctx.assembled = assemble(ctx.skein, budget=ctx.budget)
        ctx.notes += [f"trimmed {t.name}: {t.action} ({t.tokens_before}→{t.tokens_after})"
                      for t in ctx.assembled.trimmed]


_capturing: ContextVar[bool] = ContextVar("jacquard_capturing_requests", default=False)


class RequestCaptured(Exception):  # noqa: N818 (not an error: how a captured request leaves the stage)
    """Raised by the Invoker instead of calling the model while ``capture_requests`` is active."""

    def __init__(self, request: LLMRequest, receipt: dict[str, Any]) -> None:
        super().__init__(f"{request.stage}: request captured, not sent")
        self.request, self.receipt = request, receipt


@contextmanager
def capture_requests() -> Iterator[None]:
    """Within this block a stage builds its request exactly as it would and stops at the model's
    door (``RequestCaptured``): what ``novel prompt`` shows, with no call, no cost, nothing stored."""
    token = _capturing.set(True)
    try:
        yield
    finally:
        _capturing.reset(token)


class Invoker:
    name = "invoker"

    def __init__(self, store: CallStore | None = None) -> None:
        self.store = store

    def run(self, ctx: CallContext) -> None:
        request = LLMRequest(model=ctx.model, system=ctx.assembled.system, messages=ctx.assembled.messages,
                             max_output_tokens=ctx.max_output_tokens, stage=ctx.spec.stage,
                             stream=ctx.spec.on_text is not None, slice=ctx.spec.slice, seed_key=ctx.spec.seed_key,
                             cache_ttl=ctx.spec.cache_ttl)
        if _capturing.get():  # a preview (``novel prompt``): the request is the result, nothing is sent
            raise RequestCaptured(request, ctx.receipt())
        stored = self.store.get(ctx.spec.call_key) if self.store else None
        if stored is not None:
            ctx.result, ctx.reused = stored, True
            return
        backend = get_backend(ctx.backend)
        if ctx.spec.count_tokens_with_api and hasattr(backend, "count_tokens"):
            ctx.api_input_tokens = backend.count_tokens(request)
        ctx.result = backend.complete(request, on_text=ctx.spec.on_text)
        if self.store:
            self.store.put(ctx.spec.call_key, ctx.result, ctx.receipt(), request)


class FilamentParserPlugin:
    name = "filament_parser"

    def run(self, ctx: CallContext) -> None:
        parsed = parse_filament(ctx.result.text, ctx.spec.tags)
        missing = [tag for tag in ctx.spec.required_tags if not parsed.texts.get(tag, "").strip()]
        # A state_update block with any error contributes no ops (filament.py): when the stage needs
        # the ops, asking again beats committing a chapter whose state changes were lost.
        state_errors = [e for e in parsed.errors if e.message.startswith("state_update")]
        if missing or (state_errors and "state_update" in ctx.spec.required_tags):
            problems = [f"missing <{tag}>" for tag in missing] + [str(e) for e in state_errors]
            raise LLMBadOutput(f"{ctx.spec.stage}: output does not follow the protocol: {'; '.join(problems)}")
        ctx.texts, ctx.ops = parsed.texts, parsed.ops
        ctx.notes += [str(warning) for warning in parsed.warnings]


class StateUpdater:
    """Turns the parsed ops into the authoritative delta and dry-runs it through the patch engine,
    so a delta the engine would refuse is caught here and the model is asked again."""

    name = "state_updater"

    def run(self, ctx: CallContext) -> None:
        if ctx.spec.delta_header is None:
            return
        ctx.delta = {**ctx.spec.delta_header, "ops": ctx.ops}
        if ctx.spec.state is not None:
            try:
                apply_delta(dict(ctx.spec.state), ctx.delta)
            except PatchError as exc:
                raise LLMBadOutput(f"{ctx.spec.stage}: the state update is refused: {exc.message}") from exc


def default_plugins(store: CallStore | None = None) -> list[Plugin]:
    return [Planner(), SkeinBuilder(), TemplateRenderer(), Assembler(), Invoker(store), FilamentParserPlugin(),
            StateUpdater()]


def run_call(spec: CallSpec, *, store: CallStore | None = None, plugins: list[Plugin] | None = None) -> CallContext:
    """Run the plugins in order and return the finished context (texts, ops, delta, receipt)."""
    ctx = CallContext(spec=spec)
    for plugin in plugins or default_plugins(store):
        started = time.perf_counter()
        plugin.run(ctx)
        ctx.timings_ms[plugin.name] = int((time.perf_counter() - started) * 1000)
    return ctx
