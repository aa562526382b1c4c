"""Whether a project's own version of a prompt can be used (``PromptTemplate.clean``)."""
from __future__ import annotations

from pipeline.jacquard.templates import validate_template
from pipeline.prompts import SAMPLE_CONTEXTS, template_names


def prompt_template_errors(name: str, source: str) -> list[str]:
    """Why an override cannot be used (empty = fine): an unknown name, or a template that does not
    parse, fails on the default's sample context, or leaves the sandbox."""
    if name not in SAMPLE_CONTEXTS:
        return [f"unknown template {name!r}; override one of {', '.join(template_names())}"]
    return validate_template(source, SAMPLE_CONTEXTS[name])
