"""Editing a character on the web: name, status, profile and the L2 contracts as form fields (one
row per contract), through the same service, schema, version check and history as the admin.

A contract's keys the form does not show (anything beyond facts §10.2's fields) are kept as they
were. The raw JSON of the contracts stays reachable as an "advanced" field: when a person changes
it, it replaces what the rows say.
"""
from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import pgettext
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from projects.errors import InvalidData, VersionConflict
from projects.json_input import json_loads_checked
from projects.models import Character, CharacterStatus
from projects.models.base import CanonStatus
from projects.permissions import Action
from projects.services.editing import story_object_create, story_object_update
from projects.views.access import page_context, project_access

CONTRACT_TYPES = [
    ("capability", gettext_lazy("Capability")),
    ("personality", gettext_lazy("Personality")),
    ("relationship", gettext_lazy("Relationship")),
    ("speech", gettext_lazy("Speech")),
]
ALIAS_SEPARATORS = re.compile(r"[,，、;；\n]+")
ALIAS_MAX_CHARS, ALIAS_MAX_COUNT = 40, 50  # projects.schemas.CHARACTER_ALIASES
SHOWN_KEYS = ("id", "type", "rule", "valid_from_chapter", "valid_until", "exceptions", "update_requires")


def profile_skeleton() -> str:
    """A new profile: the headings of the sections the writer reads, in the page's language."""
    return "\n\n".join(f"## {pgettext('profile section', name)}"
                         for name in ("Identity", "Voice", "Secrets", "Abilities")) + "\n"


class CharacterForm(forms.Form):
    slug = forms.SlugField(label=gettext_lazy("Id (letters, digits and hyphens)"), max_length=60)
    display_name = forms.CharField(label=gettext_lazy("Name"), max_length=100)
    status = forms.ChoiceField(label=gettext_lazy("Status"), choices=CharacterStatus.choices)
    canon_status = forms.ChoiceField(label=gettext_lazy("Canon status"), choices=CanonStatus.choices)
    aliases = forms.CharField(
        label=gettext_lazy("Aliases and titles"), required=False, max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=gettext_lazy("Other names the text calls this character by, separated by commas or lines."))
    profile = forms.CharField(
        label=gettext_lazy("Profile (Markdown)"), required=False, max_length=200_000,
        widget=forms.Textarea(attrs={"rows": 12}),
        help_text=gettext_lazy("Write it in sections with headings such as ## Identity, ## Voice, ## Secrets, "
                               "## Abilities (in Chinese or English). The writer always gets identity and voice; "
                               "secrets and the rest go in whole when the character is in the chapter."))
    contracts_json = forms.CharField(label=gettext_lazy("Contracts as JSON (advanced)"), required=False,
                                     max_length=200_000, widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}))
    base_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def clean_aliases(self) -> list[str]:
        names = list(dict.fromkeys(n.strip() for n in ALIAS_SEPARATORS.split(self.cleaned_data.get("aliases") or "")
                                   if n.strip()))
        if any(len(n) > ALIAS_MAX_CHARS for n in names):
            raise forms.ValidationError(_("An alias has at most %(n)s characters.") % {"n": ALIAS_MAX_CHARS})
        if len(names) > ALIAS_MAX_COUNT:
            raise forms.ValidationError(_("At most %(n)s aliases.") % {"n": ALIAS_MAX_COUNT})
        return names


class ContractForm(forms.Form):
    id = forms.RegexField(label=gettext_lazy("Id"), regex=r"^C-[A-Z0-9]+(?:-[A-Z0-9]+)*$", max_length=80,
                          help_text=gettext_lazy("Like C-LIN-FENG-001: capitals, digits and hyphens."))
    # a blank first choice: an unused extra row posts nothing and stays empty
    type = forms.ChoiceField(label=gettext_lazy("Kind"), choices=[("", "—"), *CONTRACT_TYPES])
    rule = forms.CharField(label=gettext_lazy("Rule"), max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    valid_from_chapter = forms.IntegerField(label=gettext_lazy("From chapter"), min_value=0, required=False)
    valid_until = forms.IntegerField(label=gettext_lazy("Until chapter"), min_value=0, required=False)
    exceptions = forms.CharField(label=gettext_lazy("Exceptions (one per line)"), required=False, max_length=5000,
                                 widget=forms.Textarea(attrs={"rows": 2}))
    update_requires = forms.CharField(label=gettext_lazy("Changing it requires"), required=False, max_length=500)
    original = forms.CharField(widget=forms.HiddenInput, required=False)  # the stored item, for its other keys


ContractFormSet = forms.formset_factory(ContractForm, extra=1, can_delete=True, max_num=100, validate_max=True)


def _contract_initial(item: dict[str, Any]) -> dict[str, Any]:
    exceptions = item.get("exceptions") or []
    return {
        **{key: item.get(key) for key in ("id", "type", "rule", "valid_from_chapter", "valid_until")},
        "exceptions": "\n".join(str(e) for e in exceptions) if isinstance(exceptions, list) else "",
        "update_requires": item.get("update_requires") if isinstance(item.get("update_requires"), str) else "",
        "original": json.dumps(item, ensure_ascii=False),
    }


def _contract_from_row(row: dict[str, Any]) -> dict[str, Any]:
    """A contract from a filled row: the stored item with the row's fields on top; an optional field
    left empty is dropped unless the item had it (then it is null, or an empty list)."""
    try:
        item = json.loads(row.get("original") or "{}")
    except ValueError:
        item = {}
    item = item if isinstance(item, dict) else {}
    exceptions = [line.strip() for line in (row.get("exceptions") or "").splitlines() if line.strip()]
    edited = {"id": row["id"], "type": row["type"], "rule": row["rule"].strip(),
              "valid_from_chapter": row.get("valid_from_chapter"), "valid_until": row.get("valid_until"),
              "exceptions": exceptions, "update_requires": (row.get("update_requires") or "").strip()}
    for key, value in edited.items():
        if value in (None, "", []) and key not in item:
            continue
        if key == "update_requires" and not isinstance(item.get(key, ""), str):
            continue  # a structured value the row cannot show: kept as it was
        item[key] = value if value != "" else None
    return item


def _contracts_from_forms(form: CharacterForm, rows: forms.BaseFormSet, stored: list) -> list:
    raw = (form.cleaned_data.get("contracts_json") or "").strip()
    if raw:
        value = json_loads_checked(raw)
        if value != stored:  # the person edited the JSON itself: it replaces the rows
            if not isinstance(value, list):
                raise InvalidData(_("The contracts as JSON must be a list."))
            return value
    return [_contract_from_row(row.cleaned_data) for row in rows
            if row.cleaned_data and not row.cleaned_data.get("DELETE")]


@login_required
@require_http_methods(["GET", "POST"])
def character_edit(request, slug: str, character_slug: str | None = None):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    character = None
    if character_slug is not None:
        character = Character.objects.filter(project=project, slug=character_slug).first()
        if character is None:
            raise Http404(_("No such character."))
    stored = character.contracts if character else []
    initial = {"status": CharacterStatus.ACTIVE, "canon_status": CanonStatus.ESTABLISHED,
               "profile": profile_skeleton()}  # the sections the writer reads
    if character:
        initial = {"slug": character.slug, "display_name": character.display_name, "status": character.status,
                   "canon_status": character.canon_status, "profile": character.profile,
                   "aliases": "、".join(character.aliases or []),
                   "base_version": character.version}
    initial["contracts_json"] = json.dumps(stored, ensure_ascii=False, indent=2)
    form = CharacterForm(request.POST or None, initial=initial)
    if character:
        form.fields["slug"].disabled = True  # files and contracts refer to it; renaming is not an edit
    rows = ContractFormSet(request.POST or None, prefix="contracts",
                           initial=[_contract_initial(c) for c in stored if isinstance(c, dict)])
    conflict = False
    if request.method == "POST" and form.is_valid() and rows.is_valid():
        data = form.cleaned_data
        try:
            contracts = _contracts_from_forms(form, rows, stored)
            fields = {"display_name": data["display_name"], "status": data["status"],
                      "canon_status": data["canon_status"], "profile": data["profile"].replace("\r\n", "\n"),
                      "aliases": data["aliases"],
                      "contracts": contracts}
            if character is None:
                character = story_object_create(instance=Character(project=project, slug=data["slug"], **fields),
                                                editor=request.user)
            else:
                story_object_update(obj=character, editor=request.user, base_version=data["base_version"], **fields)
        except VersionConflict as exc:
            conflict = True
            messages.error(request, _("Someone saved this character (version %(v)s) after you opened it; nothing "
                                      "was saved. Open it again and apply your change.")
                           % {"v": exc.extra.get("current_version")})
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("%(name)s saved.") % {"name": data["display_name"]})
            return redirect("world-character", slug=slug, key=character.slug)
    return render(request, "projects/character_edit.html", page_context(
        access, character=character, form=form, rows=rows, conflict=conflict))
