"""Skein: a prompt as ordered, prioritised blocks (seed 004 §3), woven and fitted to a budget.

A Skein keeps three chains: the system chain (fixed head), the history chain (the conversation)
and the floating chain (blocks with an injection position, stitched into the history by
``weave``). ``assemble`` then keeps the total under the stage's token budget by shortening or
dropping the lowest-priority optional blocks (never a required one), puts cacheable system blocks
first so the cached prefix is stable from chapter to chapter, and writes a receipt of what went in.
"""
from __future__ import annotations

import hashlib
from functools import cached_property
from dataclasses import dataclass, field, replace
from typing import Literal

from pipeline.jacquard.tokens import PER_BLOCK_OVERHEAD, estimate_tokens, looks_like_json
from pipeline.llm.types import Message, TextBlock

BlockRole = Literal["system", "user", "assistant"]
TRUNCATION_MARK = "……（前文从略）\n"


@dataclass(frozen=True)
class Injection:
    position: Literal["relativeToStart", "relativeToEnd"]
    depth: int


@dataclass(frozen=True)
class PromptBlock:
    name: str
    role: BlockRole
    content: str = ""
    template: str | None = None  # a Jinja2 source; rendered into ``content`` by the renderer plugin
    priority: int = 50  # higher survives longer when trimming
    injection: Injection | None = None
    cacheable: bool = False
    cache_break: bool = False  # ends a prefix shared beyond this stage (the book bible): its own breakpoint
    required: bool = False  # the contract, the instructions: never trimmed
    shrinkable: bool = False  # may be cut (keeping its end) instead of dropped
    kind: Literal["text", "json"] | None = None  # for the estimator; None = detect

    @cached_property  # estimated once per block; replace() makes a new block with its own count
    def tokens(self) -> int:
        kind = self.kind or ("json" if looks_like_json(self.content) else "text")
        return estimate_tokens(self.content, kind=kind) + PER_BLOCK_OVERHEAD


@dataclass
class Skein:
    system: list[PromptBlock] = field(default_factory=list)
    history: list[PromptBlock] = field(default_factory=list)
    floating: list[PromptBlock] = field(default_factory=list)

    def add(self, block: PromptBlock) -> Skein:
        if block.injection is not None:
            self.floating.append(block)
        elif block.role == "system":
            self.system.append(block)
        else:
            self.history.append(block)
        return self

    def blocks(self) -> list[PromptBlock]:
        return [*self.system, *self.history, *self.floating]

    def map(self, change) -> Skein:
        """A new Skein with ``change(block)`` applied to every block (used by the renderer)."""
        return Skein([change(b) for b in self.system], [change(b) for b in self.history],
                     [change(b) for b in self.floating])


def weave(skein: Skein) -> list[PromptBlock]:
    """seed 004 §3.3: clone the history, sort the floating blocks by depth and priority, inject
    each at its position, output one ordered list (system chain first).

    A block with ``relativeToEnd`` depth d goes before the d-th history block from the end (d = 0:
    after the last one); ``relativeToStart`` depth d goes before history block d. Depths are
    clamped to the history. Blocks landing on the same spot keep higher priority first, then the
    order they were added in. The input is never modified.
    """
    history = list(skein.history)
    size = len(history)

    def anchor(block: PromptBlock) -> int:
        depth = max(0, block.injection.depth)
        spot = depth if block.injection.position == "relativeToStart" else size - depth
        return min(max(spot, 0), size)

    floating = sorted(enumerate(skein.floating), key=lambda item: (anchor(item[1]), -item[1].priority, item[0]))
    woven: list[PromptBlock] = []
    pending = iter(floating)
    nxt = next(pending, None)
    for index in range(size + 1):
        while nxt is not None and anchor(nxt[1]) == index:
            woven.append(nxt[1])
            nxt = next(pending, None)
        if index < size:
            woven.append(history[index])
    return [*skein.system, *woven]


@dataclass(frozen=True)
class Trim:
    name: str
    action: Literal["dropped", "shortened"]
    tokens_before: int
    tokens_after: int
    reason: str


@dataclass(frozen=True)
class Assembled:
    system: tuple[TextBlock, ...]
    messages: tuple[Message, ...]
    blocks: tuple[PromptBlock, ...]
    trimmed: tuple[Trim, ...]
    total_tokens: int
    budget: int

    def receipt(self, *, token_counter: str = "estimator") -> dict:
        return {
            "blocks": [{"name": b.name, "role": b.role, "tokens": b.tokens, "cacheable": b.cacheable,
                        "required": b.required, "priority": b.priority} for b in self.blocks],
            "trimmed": [t.__dict__ for t in self.trimmed],
            "total_tokens": self.total_tokens,
            "budget": self.budget,
            "prompt_sha256": prompt_sha256(self.system, self.messages),
            "token_counter": token_counter,
        }


class BudgetExceeded(Exception):
    """The required blocks alone do not fit the stage's budget."""


def _shorten(block: PromptBlock, keep_tokens: int) -> PromptBlock:
    # Keep the end: for summaries and memory, the most recent part matters most.
    content = block.content
    low, high = 0, len(content)
    while low < high:  # the longest tail that fits
        middle = (low + high + 1) // 2
        if replace(block, content=TRUNCATION_MARK + content[-middle:]).tokens <= keep_tokens:
            low = middle
        else:
            high = middle - 1
    return replace(block, content=TRUNCATION_MARK + content[-low:] if low else "")


def fit_budget(blocks: list[PromptBlock], budget: int) -> tuple[list[PromptBlock], list[Trim]]:
    """Trim the lowest-priority optional blocks until the total fits ``budget``."""
    total = sum(b.tokens for b in blocks)
    if total <= budget:
        return blocks, []
    required = sum(b.tokens for b in blocks if b.required)
    if required > budget:
        names = ", ".join(f"{b.name} ({b.tokens})" for b in blocks if b.required)
        raise BudgetExceeded(f"required blocks need {required} tokens, budget is {budget}: {names}")
    kept = list(blocks)
    trims: list[Trim] = []
    victims = sorted((i for i, b in enumerate(blocks) if not b.required), key=lambda i: (blocks[i].priority, -i))
    for index in victims:
        excess = total - budget
        if excess <= 0:
            break
        block = kept[index]
        if block.shrinkable and block.tokens - excess > PER_BLOCK_OVERHEAD + 16:
            shorter = _shorten(block, block.tokens - excess)
            kept[index] = shorter
            trims.append(Trim(block.name, "shortened", block.tokens, shorter.tokens, f"over budget by {excess}"))
            total -= block.tokens - shorter.tokens
        else:
            kept[index] = None  # type: ignore[call-overload]
            trims.append(Trim(block.name, "dropped", block.tokens, 0, f"over budget by {excess}"))
            total -= block.tokens
    return [b for b in kept if b is not None], trims


def _cache_order(blocks: list[PromptBlock]) -> list[PromptBlock]:
    """System blocks: cacheable ones first (their relative order kept), so the cached prefix is the
    same for every chapter; history keeps its woven order."""
    system = [b for b in blocks if b.role == "system"]
    rest = [b for b in blocks if b.role != "system"]
    return [*[b for b in system if b.cacheable], *[b for b in system if not b.cacheable], *rest]


def _messages(blocks: list[PromptBlock]) -> tuple[Message, ...]:
    """Consecutive blocks of one role become one message; the conversation starts with the user."""
    messages: list[Message] = []
    for block in blocks:
        text_block = TextBlock(block.content, block.cacheable, block.cache_break)
        if messages and messages[-1].role == block.role:
            messages[-1] = Message(block.role, (*messages[-1].blocks, text_block))
        else:
            messages.append(Message(block.role, (text_block,)))  # type: ignore[arg-type]
    if messages and messages[0].role != "user":
        messages.insert(0, Message.of("user", "请继续。"))
    return tuple(messages)


def assemble(skein: Skein, *, budget: int) -> Assembled:
    """Weave, fit to ``budget`` and build the request parts. Template blocks must be rendered first."""
    unrendered = [b.name for b in skein.blocks() if b.template is not None and not b.content]
    if unrendered:
        raise ValueError(f"render the templates first: {', '.join(unrendered)}")
    woven = [b for b in weave(skein) if b.content]
    fitted, trims = fit_budget(woven, budget)
    ordered = _cache_order(fitted)
    system = tuple(TextBlock(b.content, b.cacheable, b.cache_break) for b in ordered if b.role == "system")
    messages = _messages([b for b in ordered if b.role != "system"])
    return Assembled(system, messages, tuple(ordered), tuple(trims), sum(b.tokens for b in ordered), budget)


def prompt_sha256(system: tuple[TextBlock, ...], messages: tuple[Message, ...]) -> str:
    digest = hashlib.sha256()
    for block in system:
        digest.update(b"S\x00" + block.text.encode() + b"\x00")
    for message in messages:
        for block in message.blocks:
            digest.update(message.role.encode() + b"\x00" + block.text.encode() + b"\x00")
    return digest.hexdigest()
