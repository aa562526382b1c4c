"""Choosing a provider and model for a stage, and the shared backend of each provider.

The site default is ``NOVELSITE_LLM_BACKEND`` (a provider: ``offline``, ``anthropic``, ``openai`` or a
name from ``NOVELSITE_LLM_PROVIDERS``) with its default model. A project overrides per stage in
``Project.stage_models``: ``{"draft": "deepseek:deepseek-chat"}`` picks provider and model,
``{"judge": "offline"}`` a provider with its default model, ``{"refine": "claude-haiku-4-5"}`` a
model of the default provider; the key ``default`` applies to every stage without its own entry.
Providers and prices: novelsite/llm_providers.py.
"""
from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from functools import cache

from novelsite.llm_providers import BUILTIN, Provider, ProviderConfigError, providers, resolve_choice
from pipeline.llm import pricing
from pipeline.llm.types import LLMBackend, Usage

BACKENDS = ("offline", "anthropic", "openai")  # the kinds of provider


def resolve(stage: str, stage_models: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(provider name, model) for ``stage``: the stage's entry, else its family's, else ``default``,
    else the site default. Raises ``ValueError`` (a ``ProviderConfigError``) naming what is wrong."""
    stage_models = stage_models or {}
    family = stage.split(":", 1)[0]
    choice = stage_models.get(stage) or stage_models.get(family) or stage_models.get("default") or ""
    provider, model = resolve_choice(choice)
    return provider.name, model


def _pricer(provider: Provider):
    def price(model: str, usage: Usage) -> tuple[Decimal | None, str]:
        return pricing.call_cost(provider, model, usage)

    return price


# What a provider row without a key sends: something, so that neither the client nor its SDK reaches
# for a key of its own (OpenAI's and Anthropic's SDKs read OPENAI_API_KEY / ANTHROPIC_API_KEY).
NO_KEY = "not-needed"


def _api_key(provider: Provider) -> str | None:
    """The key ``provider`` is called with. The built-in providers read their own variable (or,
    without it, the SDK's credential chain, which reads the same). A row of the provider table gets
    only the variable its ``key_env`` names: the built-in key must never reach another server."""
    key = provider.api_key()
    if provider.name in BUILTIN:
        return key or None
    return key or NO_KEY


@cache
def _shared(name: str) -> LLMBackend:
    provider = providers().get(name)
    if provider is None:
        raise ProviderConfigError(f"there is no LLM provider named {name!r}")
    if provider.kind == "anthropic":
        from pipeline.llm.anthropic_backend import AnthropicBackend

        return AnthropicBackend(name=provider.name, api_key=_api_key(provider),
                                base_url=provider.base_url or None, timeout=provider.timeout,
                                max_retries=provider.max_retries, price=_pricer(provider))
    if provider.kind == "openai":
        from pipeline.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(name=provider.name, api_key=_api_key(provider),
                             base_url=provider.base_url or None, timeout=provider.timeout,
                             max_retries=provider.max_retries, price=_pricer(provider))
    from pipeline.llm.offline import OfflineBackend

    return OfflineBackend()


def get_backend(name: str) -> LLMBackend:
    """One shared client per provider and process (the SDK client pools its connections)."""
    return _shared(name)


def reset_backends() -> None:
    """Forget shared clients (tests that change settings call this)."""
    _shared.cache_clear()
