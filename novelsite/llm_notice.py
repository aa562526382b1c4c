"""The notice every web page shows while the site runs the offline LLM backend: its text is a
deterministic placeholder built from the brief, and a person should know that before reading it."""
from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def offline_backend_notice(request: HttpRequest) -> dict[str, bool]:
    """Template context processor: ``offline_llm`` is true when the site's default backend is the
    offline one (a project may still route single stages elsewhere through ``stage_models``)."""
    return {"offline_llm": settings.NOVELSITE_LLM_BACKEND == "offline"}
