"""What a call costs: USD per million tokens by model, for input, cache writes, cache reads and
output, with the date the prices took effect. Override or extend with the setting
``NOVELSITE_LLM_PRICES = {"model": {"input": 3, "cache_write": 3.75, "cache_read": 0.3, "output": 15}}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from pipeline.llm.types import Usage

MTOK = Decimal(1_000_000)


@dataclass(frozen=True)
class Price:
    input: Decimal
    cache_write: Decimal  # 5-minute cache writes cost 1.25 x input
    cache_read: Decimal  # cache hits cost 0.1 x input
    output: Decimal
    effective: str


def _price(input_: str, output: str, effective: str, *, cache_read: str | None = None) -> Price:
    base = Decimal(input_)
    read = Decimal(cache_read) if cache_read is not None else base * Decimal("0.1")
    return Price(base, base * Decimal("1.25"), read, Decimal(output), effective)


# Anthropic list prices per MTok (platform.claude.com pricing page, checked 2026-11-22); a dated
# model id (claude-sonnet-5-5-20260901) takes its family's row. The offline backend costs nothing.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": _price("10", "50", "2026-09-01", cache_read="0.25"),
    "claude-mythos-5-1": _price("10", "50", "2026-09-01", cache_read="0.25"),
    "claude-fable-5": _price("10", "50", "2026-05-01", cache_read="1"),
    "claude-mythos-5": _price("10", "50", "2026-05-01", cache_read="1"),
    "claude-opus-5-5": _price("4", "20", "2026-10-07", cache_read="0.20"),
    "claude-opus-5": _price("5", "25", "2026-05-01"),
    "claude-opus-4-8": _price("5", "25", "2026-04-01"),
    "claude-opus-4-7": _price("5", "25", "2026-03-01"),
    "claude-opus-4-6": _price("5", "25", "2026-01-01"),
    "claude-opus-4-5": _price("5", "25", "2025-11-24"),
    "claude-opus-4-1": _price("15", "75", "2025-08-05"),
    "claude-sonnet-5-5": _price("2", "10", "2026-10-07", cache_read="0.10"),
    "claude-sonnet-5": _price("2", "10", "2026-05-01", cache_read="0.20"),
    "claude-sonnet-4-6": _price("3", "15", "2026-01-01"),
    "claude-sonnet-4-5": _price("3", "15", "2025-09-29"),
    "claude-sonnet-4": _price("3", "15", "2025-05-22"),
    "claude-haiku-5-5": _price("0.10", "0.50", "2026-10-07", cache_read="0.01"),  # prompts up to 100K tokens
    "claude-haiku-4-5": _price("1", "5", "2025-10-15"),
    "claude-3-5-haiku": _price("0.80", "4", "2024-10-22"),
    "offline": Price(Decimal(0), Decimal(0), Decimal(0), Decimal(0), "2026-01-01"),
}


def price_for(model: str) -> Price | None:
    """The price of ``model``; dated model ids (``claude-sonnet-4-5-20250929``) match their family."""
    from django.conf import settings

    table = dict(PRICES)
    for name, values in getattr(settings, "NOVELSITE_LLM_PRICES", {}).items():
        base = Decimal(str(values["input"]))
        table[name] = Price(base, Decimal(str(values.get("cache_write", base * Decimal("1.25")))),
                            Decimal(str(values.get("cache_read", base * Decimal("0.1")))),
                            Decimal(str(values["output"])), str(values.get("effective", "")))
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name)]
    return table[max(matches, key=len)] if matches else None


def cost_usd(model: str, usage: Usage) -> Decimal:
    """Cost of one call; an unknown model costs 0 (and the receipt says which price was used)."""
    price = price_for(model)
    if price is None:
        return Decimal(0)
    total = (usage.input_tokens * price.input + usage.cache_creation_input_tokens * price.cache_write
             + usage.cache_read_input_tokens * price.cache_read + usage.output_tokens * price.output)
    return (total / MTOK).quantize(Decimal("0.000001"))
