"""Choosing a backend and model for a stage.

The site default comes from ``NOVELSITE_LLM_BACKEND`` and ``NOVELSITE_DEFAULT_MODEL``. A project
overrides per stage in ``Project.stage_models``: ``{"draft": "claude-opus-4-5"}`` changes the model,
``{"judge": "offline"}`` or ``{"refine": "anthropic:claude-haiku-4-5"}`` the backend as well;
the key ``default`` applies to every stage without its own entry.
"""
from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from django.conf import settings

from pipeline.llm.types import LLMBackend

BACKENDS = ("offline", "anthropic")


def resolve(stage: str, stage_models: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(backend name, model) for ``stage``: the stage's entry, else ``default``, else settings."""
    stage_models = stage_models or {}
    family = stage.split(":", 1)[0]
    choice = stage_models.get(stage) or stage_models.get(family) or stage_models.get("default") or ""
    backend, _, model = choice.partition(":") if ":" in choice else ("", "", choice)
    if choice in BACKENDS:
        backend, model = choice, ""
    backend = backend or settings.NOVELSITE_LLM_BACKEND
    if backend not in BACKENDS:
        raise ValueError(f"unknown LLM backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if not model:  # the offline backend is not a model: say so in logs and receipts
        model = "offline" if backend == "offline" else settings.NOVELSITE_DEFAULT_MODEL
    return backend, model


@cache
def _shared(name: str) -> LLMBackend:
    if name == "anthropic":
        from pipeline.llm.anthropic_backend import AnthropicBackend

        return AnthropicBackend()
    from pipeline.llm.offline import OfflineBackend

    return OfflineBackend()


def get_backend(name: str) -> LLMBackend:
    """One shared client per backend and process (the SDK client pools its connections)."""
    return _shared(name)


def reset_backends() -> None:
    """Forget shared clients (tests that change settings call this)."""
    _shared.cache_clear()
