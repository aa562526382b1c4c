"""Editing the relationships between characters on the web: one row per relationship (character,
towards character, a number from −100 to 100), characters chosen from the roster by name. Saved by
``relationships_update`` (validation, project lock, history, refusal of a save over a newer one).

Only the ``{who: {whom: number}}`` shape is offered as rows. Any other shape (an imported tree may
hold one) is shown as its JSON in the "advanced" field alone and stored exactly as it is unless
that text is changed. The advanced field is always there: when a person changes it, it replaces
what the rows say.
"""
from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from projects.errors import InvalidData, VersionConflict
from projects.json_input import json_loads_checked
from projects.permissions import Action
from projects.selectors import character_names
from projects.services.relationships import (
    AFFINITY_MAX,
    AFFINITY_MIN,
    relationships_are_pairs,
    relationships_digest,
    relationships_update,
)
from projects.views.access import page_context, project_access


class RelationshipsForm(forms.Form):
    raw_json = forms.CharField(label=gettext_lazy("The relationships as JSON (advanced)"), required=False,
                               max_length=200_000, widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}))
    base_digest = forms.CharField(widget=forms.HiddenInput, max_length=64)


class RelationshipRowForm(forms.Form):
    who = forms.ChoiceField(label=gettext_lazy("Character"))
    whom = forms.ChoiceField(label=gettext_lazy("Towards"))
    value = forms.FloatField(label=gettext_lazy("Affinity (−100 hostile … 100 devoted)"),
                             min_value=AFFINITY_MIN, max_value=AFFINITY_MAX)

    def __init__(self, *args, characters: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "—"), *characters]  # a blank first choice: an unused extra row stays empty
        self.fields["who"].choices = self.fields["whom"].choices = choices

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("who") and cleaned.get("who") == cleaned.get("whom"):
            raise forms.ValidationError(_("A character cannot have a relationship towards themself."))
        return cleaned


class BaseRelationshipRows(forms.BaseFormSet):
    def clean(self):
        if any(self.errors):
            return  # a row with its own error: the pairs are not known yet
        seen = set()
        for row in self.forms:
            if not row.cleaned_data or row.cleaned_data.get("DELETE"):
                continue
            pair = (row.cleaned_data["who"], row.cleaned_data["whom"])
            if pair in seen:
                raise forms.ValidationError(_("The same pair of characters appears twice."))
            seen.add(pair)


RelationshipRows = forms.formset_factory(RelationshipRowForm, formset=BaseRelationshipRows, extra=2,
                                         can_delete=True, max_num=2000, validate_max=True)


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _value_from_forms(form: RelationshipsForm, rows, stored, offer_rows: bool):
    raw = (form.cleaned_data.get("raw_json") or "").strip()
    if raw:
        value = json_loads_checked(raw)
        if value != stored:  # the person edited the JSON itself: it replaces the rows
            return value
    if not offer_rows:
        return stored  # a shape the rows cannot show, and its JSON unchanged: kept exactly as it is
    value: dict[str, dict[str, int | float]] = {}
    for row in rows:
        data = row.cleaned_data
        if data and not data.get("DELETE"):
            value.setdefault(data["who"], {})[data["whom"]] = _number(data["value"])
    return value


@login_required
@require_http_methods(["GET", "POST"])
def relationships_edit(request, slug: str):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    stored = project.relationships
    offer_rows = relationships_are_pairs(stored)
    names = character_names(project=project)
    known = sorted(names.items(), key=lambda item: (item[1], item[0]))
    if offer_rows:  # ids in the data with no character are kept and shown as themselves
        known += sorted((s, s) for s in {*stored, *(w for t in stored.values() for w in t)} - set(names))
    form = RelationshipsForm(request.POST or None, initial={
        "raw_json": json.dumps(stored, ensure_ascii=False, indent=2), "base_digest": relationships_digest(stored)})
    initial_rows = sorted(({"who": who, "whom": whom, "value": value} for who, towards in stored.items()
                           for whom, value in towards.items()) if offer_rows else [],
                          key=lambda row: (names.get(row["who"], row["who"]), names.get(row["whom"], row["whom"])))
    rows = RelationshipRows(request.POST or None, prefix="rel", initial=initial_rows,
                            form_kwargs={"characters": known})
    if request.method == "POST" and form.is_valid() and (not offer_rows or rows.is_valid()):
        try:
            value = _value_from_forms(form, rows, stored, offer_rows)
            relationships_update(project=project, editor=request.user, relationships=value,
                                 base_digest=form.cleaned_data["base_digest"])
        except VersionConflict:
            messages.error(request, _("Someone saved the relationships after you opened this page; nothing was "
                                      "saved. Open it again and apply your change."))
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Relationships saved."))
            return redirect(f"{reverse('world', args=[project.slug])}#relationships")
    return render(request, "projects/relationships_edit.html", page_context(
        access, form=form, rows=rows, offer_rows=offer_rows))
