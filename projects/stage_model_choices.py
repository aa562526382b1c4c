"""The settings page's model per stage: one choice per stage among the providers and models the
site configures (novelsite/llm_providers.py), each with the price that applies; no free text."""
from __future__ import annotations

from collections.abc import Mapping

from django import forms
from django.utils.translation import gettext as _

from novelsite.llm_providers import ModelChoice, ProviderConfigError, model_choices, resolve_choice
from projects.labels import label
from projects.schemas import PIPELINE_STAGE_NAMES

STAGE_MODEL_PREFIX = "model_"


def _canonical(value: str) -> str:
    """``provider:model`` for any way of writing a choice (``deepseek``, a bare model …), or the
    value itself when it names nothing the site offers."""
    try:
        provider, model = resolve_choice(value)
    except ProviderConfigError:
        return value
    return f"{provider.name}:{model}"


def _site_default() -> str:
    try:
        provider, model = resolve_choice("")
    except ProviderConfigError as exc:
        return str(exc)
    return ModelChoice(f"{provider.name}:{model}", provider.name, model, provider.price(model)).label


def stage_model_fields(stage_models: Mapping[str, str]) -> dict[str, forms.ChoiceField]:
    """A ChoiceField per stage (``model_draft`` …); a saved value the site no longer offers stays
    selectable, marked, so saving other settings does not silently drop it."""
    offered = [(choice.value, choice.label) for choice in model_choices()]
    known = {value for value, _label in offered}  # empty when the table is broken: the page says why
    fields: dict[str, forms.ChoiceField] = {}
    for stage in PIPELINE_STAGE_NAMES:
        current = stage_models.get(stage, "")
        current = _canonical(current) if isinstance(current, str) and current else ""
        empty = (_("Site default: %(choice)s") % {"choice": _site_default()} if stage == "default"
                 else _("As the default"))
        choices = [("", empty), *offered]
        if current and current not in known:
            choices.append((current, _("%(choice)s (not offered by this site)") % {"choice": current}))
        title = _("Model for every step") if stage == "default" else _("Model: %(step)s") % {
            "step": label("step", stage)}
        fields[STAGE_MODEL_PREFIX + stage] = forms.ChoiceField(label=title, choices=choices, required=False,
                                                               initial=current)
    return fields
