"""Which template a stage renders: the project's override if it has one, else the shipped default."""
from __future__ import annotations

from pipeline.models import PromptTemplate
from pipeline.prompts import default_source


def prompt_template_source(*, project_id: int, name: str, has_overrides: bool | None = None) -> str:
    """A false ``has_overrides`` (the project has none, as read with the claim's lock: see
    ``pipeline.runtime.locks.project_lock_of_run``) skips the lookup; None does not know."""
    if has_overrides is not None and not has_overrides:
        return default_source(name)
    override = PromptTemplate.objects.filter(project_id=project_id, name=name).values_list("source", flat=True).first()
    return override if override is not None else default_source(name)
