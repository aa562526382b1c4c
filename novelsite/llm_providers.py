"""The LLM providers a site offers, and the checks of their configuration.

Shared by ``pipeline`` (which builds backends and prices calls from it) and ``projects`` (whose
settings page offers the providers' models as choices), so it lives here and imports neither.

Three providers exist without any table: ``offline``, ``anthropic`` (``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``) and ``openai`` (the SDK's own ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``);
the latter two write with ``NOVELSITE_DEFAULT_MODEL``. ``NOVELSITE_LLM_PROVIDERS`` (JSON in
``NOVELSITE_LLM_PROVIDERS_JSON``) adds named ones, or replaces ``anthropic``/``openai``::

    [{"name": "deepseek", "kind": "openai", "base_url": "https://api.deepseek.com",
      "key_env": "DEEPSEEK_API_KEY", "default_model": "deepseek-chat", "currency": "CNY",
      "models": {"deepseek-chat": {"input": 2, "cached_input": 0.2, "output": 3}}}]

A key is only ever read from the environment variable the row names: never stored, shown or logged.
``Project.stage_models`` values are ``provider:model``, a provider alone (its default model) or a
model alone (the default provider, ``NOVELSITE_LLM_BACKEND``).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from novelsite import llm_prices
from novelsite.llm_prices import ModelPrice

KINDS = ("anthropic", "openai")
BUILTIN = ("offline", "anthropic", "openai")
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,19}$")  # fits LLMCall.backend (20 characters)
CURRENCY = re.compile(r"^[A-Z]{3}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SETTINGS_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
# Variables that hold the site's own secrets: a table row naming one would send it to a model server.
NOT_KEYS = ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CACHE_URL", "EMAIL_HOST_PASSWORD")
FALLBACK_MODEL = "claude-sonnet-5-5"  # the anthropic provider's model when NOVELSITE_DEFAULT_MODEL is unset


class ProviderConfigError(ValueError):
    """The provider table or a stage model choice is wrong; the message says what to change."""


@dataclass(frozen=True)
class Provider:
    name: str
    kind: str  # offline, anthropic or openai
    base_url: str = ""
    key_env: str = ""  # the environment variable holding the key; "" for a server that needs none
    default_model: str = ""
    currency: str = "USD"
    models: Mapping[str, ModelPrice | None] = field(default_factory=dict)  # offered models, priced or not
    timeout: float | None = None
    max_retries: int | None = None

    def api_key(self) -> str:
        """The key, from the environment variable ``key_env`` (the built-in providers' two through
        their settings, which read the same variables)."""
        if not self.key_env:
            return ""
        if self.key_env in SETTINGS_KEYS:
            return str(getattr(settings, self.key_env, "") or "")
        return os.environ.get(self.key_env, "")

    def price(self, model: str) -> ModelPrice | None:
        """The provider's own price for ``model``, else the published one, else None (unknown)."""
        own = llm_prices.lookup({k: v for k, v in self.models.items() if v is not None}, model)
        if own is not None:
            return own
        overrides = _price_overrides()
        return llm_prices.lookup(overrides, model) or llm_prices.lookup(llm_prices.KNOWN, model)


# --- the table -------------------------------------------------------------------------------


def _decimal(value: Any, where: str) -> Decimal:
    not_a_number = ProviderConfigError(_("%(where)s must be a number, not %(value)r.")
                                       % {"where": where, "value": value})
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise not_a_number
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise not_a_number from None
    if not number.is_finite() or number < 0:
        raise ProviderConfigError(_("%(where)s must be a number of at least 0.") % {"where": where})
    return number


def _model_price(raw: Any, currency: str, where: str) -> ModelPrice | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not {"input", "output"} <= set(raw):
        raise ProviderConfigError(_("%(where)s needs the prices \"input\" and \"output\" (and may give "
                                    "\"cached_input\") per million tokens.") % {"where": where})
    unknown = set(raw) - {"input", "cached_input", "output", "cache_write"}
    if unknown:
        raise ProviderConfigError(_("%(where)s has unknown keys: %(keys)s.") % {"where": where,
                                                                               "keys": ", ".join(sorted(unknown))})
    base = _decimal(raw["input"], f"{where}.input")
    cached = _decimal(raw["cached_input"], f"{where}.cached_input") if "cached_input" in raw else base
    write = _decimal(raw["cache_write"], f"{where}.cache_write") if "cache_write" in raw else None
    return ModelPrice(base, cached, _decimal(raw["output"], f"{where}.output"), currency, write, "")


def _row(raw: Any, index: int) -> Provider:
    where = f"NOVELSITE_LLM_PROVIDERS[{index}]"
    if not isinstance(raw, Mapping):
        raise ProviderConfigError(_("%(where)s must be an object.") % {"where": where})
    allowed = {"name", "kind", "base_url", "key_env", "default_model", "currency", "models", "timeout",
               "max_retries"}
    unknown = set(raw) - allowed
    if unknown:
        raise ProviderConfigError(_("%(where)s has unknown keys: %(keys)s.") % {"where": where,
                                                                               "keys": ", ".join(sorted(unknown))})
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.match(name) or name == "offline":
        raise ProviderConfigError(_("%(where)s needs a \"name\" of lower-case letters, digits, - and _ (at most "
                                    "20, not \"offline\").") % {"where": where})
    where = _("provider %(name)s") % {"name": name}
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ProviderConfigError(_("%(where)s: \"kind\" must be one of %(kinds)s, not %(kind)r.")
                                  % {"where": where, "kinds": ", ".join(KINDS), "kind": kind})
    key_env = raw.get("key_env", "")
    if not isinstance(key_env, str) or (key_env and not ENV_NAME.match(key_env)) or key_env in NOT_KEYS:
        raise ProviderConfigError(_("%(where)s: \"key_env\" must name an environment variable (the key itself "
                                    "never goes in the table).") % {"where": where})
    currency = raw.get("currency", "USD")
    if not isinstance(currency, str) or not CURRENCY.match(currency):
        raise ProviderConfigError(_("%(where)s: \"currency\" must be a three-letter code such as USD or CNY.")
                                  % {"where": where})
    models_raw = raw.get("models", {})
    if isinstance(models_raw, list):
        models_raw = {model: None for model in models_raw}
    if not isinstance(models_raw, Mapping) or not all(isinstance(m, str) and m for m in models_raw):
        raise ProviderConfigError(_("%(where)s: \"models\" must map model names to prices (or list names).")
                                  % {"where": where})
    models = {model: _model_price(price, currency, f"{where}: {model}") for model, price in models_raw.items()}
    default_model = raw.get("default_model") or next(iter(models), "")
    if not isinstance(default_model, str) or not default_model:
        raise ProviderConfigError(_("%(where)s needs a \"default_model\".") % {"where": where})
    models.setdefault(default_model, None)
    base_url = raw.get("base_url", "")
    if not isinstance(base_url, str) or (base_url and not base_url.startswith(("http://", "https://"))):
        raise ProviderConfigError(_("%(where)s: \"base_url\" must start with http:// or https://.") % {"where": where})
    timeout, retries = raw.get("timeout"), raw.get("max_retries")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ProviderConfigError(_("%(where)s: \"timeout\" must be a number of seconds.") % {"where": where})
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        raise ProviderConfigError(_("%(where)s: \"max_retries\" must be a whole number.") % {"where": where})
    return Provider(name, kind, base_url, key_env, default_model, currency, models, timeout, retries)


def _price_overrides() -> dict[str, ModelPrice]:
    """``NOVELSITE_LLM_PRICES``: per-model prices (USD unless a row says ``currency``)."""
    table: dict[str, ModelPrice] = {}
    for model, raw in (getattr(settings, "NOVELSITE_LLM_PRICES", None) or {}).items():
        values = dict(raw)
        currency = str(values.pop("currency", "USD"))
        values.pop("effective", None)
        if "cache_read" in values:  # the older spelling
            values["cached_input"] = values.pop("cache_read")
        table[model] = _model_price(values, currency, f"NOVELSITE_LLM_PRICES[{model}]")  # type: ignore[assignment]
    return table


def _builtin() -> dict[str, Provider]:
    default_model = getattr(settings, "NOVELSITE_DEFAULT_MODEL", "")
    anthropic_models = {model: None for model in llm_prices.ANTHROPIC}
    return {
        "offline": Provider("offline", "offline", default_model="offline", models={"offline": llm_prices.OFFLINE}),
        "anthropic": Provider("anthropic", "anthropic", getattr(settings, "ANTHROPIC_BASE_URL", ""),
                              "ANTHROPIC_API_KEY", default_model or FALLBACK_MODEL,
                              models={**anthropic_models, (default_model or FALLBACK_MODEL): None}),
        "openai": Provider("openai", "openai", getattr(settings, "OPENAI_BASE_URL", ""), "OPENAI_API_KEY",
                           default_model, models={default_model: None} if default_model else {}),
    }


def providers() -> dict[str, Provider]:
    """Every provider by name: the built-in three, then the table (a row may replace anthropic/openai).
    Raises ``ProviderConfigError`` for a malformed table."""
    table = getattr(settings, "NOVELSITE_LLM_PROVIDERS", None) or []
    if not isinstance(table, list):
        raise ProviderConfigError(_("NOVELSITE_LLM_PROVIDERS_JSON must be a JSON list of providers."))
    found = _builtin()
    seen: set[str] = set()
    for index, raw in enumerate(table):
        row = _row(raw, index)
        if row.name in seen:
            raise ProviderConfigError(_("Provider %(name)s is listed twice.") % {"name": row.name})
        seen.add(row.name)
        found[row.name] = row
    return found


def default_provider_name() -> str:
    return str(getattr(settings, "NOVELSITE_LLM_BACKEND", "offline") or "offline")


# --- choices ---------------------------------------------------------------------------------


def parse_choice(choice: str, known: Mapping[str, Provider] | None = None) -> tuple[str, str]:
    """(provider, model) for a ``stage_models`` value; the model is "" for "the provider's default".
    The provider part is the text before the first colon (so ``ollama:qwen2.5:7b`` works)."""
    known = providers() if known is None else known
    choice = choice.strip()
    if ":" in choice:
        provider, _sep, model = choice.partition(":")
        return provider.strip(), model.strip()
    if choice in known:
        return choice, ""
    return "", choice


def resolve_choice(choice: str, known: Mapping[str, Provider] | None = None) -> tuple[Provider, str]:
    """The provider and model a choice names (empty: the site default). Raises ``ProviderConfigError``."""
    known = providers() if known is None else known
    name, model = parse_choice(choice, known) if choice else ("", "")
    name = name or default_provider_name()
    provider = known.get(name)
    if provider is None:
        raise ProviderConfigError(_("There is no LLM provider named %(name)s; configured: %(names)s.")
                                  % {"name": name, "names": ", ".join(sorted(known))})
    model = model or provider.default_model
    if not model:
        raise ProviderConfigError(_("Provider %(name)s has no model: set NOVELSITE_DEFAULT_MODEL (or the table's "
                                    "\"default_model\").") % {"name": name})
    return provider, model


@dataclass(frozen=True)
class ModelChoice:
    value: str  # provider:model, what stage_models stores
    provider: str
    model: str
    price: ModelPrice | None

    def price_text(self) -> str:
        if self.price is None:
            return _("price unknown")
        return _("%(currency)s %(input)s in / %(cached)s cached / %(output)s out per million tokens") % {
            "currency": self.price.currency, "input": _plain(self.price.input),
            "cached": _plain(self.price.cached_input), "output": _plain(self.price.output)}

    @property
    def label(self) -> str:
        return f"{self.provider} · {self.model} ({self.price_text()})"


def _plain(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return text


def model_choices(*, include_offline: bool = True) -> list[ModelChoice]:
    """Every offered provider:model with its price, for the settings page; [] if the table is broken."""
    try:
        known = providers()
    except ProviderConfigError:
        return []
    choices = []
    for provider in known.values():
        if provider.kind == "offline" and not include_offline:
            continue
        for model in provider.models:
            if model:
                choices.append(ModelChoice(f"{provider.name}:{model}", provider.name, model, provider.price(model)))
    return choices


# --- checks ----------------------------------------------------------------------------------


def site_problems() -> list[str]:
    """What is wrong with the site's LLM configuration, in words a person can act on."""
    try:
        known = providers()
    except ProviderConfigError as exc:
        return [str(exc)]
    problems = []
    default = default_provider_name()
    if default not in known:
        problems.append(_("NOVELSITE_LLM_BACKEND is %(name)r, which is neither a backend nor a configured provider; "
                          "use one of %(names)s.") % {"name": default, "names": ", ".join(sorted(known))})
    elif not known[default].default_model:
        problems.append(_("NOVELSITE_LLM_BACKEND is %(name)s but no model is set: set NOVELSITE_DEFAULT_MODEL "
                          "to the model the server should write with.") % {"name": default})
    table_names = {row.get("name") for row in (getattr(settings, "NOVELSITE_LLM_PROVIDERS", None) or [])
                   if isinstance(row, Mapping)}
    for provider in known.values():
        used = provider.name == default or provider.name in table_names
        if used and provider.key_env and not provider.api_key():
            problems.append(_("Provider %(name)s needs its key: the environment variable %(env)s is not set.")
                            % {"name": provider.name, "env": provider.key_env})
    return problems


def stage_model_problems(stage_models: Mapping[str, Any] | None) -> list[str]:
    """What is wrong with one project's ``stage_models`` (unknown providers, unusable ones)."""
    if not stage_models:
        return []
    try:
        known = providers()
    except ProviderConfigError:
        return []  # site_problems says why
    problems = []
    for stage, choice in sorted(stage_models.items()):
        if not isinstance(choice, str):
            continue
        try:
            provider, _model = resolve_choice(choice, known)
        except ProviderConfigError as exc:
            problems.append(_("Stage %(stage)s uses %(choice)s: %(error)s")
                            % {"stage": stage, "choice": choice, "error": exc})
            continue
        if provider.key_env and not provider.api_key():
            problems.append(_("Stage %(stage)s uses provider %(name)s, whose key variable %(env)s is not set.")
                            % {"stage": stage, "name": provider.name, "env": provider.key_env})
    return problems


def project_problems(stage_models: Mapping[str, Any] | None) -> list[str]:
    """The site's problems and the project's, for the settings and dashboard pages."""
    return site_problems() + stage_model_problems(stage_models)


def projects_problems() -> list[str]:
    """The stage model problems of every project, each naming its project (for checks and the
    worker; needs the database)."""
    from projects.models import Project  # lazily: this module is imported by settings-time code

    problems = []
    for slug, stage_models in Project.objects.exclude(stage_models={}).values_list("slug", "stage_models"):
        problems += [_("Project %(slug)s: %(problem)s") % {"slug": slug, "problem": problem}
                     for problem in stage_model_problems(stage_models)]
    return problems
