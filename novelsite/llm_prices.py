"""Published list prices of the models teams use, per million tokens, in the provider's currency.

Pure data, read by novelsite/llm_providers.py (a provider table row may override any entry). Each
row: input (uncached prompt tokens), cached_input (prompt tokens read from the provider's cache),
output, and for Anthropic cache_write (5-minute cache writes, 1.25 x input). A dated model id
(``claude-sonnet-4-5-20250929``) takes its family's row, the longest matching prefix.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class ModelPrice:
    input: Decimal
    cached_input: Decimal
    output: Decimal
    currency: str = "USD"
    cache_write: Decimal | None = None  # None: cache writes cost the input price (no write premium)
    effective: str = ""  # when the price took effect, or when it was read

    @property
    def cache_write_price(self) -> Decimal:
        return self.input if self.cache_write is None else self.cache_write


def _claude(input_: str, output: str, effective: str, *, cache_read: str | None = None) -> ModelPrice:
    base = Decimal(input_)
    read = Decimal(cache_read) if cache_read is not None else base * Decimal("0.1")
    return ModelPrice(base, read, Decimal(output), "USD", base * Decimal("1.25"), effective)


def _listed(currency: str, input_: str, cached: str, output: str, effective: str) -> ModelPrice:
    return ModelPrice(Decimal(input_), Decimal(cached), Decimal(output), currency, None, effective)


# Anthropic, USD (platform.claude.com pricing page, checked 2026-11-22).
ANTHROPIC: dict[str, ModelPrice] = {
    "claude-fable-5-1": _claude("10", "50", "2026-09-01", cache_read="0.25"),
    "claude-mythos-5-1": _claude("10", "50", "2026-09-01", cache_read="0.25"),
    "claude-fable-5": _claude("10", "50", "2026-05-01", cache_read="1"),
    "claude-mythos-5": _claude("10", "50", "2026-05-01", cache_read="1"),
    "claude-opus-5-5": _claude("4", "20", "2026-10-07", cache_read="0.20"),
    "claude-opus-5": _claude("5", "25", "2026-05-01"),
    "claude-opus-4-8": _claude("5", "25", "2026-04-01"),
    "claude-opus-4-7": _claude("5", "25", "2026-03-01"),
    "claude-opus-4-6": _claude("5", "25", "2026-01-01"),
    "claude-opus-4-5": _claude("5", "25", "2025-11-24"),
    "claude-opus-4-1": _claude("15", "75", "2025-08-05"),
    "claude-sonnet-5-5": _claude("2", "10", "2026-10-07", cache_read="0.10"),
    "claude-sonnet-5": _claude("2", "10", "2026-05-01", cache_read="0.20"),
    "claude-sonnet-4-6": _claude("3", "15", "2026-01-01"),
    "claude-sonnet-4-5": _claude("3", "15", "2025-09-29"),
    "claude-sonnet-4": _claude("3", "15", "2025-05-22"),
    "claude-haiku-5-5": _claude("0.10", "0.50", "2026-10-07", cache_read="0.01"),  # prompts up to 100K tokens
    "claude-haiku-4-5": _claude("1", "5", "2025-10-15"),
    "claude-3-5-haiku": _claude("0.80", "4", "2024-10-22"),
}

# DeepSeek, CNY: api-docs.deepseek.com/zh-cn/quick_start/pricing (read 2026-11-24; the page also
# lists USD). Since 2026-08-17 DeepSeek bills by time of day, off-peak at half the peak rate; a cost
# here cannot know which applied, so these are the PEAK rates: an upper bound, about twice the bill
# for work done at night. The retired id deepseek-v4-flash is billed at the Flash price. The
# deprecated aliases deepseek-chat / deepseek-reasoner are not listed: their current price could not
# be confirmed on DeepSeek's page, so they cost "unknown" unless a provider table row prices them.
DEEPSEEK: dict[str, ModelPrice] = {
    "deepseek-flash": _listed("CNY", "2", "0.04", "8", "2026-11-24"),
    "deepseek-v4-flash": _listed("CNY", "2", "0.04", "8", "2026-11-24"),
    "deepseek-v4-pro": _listed("CNY", "9", "0.30", "27", "2026-11-24"),
}

# Qwen on Alibaba Cloud Model Studio (Beijing), CNY: help.aliyun.com "AI PaaS billing rules"
# (read 2026-11-24; undated page). The lowest context tier (prompts up to 128K tokens), non-thinking
# output; longer prompts and thinking output cost more there, so these are lower bounds for those.
# qwen-turbo's output price was cut off on the page as stored: not given.
QWEN: dict[str, ModelPrice] = {
    "qwen-plus": _listed("CNY", "0.8", "0.2", "2", "2026-11-24"),
    "qwen-flash": _listed("CNY", "0.2", "0.1", "1.5", "2026-11-24"),
}

OFFLINE = ModelPrice(Decimal(0), Decimal(0), Decimal(0), "USD", Decimal(0), "2026-01-01")

KNOWN: dict[str, ModelPrice] = {**ANTHROPIC, **DEEPSEEK, **QWEN, "offline": OFFLINE}


def lookup(table: dict[str, ModelPrice], model: str) -> ModelPrice | None:
    """``model``'s row, or the row of its longest prefix (a dated id takes its family's price)."""
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name)]
    return table[max(matches, key=len)] if matches else None
