"""The one interface every stage talks to the LLM through. ORM-free, so it tests without a database.

A request carries the rendered prompt (system blocks and messages, each block marked cacheable or
not) and, beside it, the stage name and the structured slice the prompt was built from: the offline
backend builds its deterministic output from that slice, never by parsing prompt text (DESIGN §6);
real backends ignore it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant"]


@dataclass(frozen=True)
class TextBlock:
    text: str
    cacheable: bool = False  # part of the stable prefix (pipeline/llm/cache_policy.py places the breakpoints)
    cache_break: bool = False  # a shared prefix ends here (the book bible): a breakpoint of its own


@dataclass(frozen=True)
class Message:
    role: Role
    blocks: tuple[TextBlock, ...]

    @classmethod
    def of(cls, role: Role, text: str) -> Message:
        return cls(role, (TextBlock(text),))

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.blocks)


@dataclass(frozen=True)
class LLMRequest:
    model: str
    system: tuple[TextBlock, ...]
    messages: tuple[Message, ...]
    max_output_tokens: int
    stage: str
    stream: bool = True
    slice: Mapping[str, Any] = field(default_factory=dict)  # structured input (offline backend only)
    seed_key: str = ""  # project:chapter:stage:attempt, for deterministic offline output
    cache_ttl: str = "5m"  # the prompt cache's lifetime, "5m" or "1h" (NOVELSITE_PROMPT_CACHE_TTL for batches)


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0  # of cache_creation_input_tokens, those written for an hour

    def as_dict(self) -> dict[str, int]:
        usage = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                 "cache_creation_input_tokens": self.cache_creation_input_tokens,
                 "cache_read_input_tokens": self.cache_read_input_tokens}
        if self.cache_creation_1h_input_tokens:
            usage["cache_creation_1h_input_tokens"] = self.cache_creation_1h_input_tokens
        return usage


@dataclass(frozen=True)
class LLMResult:
    text: str
    stop_reason: str  # end_turn, max_tokens, stop_sequence …
    usage: Usage
    cost_usd: Decimal
    duration_ms: int
    request_id: str
    model: str
    backend: str  # the provider that answered (``anthropic``, ``openai``, ``deepseek``, ``offline`` …)
    currency: str = "USD"  # of ``cost_usd``, which holds the amount in the provider's currency
    cost_known: bool = True  # False: no price for the model; ``cost_usd`` is then 0 and means "unknown"
    usage_source: str = "api"  # who counted the tokens: the server ("api") or the local "estimator"


TextCallback = Callable[[str], None]  # receives each streamed text delta


class LLMBackend(Protocol):
    name: str

    def complete(self, request: LLMRequest, on_text: TextCallback | None = None) -> LLMResult:
        """Run one request. Raises an ``LLMError`` subclass on failure."""
        ...


class LLMError(Exception):
    """Base of every LLM failure."""

    retryable = False

    def __init__(self, message: str, *, status_code: int | None = None, request_id: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.request_id = request_id


class LLMTransientError(LLMError):
    """Worth retrying with backoff: 429, 529, 5xx, timeouts, connection errors, a truncated stream."""

    retryable = True


class LLMRateLimited(LLMTransientError):
    """429."""


class LLMOverloaded(LLMTransientError):
    """529 or 503."""


class LLMServerError(LLMTransientError):
    """Other 5xx."""


class LLMTimeout(LLMTransientError):
    """The request or the stream took too long."""


class LLMConnectionError(LLMTransientError):
    """The endpoint could not be reached."""


class LLMTruncatedStream(LLMTransientError):
    """The stream ended before message_stop."""


class LLMBadOutput(LLMTransientError):
    """The text does not follow the stage's protocol (unparseable); asking again may fix it."""


class LLMPermanentError(LLMError):
    """Retrying cannot help: 400, 401, 403, 404, 413."""
