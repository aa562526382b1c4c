"""The anthropic backend end to end: the real SDK (2.x) against the fake API in tests/fake_anthropic.py.

Nothing of the SDK is mocked; the fake speaks the wire format. Backends use max_retries=0 except in
the retry tests, and the fake answers errors with ``retry-after-ms: 1``, so SDK retries cost ~1 ms.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from pipeline.llm.anthropic_backend import MAX_CACHE_BREAKPOINTS, AnthropicBackend, build_prompt
from pipeline.llm.cache_policy import min_cacheable_tokens, plan_cache
from pipeline.llm.types import (
    LLMConnectionError,
    LLMOverloaded,
    LLMPermanentError,
    LLMRateLimited,
    LLMRequest,
    LLMServerError,
    LLMTimeout,
    LLMTruncatedStream,
    Message,
    TextBlock,
)
from tests import fake_anthropic as fa

# SDK 2.12 flags claude-sonnet-4-5 as deprecated (end of life 2026-11-30); the project still uses it.
pytestmark = pytest.mark.filterwarnings("ignore:The model 'claude-sonnet-4-5' is deprecated:DeprecationWarning")

MODEL = "claude-sonnet-4-5"
SYSTEM_TEXT = "你是一位擅长连载网络小说的作者。" * 120  # ~2000 tokens: big enough for visible cache costs
LONG = "规则" * 600  # 1200 tokens: past the model's minimum cacheable prefix (1024)


def make_request(*, stream: bool = True, system: tuple[TextBlock, ...] | None = None,
                 messages: tuple[Message, ...] | None = None, max_output_tokens: int = 512,
                 cache_ttl: str = "5m") -> LLMRequest:
    return LLMRequest(
        model=MODEL,
        system=system if system is not None else (TextBlock(SYSTEM_TEXT, cacheable=True),),
        messages=messages if messages is not None else (Message.of("user", "写第一章的开头。"),),
        max_output_tokens=max_output_tokens,
        stage="ChapterWriter",
        stream=stream,
        cache_ttl=cache_ttl,
    )


@pytest.fixture
def make_backend(fake_anthropic: fa.FakeAnthropic) -> Iterator:
    backends: list[AnthropicBackend] = []

    def make(**overrides: object) -> AnthropicBackend:
        options: dict = {"api_key": "sk-test", "base_url": fake_anthropic.base_url, "timeout": 5.0,
                         "max_retries": 0, **overrides}
        backends.append(AnthropicBackend(**options))
        return backends[-1]

    yield make
    for backend in backends:
        backend.close()


@pytest.fixture
def backend(make_backend) -> AnthropicBackend:
    return make_backend()


def cache_marks(body: dict) -> list[str]:
    """The texts of the blocks that carry cache_control, in prompt order."""
    blocks = list(body.get("system", []))
    for message in body["messages"]:
        blocks.extend(message["content"])
    return [block["text"] for block in blocks if "cache_control" in block]


# --- the happy paths -------------------------------------------------------------------------


def test_create_returns_text_usage_cost_and_request_id(backend, fake_anthropic):
    result = backend.complete(make_request(stream=False))

    assert result.text == fa.DEFAULT_REPLY
    assert result.stop_reason == "end_turn"
    assert result.backend == "anthropic" and result.model == MODEL
    assert result.usage.output_tokens == fa.estimate_tokens(fa.DEFAULT_REPLY)
    assert result.usage.cache_creation_input_tokens > 0  # the cacheable system prompt was written
    assert result.usage.input_tokens > 0
    assert result.cost_usd > 0
    assert result.duration_ms >= 0
    assert result.request_id.startswith("req_fake_")
    sent = fake_anthropic.message_requests[0]
    assert "stream" not in sent.body and sent.body["max_tokens"] == 512
    assert "temperature" not in sent.body


def test_stream_feeds_on_text_with_every_delta(backend, fake_anthropic):
    deltas: list[str] = []
    result = backend.complete(make_request(), on_text=deltas.append)

    assert len(deltas) > 3
    assert "".join(deltas) == result.text == fa.DEFAULT_REPLY
    assert result.request_id.startswith("req_fake_")
    assert result.usage.output_tokens == fa.estimate_tokens(fa.DEFAULT_REPLY)
    assert result.cost_usd > 0
    assert fake_anthropic.message_requests[0].body["stream"] is True


def test_reply_is_configurable_per_request(backend, fake_anthropic):
    fake_anthropic.reply = lambda body: "回声：" + body["messages"][-1]["content"][0]["text"]
    assert backend.complete(make_request()).text == "回声：写第一章的开头。"


def test_max_tokens_stop_reason(backend):
    result = backend.complete(make_request(max_output_tokens=5))
    assert result.stop_reason == "max_tokens"
    assert result.usage.output_tokens <= 5


@pytest.mark.parametrize("stream", [True, False])
def test_text_comes_only_from_text_blocks(backend, fake_anthropic, stream):
    fake_anthropic.thinking = "先想想主角的动机……"
    deltas: list[str] = []
    result = backend.complete(make_request(stream=stream), on_text=deltas.append)

    assert result.text == fa.DEFAULT_REPLY
    assert "主角的动机" not in "".join(deltas)


def test_count_tokens_uses_the_api(backend, fake_anthropic):
    request = make_request()
    counted = backend.count_tokens(request)

    expected = fa.estimate_tokens(SYSTEM_TEXT) + fa.estimate_tokens("写第一章的开头。")
    assert counted == expected
    sent = fake_anthropic.requests[-1]
    assert sent.path == "/v1/messages/count_tokens"
    assert sent.body["system"] == build_prompt(request.system, request.messages, model=MODEL)["system"]


# --- prompt caching --------------------------------------------------------------------------


def test_cache_control_goes_on_the_last_block_of_each_cacheable_run(backend, fake_anthropic):
    system = (TextBlock(LONG, True), TextBlock("规则乙", True), TextBlock("今日提示"))
    messages = (
        Message("user", (TextBlock("前情一", True), TextBlock("前情二", True))),
        Message("assistant", (TextBlock("好的。", True),)),
        Message("user", (TextBlock("本章要求"), TextBlock("续写", True))),
    )
    backend.complete(make_request(system=system, messages=messages))

    body = fake_anthropic.message_requests[0].body
    # A run of cacheable turns spans messages (one marker at its end); the system keeps its own.
    assert cache_marks(body) == ["规则乙", "好的。", "续写"]
    assert all(block["cache_control"] == {"type": "ephemeral"}
               for block in body["system"] if "cache_control" in block)
    assert [message["role"] for message in body["messages"]] == ["user", "assistant", "user"]


def test_never_more_than_four_breakpoints_and_the_last_ones_win(backend, fake_anthropic):
    system = tuple(TextBlock(LONG + "系统0" if i == 0 else f"系统{i}", cacheable=i % 2 == 0)
                   for i in range(6))  # runs end at 0, 2, 4
    messages = tuple(Message("user" if i % 2 == 0 else "assistant", (TextBlock(f"消息{i}", True), TextBlock("变")))
                     for i in range(3))  # three more runs
    backend.complete(make_request(system=system, messages=messages))

    marks = cache_marks(fake_anthropic.message_requests[0].body)
    assert len(marks) == MAX_CACHE_BREAKPOINTS
    assert marks == ["系统4", "消息0", "消息1", "消息2"]


def test_cache_plan_unit():
    long, cached, plain = TextBlock(LONG, True), TextBlock("a", True), TextBlock("b")
    plan = plan_cache([long, cached, plain, cached], [[cached]], model=MODEL)
    assert plan.marks == {(0, 1), (0, 3), (1, 0)} and plan.cacheable
    assert plan.receipt() == {"cacheable": True, "prefix_tokens": plan.prefix_tokens, "min_tokens": 1024,
                              "breakpoints": 3, "ttl": "5m"}
    assert plan_cache([plain, plain], [], model=MODEL).marks == set()


def test_no_breakpoint_where_the_prefix_is_below_the_models_minimum():
    short = TextBlock("只有几个字", True)
    plan = plan_cache([short], [[TextBlock("问题")]], model=MODEL)
    assert plan.marks == set() and not plan.cacheable and plan.prefix_tokens < plan.min_tokens
    # the same prefix clears the 512-token minimum of a family that caches shorter prefixes … and
    # not the 4096 of one that asks for more
    medium = TextBlock("手" * 800, True)
    assert plan_cache([medium], [], model="claude-opus-5-1").marks == {(0, 0)}
    assert plan_cache([medium], [], model="claude-haiku-4-5").marks == set()


@pytest.mark.parametrize("model, minimum", [
    ("claude-sonnet-5-5", 1024), ("claude-sonnet-4-5-20250929", 1024), ("claude-sonnet-4-6", 2048),
    ("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096), ("claude-3-5-haiku-latest", 2048),
    ("claude-opus-5", 512), ("gpt-5.1", 1024), ("deepseek:deepseek-chat", 1024), ("anything-else", 1024),
])
def test_minimum_cacheable_length_by_model_family(model, minimum):
    assert min_cacheable_tokens(model) == minimum


def test_the_book_bible_gets_a_breakpoint_of_its_own():
    """A block that ends a shared prefix (the bible) is marked even inside a run of cacheable blocks,
    so the next stage, whose role differs, still reads the bible from the cache."""
    bible = TextBlock(LONG, cacheable=True, cache_break=True)
    role = TextBlock("你是评审。", cacheable=True)
    plan = plan_cache([bible, role], [[TextBlock("本章")]], model=MODEL)
    assert plan.marks == {(0, 0), (0, 1)}


def test_a_short_stable_head_is_sent_without_markers_and_caches_nothing(backend, fake_anthropic):
    result = backend.complete(make_request(system=(TextBlock("短规则", True),)))
    body = fake_anthropic.message_requests[0].body
    assert cache_marks(body) == []
    assert result.usage.cache_creation_input_tokens == 0


def test_an_hour_long_cache_is_asked_for_and_priced_as_such(backend, fake_anthropic):
    five = backend.complete(make_request(system=(TextBlock(SYSTEM_TEXT + "甲", True),)))
    hour = backend.complete(make_request(system=(TextBlock(SYSTEM_TEXT + "乙", True),), cache_ttl="1h"))
    body = fake_anthropic.message_requests[-1].body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert hour.usage.cache_creation_1h_input_tokens == hour.usage.cache_creation_input_tokens > 0
    assert five.usage.cache_creation_1h_input_tokens == 0
    assert hour.cost_usd > five.cost_usd  # an hour's write costs 2× input, 5 minutes' 1.25×


def test_empty_blocks_are_dropped(backend, fake_anthropic):
    system = (TextBlock(LONG, True), TextBlock("", True))
    backend.complete(make_request(system=system))
    body = fake_anthropic.message_requests[0].body
    assert body["system"] == [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]


def test_second_request_with_the_same_prefix_reads_the_cache_and_costs_less(backend):
    first = backend.complete(make_request())
    second = backend.complete(make_request(messages=(Message.of("user", "写第二章的开头。"),)))

    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens > 0
    assert second.usage.cache_creation_input_tokens == 0
    assert second.cost_usd < first.cost_usd


# --- errors ----------------------------------------------------------------------------------

HTTP_FAULTS = [
    (fa.RATE_LIMITED, LLMRateLimited, 429),
    (fa.OVERLOADED, LLMOverloaded, 529),
    (fa.UNAVAILABLE, LLMOverloaded, 503),
    (fa.SERVER_ERROR, LLMServerError, 500),
    (fa.BAD_REQUEST, LLMPermanentError, 400),
    (fa.UNAUTHORIZED, LLMPermanentError, 401),
    (fa.FORBIDDEN, LLMPermanentError, 403),
    (fa.NOT_FOUND, LLMPermanentError, 404),
    (fa.TOO_LARGE, LLMPermanentError, 413),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
@pytest.mark.parametrize(("fault", "error_class", "status"), HTTP_FAULTS, ids=[str(f[2]) for f in HTTP_FAULTS])
def test_http_errors_map_to_llm_errors(backend, fake_anthropic, fault, error_class, status, stream):
    fake_anthropic.add_fault(fault)
    with pytest.raises(error_class) as caught:
        backend.complete(make_request(stream=stream))

    error = caught.value
    assert error.status_code == status
    assert error.request_id.startswith("req_fake_")
    assert isinstance(error.__cause__, anthropic.APIStatusError)
    assert error.retryable is (status >= 429)
    assert len(fake_anthropic.message_requests) == 1  # max_retries=0: no SDK retry


def test_timeout_raises_llm_timeout_quickly(make_backend, fake_anthropic):
    backend = make_backend(timeout=0.5)
    fake_anthropic.add_fault(fa.delay(2.0))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as caught:
        backend.complete(make_request(stream=False))
    assert time.monotonic() - started < 1.5
    assert isinstance(caught.value.__cause__, anthropic.APITimeoutError)


def test_connection_refused_raises_llm_connection_error():
    with socket.socket() as probe:  # a port that was free a moment ago and has nobody listening now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = AnthropicBackend(api_key="sk-test", base_url=f"http://127.0.0.1:{port}", timeout=2.0, max_retries=0)
    try:
        with pytest.raises(LLMConnectionError) as caught:
            backend.complete(make_request())
    finally:
        backend.close()
    assert isinstance(caught.value.__cause__, anthropic.APIConnectionError)
    assert caught.value.retryable


def test_server_dropping_the_connection_is_a_connection_error(backend, fake_anthropic):
    fake_anthropic.add_fault(fa.DISCONNECT)
    with pytest.raises(LLMConnectionError):
        backend.complete(make_request())


@pytest.mark.parametrize("abrupt", [True, False], ids=["connection-dropped", "body-ended-early"])
def test_truncated_stream_raises_llm_truncated_stream(backend, fake_anthropic, abrupt):
    fake_anthropic.add_fault(fa.truncated_stream(after_deltas=2, abrupt=abrupt))
    deltas: list[str] = []
    with pytest.raises(LLMTruncatedStream) as caught:
        backend.complete(make_request(), on_text=deltas.append)

    assert len(deltas) == 2  # what arrived was still passed on
    assert caught.value.request_id.startswith("req_fake_")
    assert caught.value.retryable


def test_sse_error_event_mid_stream_maps_by_its_error_type(backend, fake_anthropic):
    fake_anthropic.add_fault(fa.stream_error("overloaded_error", after_deltas=1))
    with pytest.raises(LLMOverloaded) as caught:
        backend.complete(make_request())

    # The HTTP status was 200; the error event's type decides.
    assert caught.value.status_code == 529
    assert caught.value.request_id.startswith("req_fake_")
    assert isinstance(caught.value.__cause__, anthropic.APIStatusError)


# --- the SDK's own retries -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
def test_sdk_retries_first_then_succeeds(make_backend, fake_anthropic, stream):
    backend = make_backend(max_retries=2)
    fake_anthropic.fail_next(1, fa.OVERLOADED)
    result = backend.complete(make_request(stream=stream))

    assert result.text == fa.DEFAULT_REPLY
    sent = fake_anthropic.message_requests
    assert len(sent) == 2
    assert [request.headers["x-stainless-retry-count"] for request in sent] == ["0", "1"]


def test_without_sdk_retries_overload_surfaces(make_backend, fake_anthropic):
    backend = make_backend(max_retries=0)
    fake_anthropic.fail_next(1, fa.OVERLOADED)
    with pytest.raises(LLMOverloaded):
        backend.complete(make_request())
    assert len(fake_anthropic.message_requests) == 1


def test_sdk_gives_up_after_max_retries(make_backend, fake_anthropic):
    backend = make_backend(max_retries=2)
    fake_anthropic.fail_next(3, fa.RATE_LIMITED)
    with pytest.raises(LLMRateLimited):
        backend.complete(make_request())
    assert len(fake_anthropic.message_requests) == 3


# --- construction ----------------------------------------------------------------------------


def test_defaults_come_from_settings(settings, fake_anthropic):
    settings.ANTHROPIC_API_KEY = "sk-from-settings"
    settings.ANTHROPIC_BASE_URL = fake_anthropic.base_url
    settings.ANTHROPIC_TIMEOUT_SECONDS = 7.0
    settings.ANTHROPIC_MAX_RETRIES = 1
    backend = AnthropicBackend()
    try:
        assert backend.client.max_retries == 1
        assert backend.client.timeout == 7.0
        backend.complete(make_request())
    finally:
        backend.close()
    assert fake_anthropic.message_requests[0].headers["authorization"] == "Bearer sk-from-settings"


def test_module_imports_without_django_configured():
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    code = "import pipeline.llm.anthropic_backend as m; print(m.AnthropicBackend.name)"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "anthropic"


def test_fake_shuts_down_cleanly_with_open_connections():
    fake = fa.FakeAnthropic().start()
    backend = AnthropicBackend(api_key="sk-test", base_url=fake.base_url, timeout=2.0, max_retries=0)
    try:
        backend.complete(make_request())  # leaves a keep-alive connection open
        started = time.monotonic()
        fake.stop()
        assert time.monotonic() - started < 1.0
    finally:
        fake.stop()
        backend.close()


def test_runner_receipt_says_the_real_tokenizer_counted(fake_anthropic, settings):
    """With the anthropic backend active and count_tokens asked for, the receipt carries the API's
    count and names it; otherwise it says the estimator counted."""
    from pipeline.jacquard.runner import CallSpec, run_call
    from pipeline.jacquard.skein import PromptBlock, Skein
    from pipeline.llm.backends import reset_backends

    settings.NOVELSITE_LLM_BACKEND = "anthropic"
    settings.ANTHROPIC_BASE_URL = fake_anthropic.base_url
    settings.ANTHROPIC_API_KEY = "test-key"
    settings.ANTHROPIC_MAX_RETRIES = 0
    fake_anthropic.reply = "<consolidated>x</consolidated><summary>林枫救下陈老。</summary>"
    reset_backends()
    try:
        def build(_slice):
            return Skein().add(PromptBlock("ask", "user", "合并摘要：林枫救下陈老。", required=True))

        spec = CallSpec(stage="consolidate", slice={}, build_skein=build, call_key="k", tags=["summary"],
                        required_tags=["summary"], stage_models={"default": "claude-haiku-5-5"},
                        count_tokens_with_api=True)
        receipt = run_call(spec).receipt()
        assert receipt["token_counter"] == "anthropic_count_tokens" and receipt["api_input_tokens"] > 0
        assert receipt["backend"] == "anthropic" and receipt["model"] == "claude-haiku-5-5"
        spec.count_tokens_with_api = False
        assert run_call(spec).receipt()["token_counter"] == "estimator"
    finally:
        reset_backends()
