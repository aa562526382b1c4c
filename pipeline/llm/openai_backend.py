"""The ``openai`` backend: the official ``openai`` SDK against any OpenAI-compatible Chat Completions
endpoint (OpenAI, DeepSeek, Qwen/DashScope, Kimi, GLM, a local Ollama or vLLM).

System blocks become one system message, each request message one chat message (the blocks of a
message joined); empty blocks are dropped. Streaming asks the server to append a usage chunk
(``stream_options.include_usage``); a server that sends none gets its tokens counted by the
estimator, and the result says so (``usage_source``). Cached prompt tokens are read from
``prompt_tokens_details.cached_tokens`` (OpenAI, Qwen, vLLM) or ``prompt_cache_hit_tokens``
(DeepSeek). SDK failures map onto the same ``LLMError`` classes as the Anthropic backend, after the
SDK's own retries (``max_retries``, which honour ``Retry-After``) are spent.

Importing this module does not need Django; settings are read when a backend is built.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import httpx2
import openai

from pipeline.jacquard.tokens import PER_BLOCK_OVERHEAD, estimate_tokens
from pipeline.llm.types import (
    LLMConnectionError,
    LLMError,
    LLMOverloaded,
    LLMPermanentError,
    LLMRateLimited,
    LLMRequest,
    LLMResult,
    LLMServerError,
    LLMTimeout,
    LLMTruncatedStream,
    Message,
    TextBlock,
    TextCallback,
    Usage,
)

# Chat Completions finish reasons in the Messages API's words, so stages and receipts see one
# vocabulary whichever backend answered.
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal",
                "tool_calls": "tool_use", "function_call": "tool_use"}

BLOCK_SEPARATOR = "\n\n"

Pricer = Callable[[str, Usage], tuple[Decimal | None, str]]  # (cost or None when unknown, currency)


# --- request mapping -------------------------------------------------------------------------


def _joined(blocks: Sequence[TextBlock]) -> str:
    return BLOCK_SEPARATOR.join(block.text for block in blocks if block.text)


def build_messages(system: Sequence[TextBlock], messages: Sequence[Message]) -> list[dict[str, str]]:
    """The Chat Completions ``messages``: the system blocks as one system message, then the turns.

    Plain string contents (not content parts): every compatible server accepts those. Prompt
    caching on these servers is automatic and prefix-based, so the cacheable marks need no wire form.
    """
    chat: list[dict[str, str]] = []
    system_text = _joined(system)
    if system_text:
        chat.append({"role": "system", "content": system_text})
    for message in messages:
        text = _joined(message.blocks)
        if text:
            chat.append({"role": message.role, "content": text})
    return chat


def estimated_input_tokens(chat: Sequence[dict[str, str]]) -> int:
    return sum(estimate_tokens(item["content"]) + PER_BLOCK_OVERHEAD for item in chat)


# --- response mapping ------------------------------------------------------------------------


def _extra(model: Any, name: str) -> Any:
    value = getattr(model, name, None)
    if value is None:
        value = (getattr(model, "model_extra", None) or {}).get(name)
    return value


def usage_from(usage: Any) -> Usage:
    """The ``Usage`` of a Chat Completions usage object: cached prompt tokens count as cache reads,
    the rest of the prompt as input."""
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = int((getattr(details, "cached_tokens", 0) if details is not None else 0) or 0)
    if not cached:
        cached = int(_extra(usage, "prompt_cache_hit_tokens") or 0)  # DeepSeek's name
    cached = min(cached, prompt)
    return Usage(input_tokens=prompt - cached, output_tokens=completion, cache_read_input_tokens=cached)


# --- error mapping ---------------------------------------------------------------------------


def _error_class_for_status(status: int) -> type[LLMError]:
    if status == 429:
        return LLMRateLimited
    if status in (503, 529):
        return LLMOverloaded
    if status == 408:
        return LLMTimeout
    if status == 409 or status >= 500:
        return LLMServerError
    return LLMPermanentError


def map_error(exc: BaseException, request_id: str = "", *, streaming: bool = False) -> LLMError:
    """The ``LLMError`` for an SDK or transport failure; the caller raises it ``from exc``.

    ``streaming``: the reply had begun, so a broken connection means a truncated stream.
    """
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        error_class = _error_class_for_status(status)
        return error_class(f"OpenAI-compatible API error {status}: {exc.message}", status_code=status,
                           request_id=exc.request_id or request_id)
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):  # before its base class
        return LLMTimeout(f"OpenAI-compatible API timed out: {exc}", request_id=request_id)
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
        if streaming:
            return LLMTruncatedStream(f"OpenAI-compatible stream broke off: {exc!r}", request_id=request_id)
        return LLMConnectionError(f"OpenAI-compatible API unreachable: {exc}", request_id=request_id)
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMServerError(f"OpenAI-compatible API returned invalid data: {exc}", status_code=exc.status_code,
                              request_id=request_id)
    if isinstance(exc, openai.APIError):
        # An error object inside a 200 stream: the server gave up mid-reply.
        return LLMServerError(f"OpenAI-compatible stream reported an error: {exc.message}", request_id=request_id)
    return LLMPermanentError(f"OpenAI-compatible client error: {exc}", request_id=request_id)


_MAPPED_ERRORS = (openai.OpenAIError, httpx2.HTTPError)


def _no_price(_model: str, _usage: Usage) -> tuple[Decimal | None, str]:
    return None, ""


# --- the backend -----------------------------------------------------------------------------


class OpenAIBackend:
    """``LLMBackend`` over Chat Completions; one SDK client per instance.

    ``name`` is what receipts call the backend: the provider's name (``deepseek``) or ``openai``.
    ``price`` prices a call (the provider's table); without one the cost is unknown.
    """

    def __init__(self, *, name: str = "openai", api_key: str | None = None, base_url: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None,
                 price: Pricer | None = None) -> None:
        from django.conf import settings  # lazily, so the module imports without Django set up

        self.name = name
        self.price = price or _no_price
        self.client = openai.OpenAI(
            # Local servers (Ollama, vLLM) ignore the key, but the SDK insists on one.
            api_key=api_key or getattr(settings, "OPENAI_API_KEY", "") or "not-needed",
            base_url=base_url or getattr(settings, "OPENAI_BASE_URL", "") or None,
            timeout=timeout if timeout is not None else settings.OPENAI_TIMEOUT_SECONDS,
            max_retries=max_retries if max_retries is not None else settings.OPENAI_MAX_RETRIES,
        )

    def close(self) -> None:
        self.client.close()

    def complete(self, request: LLMRequest, on_text: TextCallback | None = None) -> LLMResult:
        chat = build_messages(request.system, request.messages)
        params: dict[str, Any] = {"model": request.model, "messages": chat, "max_tokens": request.max_output_tokens}
        started = time.monotonic()
        try:
            if request.stream:
                text, finish, usage, model, request_id = self._stream(params, on_text)
            else:
                text, finish, usage, model, request_id = self._create(params)
        except LLMError:
            raise
        except _MAPPED_ERRORS as exc:
            raise map_error(exc) from exc
        duration_ms = int((time.monotonic() - started) * 1000)
        source = "api"
        if usage is None:  # the server reported none: count what was sent and received ourselves
            source = "estimator"
            usage = Usage(input_tokens=estimated_input_tokens(chat), output_tokens=estimate_tokens(text))
        cost, currency = self.price(request.model, usage)
        return LLMResult(
            text=text,
            stop_reason=STOP_REASONS.get(finish, finish),
            usage=usage,
            cost_usd=cost if cost is not None else Decimal(0),
            duration_ms=duration_ms,
            request_id=request_id,
            model=model or request.model,
            backend=self.name,
            currency=currency or "USD",
            cost_known=cost is not None,
            usage_source=source,
        )

    def _create(self, params: dict[str, Any]) -> tuple[str, str, Usage | None, str, str]:
        raw = self.client.chat.completions.with_raw_response.create(**params)
        completion = raw.parse()
        request_id = raw.headers.get("x-request-id", "") or completion.id or ""
        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content or "") if choice is not None else ""
        finish = (choice.finish_reason or "") if choice is not None else ""
        usage = usage_from(completion.usage) if completion.usage is not None else None
        return text, finish, usage, completion.model or "", request_id

    def _stream(self, params: dict[str, Any],
                on_text: TextCallback | None) -> tuple[str, str, Usage | None, str, str]:
        """Stream one reply, feeding ``on_text``; a reply without a finish reason is truncated."""
        raw = self.client.chat.completions.with_raw_response.create(
            **params, stream=True, stream_options={"include_usage": True})
        request_id = raw.headers.get("x-request-id", "")
        stream = raw.parse()
        pieces: list[str] = []
        finish, model = "", ""
        usage: Usage | None = None
        try:
            for chunk in stream:
                request_id = request_id or chunk.id or ""
                model = model or chunk.model or ""
                if chunk.usage is not None:
                    usage = usage_from(chunk.usage)
                for choice in chunk.choices or ():
                    delta = choice.delta.content if choice.delta is not None else None
                    if delta:
                        pieces.append(delta)
                        if on_text is not None:
                            on_text(delta)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except _MAPPED_ERRORS as exc:
            raise map_error(exc, request_id, streaming=True) from exc
        finally:
            stream.close()
        if not finish:
            raise LLMTruncatedStream("OpenAI-compatible stream ended without a finish reason", request_id=request_id)
        return "".join(pieces), finish, usage, model, request_id


__all__ = ["OpenAIBackend", "build_messages", "map_error", "usage_from"]
