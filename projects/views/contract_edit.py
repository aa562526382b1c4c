"""The chapter contracts (L3, facts §10.7) on the web: the list by volume, and one contract edited
as form fields: the storyline, objectives (one row each), the world rules it relies on, the states
before and after (one ``who.what = value`` line each), the foreshadowing it moves, the acceptance
criteria and the hand-over to the next storyline. Same service, schema, version check and history
as the admin; keys the form does not show (``storyline_context`` …) are kept as they were.
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
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_safe

from projects.errors import InvalidData, VersionConflict
from projects.json_input import json_loads_checked
from projects.models import ChapterContract, Foreshadowing, Storyline, WorldRule
from projects.permissions import Action
from projects.query_params import query_int
from projects.schemas import FORESHADOW_STATUSES
from projects.services.editing import story_object_update
from projects.views.access import page_context, project_access

OBJECTIVE_TYPES = [
    ("plot", gettext_lazy("Plot")),
    ("foreshadowing", gettext_lazy("Foreshadowing")),
    ("character_development", gettext_lazy("Character development")),
]
STATE_LINE = re.compile(r"^\s*(?P<who>[^.=\s]+)\s*\.\s*(?P<what>[^=]+?)\s*=\s*(?P<value>.*?)\s*$")


class ContractForm(forms.Form):
    storyline_id = forms.ChoiceField(label=gettext_lazy("Storyline"))
    excitement_type = forms.CharField(label=gettext_lazy("Kind of excitement"), max_length=60, required=False)
    required_world_rules = forms.MultipleChoiceField(label=gettext_lazy("World rules it relies on"), required=False,
                                                     widget=forms.CheckboxSelectMultiple)
    states_before = forms.CharField(
        label=gettext_lazy("States before the chapter"), required=False, max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=gettext_lazy("One per line: character.what = value, e.g. lin-feng.location = 北境雪原"))
    states_after = forms.CharField(label=gettext_lazy("State changes the chapter makes"), required=False,
                                   max_length=20_000, widget=forms.Textarea(attrs={"rows": 4}),
                                   help_text=gettext_lazy("Same form: character.what = value"))
    foreshadowing = forms.CharField(
        label=gettext_lazy("Foreshadowing it moves"), required=False, max_length=5000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=gettext_lazy("One per line: id = planted, advanced or resolved"))
    acceptance_criteria = forms.CharField(label=gettext_lazy("Acceptance criteria (one per line)"), required=False,
                                          max_length=10_000, widget=forms.Textarea(attrs={"rows": 3}))
    next_storyline = forms.CharField(label=gettext_lazy("Hand-over: next storyline"), required=False, max_length=60)
    bridge = forms.CharField(label=gettext_lazy("Hand-over: the bridge"), required=False, max_length=2000)
    data_json = forms.CharField(label=gettext_lazy("The contract as JSON (advanced)"), required=False,
                                max_length=200_000, widget=forms.Textarea(attrs={"rows": 10, "class": "mono"}))
    base_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def __init__(self, *args, storylines: list[str], rules: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["storyline_id"].choices = [(s, s) for s in storylines]
        self.fields["required_world_rules"].choices = rules

    def clean_states_before(self):
        return _state_lines(self.cleaned_data["states_before"])

    def clean_states_after(self):
        return _state_lines(self.cleaned_data["states_after"])

    def clean_foreshadowing(self):
        updates = {}
        for number, line in enumerate(self.cleaned_data["foreshadowing"].splitlines(), start=1):
            if not line.strip():
                continue
            fid, _sep, status = (part.strip() for part in line.partition("="))
            if not fid or status not in FORESHADOW_STATUSES:
                raise forms.ValidationError(_("Line %(n)d: write id = planted, advanced or resolved.") % {"n": number})
            updates[fid] = status
        return updates


class ObjectiveForm(forms.Form):
    id = forms.CharField(label=gettext_lazy("Id"), max_length=60)
    # a blank first choice: an unused extra row posts nothing and stays empty
    type = forms.ChoiceField(label=gettext_lazy("Kind"), choices=[("", "—"), *OBJECTIVE_TYPES])
    required = forms.BooleanField(label=gettext_lazy("Required"), required=False)
    description = forms.CharField(label=gettext_lazy("What must happen"), max_length=2000,
                                  widget=forms.Textarea(attrs={"rows": 2}))
    original = forms.CharField(widget=forms.HiddenInput, required=False)


ObjectiveFormSet = forms.formset_factory(ObjectiveForm, extra=1, can_delete=True, max_num=50, validate_max=True)


def _state_lines(text: str) -> dict[str, dict[str, Any]]:
    """``who.what = value`` lines as {who: {what: value}}; a value that reads as JSON (a number,
    true, a list) is kept as that, anything else as text."""
    states: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = STATE_LINE.match(line)
        if match is None:
            raise forms.ValidationError(_("Line %(n)d: write character.what = value.") % {"n": number})
        states.setdefault(match["who"], {})[match["what"]] = _value(match["value"])
    return states


def _value(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float, bool, list)) else text


def _state_text(states: Any) -> str:
    if not isinstance(states, dict):
        return ""
    lines = []
    for who, values in states.items():
        for what, value in (values.items() if isinstance(values, dict) else []):
            shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            lines.append(f"{who}.{what} = {shown}")
    return "\n".join(lines)


def _initial(contract: ChapterContract) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = contract.data
    pre, post = data.get("preconditions") or {}, data.get("postconditions") or {}
    hint = data.get("transition_hint") if isinstance(data.get("transition_hint"), dict) else {}
    form = {
        "storyline_id": data.get("storyline_id"), "excitement_type": data.get("excitement_type") or "",
        "required_world_rules": pre.get("required_world_rules") or [],
        "states_before": _state_text(pre.get("character_states")),
        "states_after": _state_text(post.get("state_changes")),
        "foreshadowing": "\n".join(f"{k} = {v}" for k, v in (post.get("foreshadowing_updates") or {}).items()),
        "acceptance_criteria": "\n".join(data.get("acceptance_criteria") or []),
        "next_storyline": hint.get("next_storyline") or "", "bridge": hint.get("bridge") or "",
        "data_json": json.dumps(data, ensure_ascii=False, indent=2), "base_version": contract.version,
    }
    rows = [{**{k: o.get(k) for k in ("id", "type", "required", "description")},
             "original": json.dumps(o, ensure_ascii=False)}
            for o in data.get("objectives") or [] if isinstance(o, dict)]
    return form, rows


def _contract_data(contract: ChapterContract, form: ContractForm, rows: forms.BaseFormSet) -> dict[str, Any]:
    data = dict(contract.data)
    raw = (form.cleaned_data.get("data_json") or "").strip()
    if raw:
        edited = json_loads_checked(raw)
        if edited != data:  # the person edited the JSON itself: it is the contract
            if not isinstance(edited, dict):
                raise InvalidData(_("The contract as JSON must be an object."))
            return edited
    values = form.cleaned_data
    data["storyline_id"] = values["storyline_id"]
    _set_or_drop(data, "excitement_type", values["excitement_type"].strip())
    data["preconditions"] = {**(data.get("preconditions") or {}), "character_states": values["states_before"],
                             "required_world_rules": values["required_world_rules"]}
    data["postconditions"] = {**(data.get("postconditions") or {}), "state_changes": values["states_after"],
                              "foreshadowing_updates": values["foreshadowing"]}
    data["objectives"] = [_objective(row.cleaned_data) for row in rows
                          if row.cleaned_data and not row.cleaned_data.get("DELETE")]
    data["acceptance_criteria"] = [line.strip() for line in values["acceptance_criteria"].splitlines() if line.strip()]
    if values["next_storyline"].strip() or values["bridge"].strip():
        data["transition_hint"] = {**(data.get("transition_hint") or {}),
                                   "next_storyline": values["next_storyline"].strip(),
                                   "bridge": values["bridge"].strip()}
    elif "transition_hint" in data:
        data["transition_hint"] = None
    return data


def _objective(row: dict[str, Any]) -> dict[str, Any]:
    try:
        original = json.loads(row.get("original") or "{}")
    except ValueError:
        original = {}
    original = original if isinstance(original, dict) else {}
    return {**original, "id": row["id"].strip(), "type": row["type"], "required": bool(row["required"]),
            "description": row["description"].strip()}


def _set_or_drop(data: dict, key: str, value: str) -> None:
    if value:
        data[key] = value
    elif key in data:
        data[key] = None if data[key] is None else ""


@login_required
@require_safe
def contract_list(request, slug: str):
    access = project_access(request, slug)
    contracts = ChapterContract.objects.filter(project=access.project).select_related("volume").order_by("chapter")
    volume = query_int(request.GET, "volume")
    if volume is not None:
        contracts = contracts.filter(volume__number=volume)
    return render(request, "projects/contract_list.html", page_context(access, contracts=contracts[:300]))


@login_required
@require_http_methods(["GET", "POST"])
def contract_edit(request, slug: str, chapter: int):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    contract = ChapterContract.objects.filter(project=project, chapter=chapter).first()
    if contract is None:
        raise Http404(_("No contract for this chapter."))
    storylines = list(Storyline.objects.filter(project=project).order_by("position", "slug")
                      .values_list("slug", flat=True))
    if contract.data.get("storyline_id") and contract.data["storyline_id"] not in storylines:
        storylines.append(contract.data["storyline_id"])
    rules = [(r.rule_id, f"{r.rule_id} · {r.rule[:60]}") for r in WorldRule.objects.filter(project=project)
             .order_by("rule_id").only("rule_id", "rule")]
    named = {rule_id for rule_id, _label in rules}
    rules += [(rule_id, rule_id)
              for rule_id in (contract.data.get("preconditions") or {}).get("required_world_rules", [])
              if isinstance(rule_id, str) and rule_id not in named]  # an id the world no longer has stays choosable
    initial, rows_initial = _initial(contract)
    form = ContractForm(request.POST or None, initial=initial, storylines=storylines, rules=rules)
    rows = ObjectiveFormSet(request.POST or None, prefix="objectives", initial=rows_initial)
    if request.method == "POST" and form.is_valid() and rows.is_valid():
        try:
            data = _contract_data(contract, form, rows)
            story_object_update(obj=contract, editor=request.user, base_version=form.cleaned_data["base_version"],
                                data=data)
        except VersionConflict as exc:
            messages.error(request, _("Someone saved this contract (version %(v)s) after you opened it; nothing was "
                                      "saved. Open it again and apply your change.")
                           % {"v": exc.extra.get("current_version")})
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("The contract of chapter %(n)d is saved.") % {"n": chapter})
            return redirect("contract-list", slug=slug)
    known = set(Foreshadowing.objects.filter(project=project).values_list("fid", flat=True))
    return render(request, "projects/contract_edit.html", page_context(
        access, contract=contract, form=form, rows=rows, foreshadowing_ids=sorted(known),
        before_after=("required_world_rules", "states_before", "states_after", "foreshadowing", "acceptance_criteria",
                      "next_storyline", "bridge")))
