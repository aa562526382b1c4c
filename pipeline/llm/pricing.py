"""What a call costs, in the currency of the price that applies: the provider table's own price for
the model, else ``NOVELSITE_LLM_PRICES``, else the published list prices in novelsite/llm_prices.py.
A model without any price costs "unknown" (None), never 0.
"""
from __future__ import annotations

from decimal import Decimal

from novelsite import llm_prices
from novelsite.llm_prices import ModelPrice
from novelsite.llm_providers import Provider, providers
from pipeline.llm.types import Usage

MTOK = Decimal(1_000_000)
PLACES = Decimal("0.000001")  # LLMCall.cost_usd's decimal places

Price = ModelPrice
PRICES = llm_prices.KNOWN


def price_for(model: str, provider: Provider | None = None) -> ModelPrice | None:
    """The price of ``model`` at ``provider`` (by default the anthropic provider, whose table is the
    published one); dated model ids (``claude-sonnet-4-5-20250929``) match their family."""
    provider = provider or providers()["anthropic"]
    return provider.price(model)


ONE_HOUR_WRITE_FACTOR = 2  # an hour-long cache write costs twice the input price (5 minutes: cache_write)


def amount(price: ModelPrice, usage: Usage) -> Decimal:
    hour = min(usage.cache_creation_1h_input_tokens, usage.cache_creation_input_tokens)
    writes = ((usage.cache_creation_input_tokens - hour) * price.cache_write_price
              + hour * price.input * ONE_HOUR_WRITE_FACTOR)
    total = (usage.input_tokens * price.input + writes
             + usage.cache_read_input_tokens * price.cached_input + usage.output_tokens * price.output)
    return (total / MTOK).quantize(PLACES)


def call_cost(provider: Provider, model: str, usage: Usage) -> tuple[Decimal | None, str]:
    """(cost, currency) of one call; (None, provider currency) when the model has no price."""
    price = provider.price(model)
    if price is None:
        return None, provider.currency
    return amount(price, usage), price.currency


def cost_usd(model: str, usage: Usage) -> Decimal:
    """Cost of one call at the anthropic provider's prices (0 when unknown; kept for older callers)."""
    price = price_for(model)
    return amount(price, usage) if price is not None else Decimal(0)
