"""Throttling of the API actions that start LLM work (they cost money per call)."""
from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import ScopedRateThrottle


class LLMWorkThrottle(ScopedRateThrottle):
    """``ScopedRateThrottle`` for views with ``throttle_scope = "llm"``. DRF binds the rates when the
    class is defined; this reads ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` per request, so a
    deployment's environment and a test's ``settings`` fixture both take effect."""

    def get_rate(self) -> str | None:
        rates = getattr(settings, "REST_FRAMEWORK", {}).get("DEFAULT_THROTTLE_RATES", {})
        return rates.get(self.scope)
