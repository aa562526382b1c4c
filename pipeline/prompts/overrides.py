"""Which template a stage renders: the project's override if it has one, else the shipped default."""
from __future__ import annotations

from pipeline.jacquard.templates import validate_template
from pipeline.prompts import SAMPLE_CONTEXTS, default_source, template_names


def prompt_template_errors(name: str, source: str) -> list[str]:
    """Why an override cannot be used (empty = fine): an unknown name, or a template that does not
    parse, fails on the default's sample context, or leaves the sandbox."""
    if name not in SAMPLE_CONTEXTS:
        return [f"unknown template {name!r}; override one of {', '.join(template_names())}"]
    return validate_template(source, SAMPLE_CONTEXTS[name])


def prompt_template_source(*, project_id: int, name: str, has_overrides: bool | None = None) -> str:
    """A false ``has_overrides`` (the project has none, as read with the claim's lock: see
    ``pipeline.runtime.locks.project_lock_of_run``) skips the lookup; None does not know."""
    from pipeline.models import PromptTemplate

    if has_overrides is not None and not has_overrides:
        return default_source(name)
    override = PromptTemplate.objects.filter(project_id=project_id, name=name).values_list("source", flat=True).first()
    return override if override is not None else default_source(name)
