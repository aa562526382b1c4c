"""Where a request's prompt-cache breakpoints go, and whether its stable prefix can be cached at all.

A cache breakpoint asks the API to cache the whole prefix up to it. Below the model's minimum
cacheable length the API silently caches nothing, so a breakpoint is only set where the prefix up
to it reaches that minimum (issue #17 §4). The blocks say which part of the prompt is stable
(``TextBlock.cacheable``) and where a shared prefix ends (``TextBlock.cache_break``, the end of the
book bible that every chapter stage opens with); this module decides, from the model, which of
those points get a marker. The anthropic backend writes the markers; the receipt records the plan.

ORM-free; token counts are the estimator's (pipeline/jacquard/tokens.py), as everywhere else.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.jacquard.tokens import PER_BLOCK_OVERHEAD, estimate_tokens, looks_like_json
from pipeline.llm.types import Message, TextBlock

MAX_CACHE_BREAKPOINTS = 4  # the Messages API rejects a request with more
CACHE_TTLS = ("5m", "1h")  # the API's two lifetimes; 5 minutes unless a setting asks for the hour

# The minimum cacheable prefix by model family, in tokens: the longest matching prefix of the model
# id wins. Anthropic's published figures (prompt-caching docs), and OpenAI's automatic prefix cache
# (1024). An unknown model takes the commonest figure.
MIN_CACHEABLE_TOKENS: dict[str, int] = {
    "claude-opus-5": 512,
    "claude-sonnet-5": 1024,
    "claude-opus-4-8": 1024,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-sonnet-4-6": 2048,
    "claude-sonnet-4": 1024,
    "claude-haiku-4": 4096,
    "claude-3-7-sonnet": 1024,
    "claude-3-5-sonnet": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
    "claude-3-opus": 1024,
    "gpt-": 1024,
    "o1": 1024,
    "o3": 1024,
    "o4": 1024,
}
DEFAULT_MIN_CACHEABLE_TOKENS = 1024


def min_cacheable_tokens(model: str) -> int:
    """The model's minimum cacheable prefix (``claude-sonnet-5-5-20260101`` takes its family's row)."""
    name = model.lower().split(":", 1)[-1]
    matches = [prefix for prefix in MIN_CACHEABLE_TOKENS if name.startswith(prefix)]
    return MIN_CACHEABLE_TOKENS[max(matches, key=len)] if matches else DEFAULT_MIN_CACHEABLE_TOKENS


def block_tokens(block: TextBlock) -> int:
    if not block.text:
        return 0
    return estimate_tokens(block.text, kind="json" if looks_like_json(block.text) else "text") + PER_BLOCK_OVERHEAD


@dataclass(frozen=True)
class CachePlan:
    """The breakpoints of one request as (section, index) pairs (section 0: the system blocks,
    section 1: the message blocks in order), and what the receipt says about them."""

    marks: frozenset[tuple[int, int]]
    prefix_tokens: int  # the stable prefix: tokens up to the last cacheable block before the first volatile one
    min_tokens: int
    ttl: str

    @property
    def cacheable(self) -> bool:
        return bool(self.marks)

    def receipt(self) -> dict:
        return {"cacheable": self.cacheable, "prefix_tokens": self.prefix_tokens, "min_tokens": self.min_tokens,
                "breakpoints": len(self.marks), "ttl": self.ttl}


def _candidates(sections: Sequence[Sequence[TextBlock]]) -> list[tuple[int, int, int]]:
    """(section, index, tokens of the prefix up to and including it) for every point a marker may go:
    the last block of a run of cacheable blocks, and any cacheable block that ends a shared prefix."""
    points, running = [], 0
    for section, blocks in enumerate(sections):
        for index, block in enumerate(blocks):
            running += block_tokens(block)
            next_cacheable = index + 1 < len(blocks) and blocks[index + 1].cacheable
            if block.cacheable and (block.cache_break or not next_cacheable):
                points.append((section, index, running))
    return points


def _stable_prefix(sections: Sequence[Sequence[TextBlock]]) -> int:
    total = 0
    for blocks in sections:
        for block in blocks:
            if not block.cacheable:
                return total
            total += block_tokens(block)
    return total


def plan_cache(system: Sequence[TextBlock], messages: Sequence[Sequence[TextBlock]] | Sequence[Message], *,
               model: str, ttl: str = "5m") -> CachePlan:
    """Where the markers go for ``model``: only at points whose prefix reaches the model's minimum;
    past the API's limit of 4, the last ones win (they mark the longest prefixes, which save the most).
    Empty blocks are left out, as the backends leave them out of the request."""
    flat = [block for item in messages for block in (item.blocks if isinstance(item, Message) else item)]
    sections = [[b for b in system if b.text], [b for b in flat if b.text]]
    minimum = min_cacheable_tokens(model)
    points = [(section, index) for section, index, prefix in _candidates(sections) if prefix >= minimum]
    return CachePlan(frozenset(points[-MAX_CACHE_BREAKPOINTS:]), _stable_prefix(sections), minimum,
                     ttl if ttl in CACHE_TTLS else "5m")
