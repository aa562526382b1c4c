"""The openai backend end to end: the real ``openai`` SDK against the fake Chat Completions server in
tests/fake_openai.py (the counterpart of tests/test_llm_anthropic.py).

Nothing of the SDK is mocked. Backends use max_retries=0 except in the retry tests; the fake's
429 carries ``Retry-After: 0.01``, so SDK retries cost ~10 ms.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import openai
import pytest

from pipeline.llm.openai_backend import OpenAIBackend, build_messages
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
    Usage,
)
from tests import fake_openai as fo
from tests.fake_anthropic import estimate_tokens

MODEL = "deepseek-chat"
SYSTEM_TEXT = "你是一位擅长连载网络小说的作者。" * 60


def make_request(*, stream: bool = True, system: tuple[TextBlock, ...] | None = None,
                 messages: tuple[Message, ...] | None = None, max_output_tokens: int = 512) -> LLMRequest:
    return LLMRequest(
        model=MODEL,
        system=system if system is not None else (TextBlock(SYSTEM_TEXT, cacheable=True),),
        messages=messages if messages is not None else (Message.of("user", "写第一章的开头。"),),
        max_output_tokens=max_output_tokens, stage="ChapterWriter", stream=stream)


def yuan(_model: str, usage: Usage) -> tuple[Decimal | None, str]:
    """A provider table's price: 2 / 0.5 / 8 per million input / cached / output tokens, in CNY."""
    total = usage.input_tokens * 2 + usage.cache_read_input_tokens * Decimal("0.5") + usage.output_tokens * 8
    return Decimal(total) / 1_000_000, "CNY"


@pytest.fixture
def make_backend(fake_openai: fo.FakeOpenAI) -> Iterator:
    backends: list[OpenAIBackend] = []

    def make(**overrides: object) -> OpenAIBackend:
        options: dict = {"name": "deepseek", "api_key": "sk-test", "base_url": fake_openai.base_url,
                         "timeout": 5.0, "max_retries": 0, "price": yuan, **overrides}
        backends.append(OpenAIBackend(**options))
        return backends[-1]

    yield make
    for backend in backends:
        backend.close()


@pytest.fixture
def backend(make_backend) -> OpenAIBackend:
    return make_backend()


# --- the happy paths -------------------------------------------------------------------------


def test_create_returns_text_usage_cost_currency_and_request_id(backend, fake_openai):
    result = backend.complete(make_request(stream=False))

    assert result.text == fo.DEFAULT_REPLY
    assert result.stop_reason == "end_turn"
    assert result.backend == "deepseek" and result.model == MODEL
    assert result.usage.output_tokens == estimate_tokens(fo.DEFAULT_REPLY)
    assert result.usage.input_tokens > 0 and result.usage_source == "api"
    assert result.cost_usd > 0 and result.currency == "CNY" and result.cost_known
    assert result.request_id.startswith("req_fake_")
    sent = fake_openai.chat_requests[0].body
    assert "stream" not in sent and sent["max_tokens"] == 512 and sent["model"] == MODEL
    assert fake_openai.chat_requests[0].headers["authorization"] == "Bearer sk-test"


def test_stream_with_usage_chunk_feeds_every_delta(backend, fake_openai):
    deltas: list[str] = []
    result = backend.complete(make_request(), on_text=deltas.append)

    assert len(deltas) > 3
    assert "".join(deltas) == result.text == fo.DEFAULT_REPLY
    assert result.usage_source == "api"
    assert result.usage.output_tokens == estimate_tokens(fo.DEFAULT_REPLY)
    assert result.request_id.startswith("req_fake_")
    sent = fake_openai.chat_requests[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


def test_stream_without_usage_chunk_counts_with_the_estimator(backend, fake_openai):
    fake_openai.stream_usage = False  # a server that ignores stream_options
    result = backend.complete(make_request())

    assert result.text == fo.DEFAULT_REPLY
    assert result.usage_source == "estimator"
    assert result.usage.output_tokens == estimate_tokens(fo.DEFAULT_REPLY)
    assert result.usage.input_tokens >= estimate_tokens(SYSTEM_TEXT)
    assert result.cost_usd > 0  # priced all the same


def test_system_and_user_blocks_become_messages(backend, fake_openai):
    system = (TextBlock("规则甲", True), TextBlock(""), TextBlock("规则乙"))
    messages = (Message("user", (TextBlock("前情", True), TextBlock("本章要求"))),
                Message("assistant", (TextBlock("好的。"),)), Message.of("user", "续写"))
    backend.complete(make_request(system=system, messages=messages))

    sent = fake_openai.chat_requests[0].body["messages"]
    assert sent == [{"role": "system", "content": "规则甲\n\n规则乙"},
                    {"role": "user", "content": "前情\n\n本章要求"},
                    {"role": "assistant", "content": "好的。"}, {"role": "user", "content": "续写"}]
    assert build_messages((), (Message.of("user", ""),)) == []


def test_max_tokens_stop_reason(backend):
    result = backend.complete(make_request(max_output_tokens=5))
    assert result.stop_reason == "max_tokens"
    assert result.usage.output_tokens <= 5


@pytest.mark.parametrize("stream", [True, False])
def test_refused_content_is_a_refusal(backend, fake_openai, stream):
    fake_openai.finish_reason = "content_filter"
    assert backend.complete(make_request(stream=stream)).stop_reason == "refusal"


@pytest.mark.parametrize("deepseek", [False, True], ids=["openai-details", "deepseek-hit-tokens"])
def test_second_request_with_the_same_system_prompt_reads_the_cache(backend, fake_openai, deepseek):
    fake_openai.deepseek_usage = deepseek
    first = backend.complete(make_request())
    second = backend.complete(make_request(messages=(Message.of("user", "写第二章的开头。"),)))

    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens > estimate_tokens(SYSTEM_TEXT) - 1
    assert second.cost_usd < first.cost_usd


def test_without_a_price_the_cost_is_unknown_not_zero(make_backend):
    result = make_backend(price=None).complete(make_request())
    assert result.cost_known is False


# --- errors ----------------------------------------------------------------------------------

HTTP_FAULTS = [
    (fo.RATE_LIMITED, LLMRateLimited, 429),
    (fo.UNAVAILABLE, LLMOverloaded, 503),
    (fo.SERVER_ERROR, LLMServerError, 500),
    (fo.BAD_REQUEST, LLMPermanentError, 400),
    (fo.UNAUTHORIZED, LLMPermanentError, 401),
    (fo.NOT_FOUND, LLMPermanentError, 404),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
@pytest.mark.parametrize(("fault", "error_class", "status"), HTTP_FAULTS, ids=[str(f[2]) for f in HTTP_FAULTS])
def test_http_errors_map_to_llm_errors(backend, fake_openai, fault, error_class, status, stream):
    fake_openai.add_fault(fault)
    with pytest.raises(error_class) as caught:
        backend.complete(make_request(stream=stream))

    error = caught.value
    assert error.status_code == status
    assert error.request_id.startswith("req_fake_")
    assert isinstance(error.__cause__, openai.APIStatusError)
    assert error.retryable is (status >= 429)
    assert len(fake_openai.chat_requests) == 1  # max_retries=0: no SDK retry


def test_timeout_before_the_reply_raises_llm_timeout_quickly(make_backend, fake_openai):
    backend = make_backend(timeout=0.5)
    fake_openai.add_fault(fo.delay(2.0))
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as caught:
        backend.complete(make_request(stream=False))
    assert time.monotonic() - started < 1.5
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)


def test_slow_stream_past_the_timeout_raises_llm_timeout(make_backend, fake_openai):
    backend = make_backend(timeout=0.5)
    fake_openai.add_fault(fo.stall(2.0, after_deltas=2))
    deltas: list[str] = []
    started = time.monotonic()
    with pytest.raises(LLMTimeout) as caught:
        backend.complete(make_request(), on_text=deltas.append)
    assert time.monotonic() - started < 1.5
    assert len(deltas) == 2
    assert caught.value.retryable


def test_connection_refused_raises_llm_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAIBackend(api_key="sk-test", base_url=f"http://127.0.0.1:{port}/v1", timeout=2.0, max_retries=0)
    try:
        with pytest.raises(LLMConnectionError) as caught:
            backend.complete(make_request())
    finally:
        backend.close()
    assert isinstance(caught.value.__cause__, openai.APIConnectionError)
    assert caught.value.retryable


def test_server_dropping_the_connection_is_a_connection_error(backend, fake_openai):
    fake_openai.add_fault(fo.DISCONNECT)
    with pytest.raises(LLMConnectionError):
        backend.complete(make_request())


@pytest.mark.parametrize("abrupt", [True, False], ids=["connection-dropped", "body-ended-early"])
def test_cut_stream_raises_llm_truncated_stream(backend, fake_openai, abrupt):
    fake_openai.add_fault(fo.truncated_stream(after_deltas=2, abrupt=abrupt))
    deltas: list[str] = []
    with pytest.raises(LLMTruncatedStream) as caught:
        backend.complete(make_request(), on_text=deltas.append)

    assert len(deltas) == 2
    assert caught.value.request_id.startswith("req_fake_")
    assert caught.value.retryable


def test_error_object_mid_stream_is_a_server_error(backend, fake_openai):
    fake_openai.add_fault(fo.stream_error(after_deltas=1))
    with pytest.raises(LLMServerError) as caught:
        backend.complete(make_request())
    assert caught.value.retryable


# --- the SDK's own retries -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
@pytest.mark.parametrize("fault", [fo.RATE_LIMITED, fo.SERVER_ERROR], ids=["429-retry-after", "500"])
def test_sdk_retries_first_then_succeeds(make_backend, fake_openai, stream, fault):
    backend = make_backend(max_retries=2)
    fake_openai.fail_next(1, fault)
    result = backend.complete(make_request(stream=stream))

    assert result.text == fo.DEFAULT_REPLY
    sent = fake_openai.chat_requests
    assert [request.headers["x-stainless-retry-count"] for request in sent] == ["0", "1"]


def test_retry_after_is_honoured(make_backend, fake_openai):
    backend = make_backend(max_retries=1)
    fake_openai.add_fault(fo.http_fault(429, retry_after="0.6"))
    started = time.monotonic()
    backend.complete(make_request())
    assert time.monotonic() - started >= 0.55  # the server's wait, not the SDK's own backoff


def test_sdk_gives_up_after_max_retries(make_backend, fake_openai):
    backend = make_backend(max_retries=2)
    fake_openai.fail_next(3, fo.RATE_LIMITED)
    with pytest.raises(LLMRateLimited):
        backend.complete(make_request())
    assert len(fake_openai.chat_requests) == 3


# --- construction ----------------------------------------------------------------------------


def test_defaults_come_from_settings(settings, fake_openai):
    settings.OPENAI_API_KEY = "sk-from-settings"
    settings.OPENAI_BASE_URL = fake_openai.base_url
    settings.OPENAI_TIMEOUT_SECONDS = 7.0
    settings.OPENAI_MAX_RETRIES = 1
    backend = OpenAIBackend()
    try:
        assert backend.client.max_retries == 1 and backend.client.timeout == 7.0
        result = backend.complete(make_request())
    finally:
        backend.close()
    assert result.backend == "openai" and result.cost_known is False
    assert fake_openai.chat_requests[0].headers["authorization"] == "Bearer sk-from-settings"


def test_module_imports_without_django_configured():
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    code = "import pipeline.llm.openai_backend as m; print(m.OpenAIBackend.__name__)"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OpenAIBackend"
