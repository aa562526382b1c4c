"""The ``anthropic`` backend: the official SDK (2.x), streaming, prompt caching, usage and cost.

The request's blocks map one to one onto text blocks; ``cache_control`` breakpoints go where
pipeline/llm/cache_policy.py says (the end of each run of cacheable blocks and of the book bible,
only where the prefix reaches the model's minimum cacheable length, at most 4), with the request's
lifetime (5 minutes, or an hour for batches). SDK failures are mapped
onto the ``LLMError`` hierarchy after the SDK's own retries (``max_retries``) are spent.

Importing this module does not need Django; settings are read when a backend is built.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import anthropic
import httpx2

from pipeline.llm import pricing
from pipeline.llm.cache_policy import MAX_CACHE_BREAKPOINTS, plan_cache
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

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

# An SSE ``error`` event arrives inside an HTTP 200 stream, so the SDK's exception carries status
# 200; the error type in its body says what really happened.
STATUS_BY_ERROR_TYPE: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


# --- request mapping -------------------------------------------------------------------------


def _text_param(block: TextBlock, cached: bool, ttl: str) -> dict[str, Any]:
    param: dict[str, Any] = {"type": "text", "text": block.text}
    if cached:
        param["cache_control"] = dict(EPHEMERAL) if ttl == "5m" else {**EPHEMERAL, "ttl": ttl}
    return param


def _nonempty(blocks: Iterable[TextBlock]) -> tuple[TextBlock, ...]:
    # The API rejects empty text blocks (400); an optional template block may render to nothing.
    return tuple(block for block in blocks if block.text)


def build_prompt(system: Sequence[TextBlock], messages: Sequence[Message], *, model: str,
                 ttl: str = "5m") -> dict[str, Any]:
    """``system`` and ``messages`` in the API's shape, with the cache markers placed.

    Two sections: the system blocks, then every message block in order (so a run of cacheable
    conversation turns gets a single marker at its end). The system prompt is its own section
    because it is the prefix most shared between calls: it keeps a marker of its own. A marker is
    only set where the prefix reaches the model's minimum cacheable length (cache_policy.py).
    """
    system_blocks = _nonempty(system)
    message_blocks = [_nonempty(message.blocks) for message in messages]
    marks = plan_cache(system_blocks, message_blocks, model=model, ttl=ttl).marks

    prompt: dict[str, Any] = {}
    if system_blocks:
        prompt["system"] = [_text_param(block, (0, i) in marks, ttl) for i, block in enumerate(system_blocks)]
    position = 0
    api_messages: list[dict[str, Any]] = []
    for message, blocks in zip(messages, message_blocks, strict=True):
        content = [_text_param(block, (1, position + i) in marks, ttl) for i, block in enumerate(blocks)]
        position += len(blocks)
        api_messages.append({"role": message.role, "content": content})
    prompt["messages"] = api_messages
    return prompt


# --- response mapping ------------------------------------------------------------------------


def message_text(message: Any) -> str:
    """The text of a Message: ``text`` blocks only (thinking and tool blocks are not the answer)."""
    return "".join(block.text for block in message.content if block.type == "text")


def message_usage(message: Any) -> Usage:
    usage = message.usage
    split = getattr(usage, "cache_creation", None)  # the writes by lifetime, when the API reports them
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
        cache_read_input_tokens=usage.cache_read_input_tokens or 0,
        cache_creation_1h_input_tokens=(getattr(split, "ephemeral_1h_input_tokens", 0) or 0) if split else 0,
    )


# --- error mapping ---------------------------------------------------------------------------


def _error_class_for_status(status: int) -> type[LLMError]:
    if status == 429:
        return LLMRateLimited
    if status in (503, 529):
        return LLMOverloaded
    if status == 408:
        return LLMTimeout
    if status == 409 or status >= 500:
        return LLMServerError  # 409 is a lock timeout on the API's side: the SDK retries it too
    return LLMPermanentError  # 400, 401, 402, 403, 404, 413, 422 …: asking again cannot help


def _status_of(exc: anthropic.APIStatusError) -> int:
    if exc.status_code >= 400:
        return exc.status_code
    return STATUS_BY_ERROR_TYPE.get(str(exc.type or ""), 500)


def map_error(exc: BaseException, request_id: str = "") -> LLMError:
    """The ``LLMError`` for an SDK or transport failure; the caller raises it ``from exc``."""
    if isinstance(exc, anthropic.APIStatusError):
        status = _status_of(exc)
        error_class = _error_class_for_status(status)
        return error_class(f"Anthropic API error {status}: {exc.message}", status_code=status,
                           request_id=exc.request_id or request_id)
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):  # before its base class
        return LLMTimeout(f"Anthropic API timed out: {exc}", request_id=request_id)
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMConnectionError(f"Anthropic API unreachable: {exc}", request_id=request_id)
    if isinstance(exc, httpx2.TransportError):
        # Only reached mid-stream: before the response the SDK wraps these in APIConnectionError.
        return LLMTruncatedStream(f"Anthropic stream broke off: {exc!r}", request_id=request_id)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return LLMServerError(f"Anthropic API returned invalid data: {exc}", status_code=exc.status_code,
                              request_id=request_id)
    return LLMPermanentError(f"Anthropic client error: {exc}", request_id=request_id)


_MAPPED_ERRORS = (anthropic.AnthropicError, httpx2.HTTPError)


# --- the backend -----------------------------------------------------------------------------


Pricer = Callable[[str, Usage], tuple[Decimal | None, str]]  # (cost or None when unknown, currency)


def _published_price(model: str, usage: Usage) -> tuple[Decimal | None, str]:
    price = pricing.price_for(model)
    return (pricing.amount(price, usage), price.currency) if price is not None else (None, "USD")


class AnthropicBackend:
    """``LLMBackend`` over the Anthropic Messages API; one SDK client per instance.

    ``name`` is what receipts call the provider; ``price`` prices a call (default: the published
    Anthropic prices), None meaning unknown.
    """

    name = "anthropic"

    def __init__(self, *, name: str = "anthropic", api_key: str | None = None, base_url: str | None = None,
                 timeout: float | None = None, max_retries: int | None = None,
                 price: Pricer | None = None) -> None:
        from django.conf import settings  # lazily, so the module imports without Django set up

        self.name = name
        self.price = price or _published_price
        self.client = anthropic.Anthropic(
            # An empty key becomes None: the SDK then falls back to its own credential chain.
            api_key=api_key or getattr(settings, "ANTHROPIC_API_KEY", "") or None,
            base_url=base_url or getattr(settings, "ANTHROPIC_BASE_URL", "") or None,
            timeout=timeout if timeout is not None else settings.ANTHROPIC_TIMEOUT_SECONDS,
            max_retries=max_retries if max_retries is not None else settings.ANTHROPIC_MAX_RETRIES,
        )

    def close(self) -> None:
        self.client.close()

    def complete(self, request: LLMRequest, on_text: TextCallback | None = None) -> LLMResult:
        params = self._params(request)
        started = time.monotonic()
        try:
            if request.stream:
                message, request_id = self._stream(params, on_text)
            else:
                message = self.client.messages.create(**params)
                request_id = message._request_id or ""
        except LLMError:
            raise
        except _MAPPED_ERRORS as exc:
            raise map_error(exc) from exc
        duration_ms = int((time.monotonic() - started) * 1000)
        usage = message_usage(message)
        cost, currency = self.price(request.model, usage)
        return LLMResult(
            text=message_text(message),
            stop_reason=message.stop_reason or "",
            usage=usage,
            cost_usd=cost if cost is not None else Decimal(0),
            duration_ms=duration_ms,
            request_id=request_id,
            model=message.model or request.model,
            backend=self.name,
            currency=currency or "USD",
            cost_known=cost is not None,
        )

    def count_tokens(self, request: LLMRequest) -> int:
        """Input tokens of ``request`` by the API's own tokenizer (a network call)."""
        prompt = build_prompt(request.system, request.messages, model=request.model, ttl=request.cache_ttl)
        try:
            counted = self.client.messages.count_tokens(model=request.model, **prompt)
        except _MAPPED_ERRORS as exc:
            raise map_error(exc) from exc
        return counted.input_tokens

    @staticmethod
    def _params(request: LLMRequest) -> dict[str, Any]:
        # No sampling parameters: SDK 2.x has no temperature, and the stages do not need one.
        return {"model": request.model, "max_tokens": request.max_output_tokens,
                **build_prompt(request.system, request.messages, model=request.model, ttl=request.cache_ttl)}

    def _stream(self, params: dict[str, Any], on_text: TextCallback | None) -> tuple[Any, str]:
        """Stream one reply, feeding ``on_text``; returns the final message and the request id."""
        with self.client.messages.stream(**params) as stream:
            request_id = stream.request_id or ""
            stopped = False
            try:
                for event in stream:
                    if event.type == "text" and on_text is not None:
                        on_text(event.text)  # the SDK's text event: a text_delta of a text block
                    elif event.type == "message_stop":
                        stopped = True
            except _MAPPED_ERRORS as exc:
                raise map_error(exc, request_id) from exc
            if not stopped:
                # The body ended cleanly but early: the SDK's snapshot would look like a (short)
                # complete message, so only the missing message_stop tells.
                raise LLMTruncatedStream("Anthropic stream ended before message_stop", request_id=request_id)
            return stream.get_final_message(), request_id


__all__ = ["MAX_CACHE_BREAKPOINTS", "AnthropicBackend", "build_prompt", "map_error"]
