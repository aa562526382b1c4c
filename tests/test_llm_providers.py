"""Named model providers: the table in settings, provider:model per stage, prices with their
currency, and a model without a price costing "unknown" rather than 0."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import translation

from novelsite import llm_providers as lp
from pipeline.llm import pricing
from pipeline.llm.backends import get_backend, reset_backends, resolve
from pipeline.llm.types import Usage

DEEPSEEK = {"name": "deepseek", "kind": "openai", "base_url": "https://api.deepseek.com",
            "key_env": "DEEPSEEK_API_KEY", "default_model": "deepseek-chat", "currency": "CNY",
            "models": {"deepseek-chat": {"input": 2, "cached_input": 0.2, "output": 3},
                       "deepseek-reasoner": {"input": 4, "output": 16}}}
OLLAMA = {"name": "ollama", "kind": "openai", "base_url": "http://127.0.0.1:11434/v1",
          "default_model": "qwen2.5:7b", "models": ["qwen2.5:7b", "qwen3:14b"]}


@pytest.fixture(autouse=True)
def _language():
    yield
    translation.deactivate()


@pytest.fixture
def table(settings, monkeypatch):
    settings.NOVELSITE_LLM_PROVIDERS = [DEEPSEEK, OLLAMA]
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-secret")
    settings.NOVELSITE_LLM_BACKEND = "anthropic"
    settings.NOVELSITE_DEFAULT_MODEL = "claude-sonnet-5-5"
    reset_backends()
    yield settings
    reset_backends()


def test_stage_models_pick_provider_and_model(table):
    stage_models = {"draft": "deepseek:deepseek-reasoner", "judge": "ollama", "refine": "ollama:qwen3:14b",
                    "summarize": "claude-haiku-4-5", "plan": "offline"}
    assert resolve("draft", stage_models) == ("deepseek", "deepseek-reasoner")
    assert resolve("judge", stage_models) == ("ollama", "qwen2.5:7b")  # the provider's default model
    assert resolve("refine", stage_models) == ("ollama", "qwen3:14b")  # a model name with a colon
    assert resolve("summarize", stage_models) == ("anthropic", "claude-haiku-4-5")  # the default provider
    assert resolve("plan", stage_models) == ("offline", "offline")
    assert resolve("consolidate", stage_models) == ("anthropic", "claude-sonnet-5-5")  # the site default


def test_an_unknown_provider_is_a_clear_error(table):
    with translation.override("en"), pytest.raises(ValueError, match="no LLM provider named kimi"):
        resolve("draft", {"draft": "kimi:moonshot-v1"})
    with translation.override("zh-hans"), pytest.raises(ValueError, match="没有名为 kimi 的模型提供方"):
        resolve("draft", {"draft": "kimi:moonshot-v1"})


def test_the_table_prices_in_its_currency(table):
    provider = lp.providers()["deepseek"]
    cost, currency = pricing.call_cost(provider, "deepseek-chat",
                                       Usage(input_tokens=1_000_000, cache_read_input_tokens=1_000_000,
                                             output_tokens=1_000_000))
    assert (cost, currency) == (Decimal("5.2"), "CNY")
    # no cached price given: cached tokens cost the input price
    cost, _ = pricing.call_cost(provider, "deepseek-reasoner", Usage(cache_read_input_tokens=1_000_000))
    assert cost == Decimal(4)


def test_an_unpriced_model_costs_unknown_never_zero(table):
    cost, currency = pricing.call_cost(lp.providers()["ollama"], "qwen3:14b", Usage(input_tokens=10, output_tokens=10))
    assert cost is None


def test_published_prices_apply_when_the_table_gives_none(settings):
    settings.NOVELSITE_LLM_BACKEND = "openai"
    settings.NOVELSITE_DEFAULT_MODEL = "qwen-plus"
    provider = lp.providers()["openai"]
    cost, currency = pricing.call_cost(provider, "qwen-plus", Usage(input_tokens=1_000_000, output_tokens=1_000_000))
    assert (cost, currency) == (Decimal("2.8"), "CNY")
    cost, currency = pricing.call_cost(lp.providers()["anthropic"], "claude-sonnet-4-5-20250929",
                                       Usage(output_tokens=1_000_000))
    assert (cost, currency) == (Decimal(15), "USD")


def test_price_overrides_setting_still_works(settings):
    settings.NOVELSITE_LLM_PRICES = {"my-model": {"input": 1, "output": 2, "currency": "EUR"}}
    price = lp.providers()["openai"].price("my-model")
    assert price is not None and price.currency == "EUR" and price.output == 2


def test_choices_offer_every_configured_model_with_its_price(table):
    translation.activate("en")
    choices = {choice.value: choice for choice in lp.model_choices()}
    assert "deepseek:deepseek-chat" in choices and "ollama:qwen3:14b" in choices
    assert "anthropic:claude-sonnet-5-5" in choices and "offline:offline" in choices
    assert "CNY 2 in / 0.2 cached / 3 out" in choices["deepseek:deepseek-chat"].label
    assert choices["ollama:qwen3:14b"].price is None and "price unknown" in choices["ollama:qwen3:14b"].label
    assert all("sk-deepseek-secret" not in choice.label for choice in choices.values())


def test_backends_are_built_per_provider_with_the_key_from_its_variable(table):
    backend = get_backend("deepseek")
    assert backend.name == "deepseek"
    assert backend.client.api_key == "sk-deepseek-secret"
    assert str(backend.client.base_url).startswith("https://api.deepseek.com")
    assert get_backend("deepseek") is backend  # one shared client per provider
    assert "sk-deepseek-secret" not in repr(lp.providers()["deepseek"])


def test_a_row_without_a_key_never_gets_the_built_in_providers_keys(table, monkeypatch):
    """A local server (no key_env) must not be sent OPENAI_API_KEY or ANTHROPIC_API_KEY: the
    SDKs read those when given no key, and the built-in key would reach another host."""
    table.OPENAI_API_KEY, table.ANTHROPIC_API_KEY = "sk-openai-secret", "sk-ant-secret"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    table.NOVELSITE_LLM_PROVIDERS = [DEEPSEEK, OLLAMA, {**OLLAMA, "name": "local-claude", "kind": "anthropic"}]
    reset_backends()

    assert get_backend("ollama").client.api_key == "not-needed"
    assert get_backend("local-claude").client.api_key == "not-needed"
    assert get_backend("openai").client.api_key == "sk-openai-secret"  # the built-in ones keep theirs
    assert get_backend("anthropic").client.api_key == "sk-ant-secret"


@pytest.mark.parametrize(("row", "message"), [
    ({"kind": "openai"}, "needs a \"name\""),
    ({"name": "x", "kind": "gemini", "default_model": "m"}, "\"kind\" must be one of"),
    ({"name": "x", "kind": "openai"}, "needs a \"default_model\""),
    ({"name": "x", "kind": "openai", "default_model": "m", "currency": "yuan"}, "three-letter code"),
    ({"name": "x", "kind": "openai", "default_model": "m", "key_env": "sk-abc def"}, "name an environment variable"),
    ({"name": "x", "kind": "openai", "default_model": "m", "key_env": "SECRET_KEY"}, "name an environment variable"),
    ({"name": "x", "kind": "openai", "models": {"m": {"input": -1, "output": 1}}}, "at least 0"),
    ({"name": "x", "kind": "openai", "models": {"m": {"input": "cheap", "output": 1}}}, "must be a number"),
    ({"name": "x", "kind": "openai", "models": {"m": {"input": 1}}}, "\"input\" and \"output\""),
    ({"name": "x", "kind": "openai", "default_model": "m", "base_url": "ftp://x"}, "http:// or https://"),
    ({"name": "x", "kind": "openai", "default_model": "m", "api_key": "sk-1"}, "unknown keys: api_key"),
    ("deepseek", "must be an object"),
])
def test_malformed_table_rows_are_refused_with_a_clear_message(settings, row, message):
    translation.activate("en")
    settings.NOVELSITE_LLM_PROVIDERS = [row]
    with pytest.raises(lp.ProviderConfigError, match=message):
        lp.providers()
    assert any(message in problem for problem in lp.site_problems())
    assert lp.model_choices() == []  # nothing to offer rather than a 500


def test_a_provider_listed_twice_is_refused(settings):
    translation.activate("en")
    settings.NOVELSITE_LLM_PROVIDERS = [OLLAMA, OLLAMA]
    assert lp.site_problems() == ["Provider ollama is listed twice."]


def test_malformed_json_in_the_environment_is_reported_not_raised(settings):
    translation.activate("en")
    settings.NOVELSITE_LLM_PROVIDERS = "[{oops"
    assert lp.site_problems() == ["NOVELSITE_LLM_PROVIDERS_JSON must be a JSON list of providers."]


def test_a_stage_on_a_provider_that_does_not_exist_fails_permanently_with_the_reason(table):
    """Past the up-front checks (say, the table changed under a running site), the call is refused as
    a permanent LLM error naming the problem, never a traceback and never retried."""
    from pipeline.jacquard.runner import CallSpec, run_call
    from pipeline.jacquard.skein import PromptBlock, Skein
    from pipeline.llm.types import LLMPermanentError

    def build(_slice):
        return Skein().add(PromptBlock("ask", "user", "写。", required=True))

    spec = CallSpec(stage="draft", slice={}, build_skein=build, call_key="k", tags=["chapter"],
                    stage_models={"draft": "kimi:moonshot-v1"})
    with translation.override("en"), \
            pytest.raises(LLMPermanentError, match="draft: There is no LLM provider named kimi"):
        run_call(spec)
