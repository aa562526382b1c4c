"""A volume's storyline schedule (``storyline-schedule.json``, facts §10.6) on the web, as form
fields: the volume's theme, its active storylines (one row each: storyline, role, target chapters,
goal), how they interleave, where they converge, and which lie dormant or start this volume.
Same service, schema, version check and history as the admin (the schedule lives on the Volume
row). Keys the form does not show are kept, and so is the plain-string shape of a storyline the
person added nothing to (the CLI validates ``active_storylines`` as strings, facts §15.1).
"""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from projects.errors import InvalidData, VersionConflict
from projects.json_input import json_loads_checked
from projects.models import Storyline, Volume
from projects.permissions import Action
from projects.services.editing import story_object_update
from projects.views.access import page_context, project_access

MAX_ACTIVE = 4  # facts §10.6: 1–4 active storylines per volume
ROLES = [("", "—"), ("primary", gettext_lazy("Primary")), ("secondary", gettext_lazy("Secondary")),
         ("seasoning", gettext_lazy("Seasoning"))]
ROW_KEYS = ("storyline_id", "volume_role", "target_chapters", "arc_goal")
INTERLEAVING_KEYS = ("strategy", "primary_max_consecutive", "secondary_min_appearance", "seasoning_placement")


class ScheduleForm(forms.Form):
    volume_theme = forms.CharField(label=gettext_lazy("Theme of the volume"), required=False, max_length=2000,
                                   widget=forms.Textarea(attrs={"rows": 2}))
    strategy = forms.CharField(label=gettext_lazy("How the storylines alternate"), required=False, max_length=500,
                               help_text=gettext_lazy("e.g. the main line carries most chapters, the others cut in"))
    primary_max_consecutive = forms.IntegerField(
        label=gettext_lazy("Chapters the primary storyline may run in a row"), required=False, min_value=1,
        max_value=1000)
    secondary_min_appearance = forms.CharField(
        label=gettext_lazy("How often a secondary storyline must appear"), required=False, max_length=200,
        help_text=gettext_lazy("e.g. every_5_chapters"))
    seasoning_placement = forms.CharField(label=gettext_lazy("Where the seasoning storylines go"), required=False,
                                          max_length=500)
    dormant_storylines = forms.MultipleChoiceField(label=gettext_lazy("Dormant this volume"), required=False,
                                                   widget=forms.CheckboxSelectMultiple)
    newly_activated = forms.MultipleChoiceField(label=gettext_lazy("Starting this volume"), required=False,
                                                widget=forms.CheckboxSelectMultiple)
    data_json = forms.CharField(label=gettext_lazy("The schedule as JSON (advanced)"), required=False,
                                max_length=200_000, widget=forms.Textarea(attrs={"rows": 10, "class": "mono"}))
    base_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)

    def __init__(self, *args, storylines: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dormant_storylines"].choices = storylines
        self.fields["newly_activated"].choices = storylines


class ActiveStorylineForm(forms.Form):
    storyline_id = forms.ChoiceField(label=gettext_lazy("Storyline"))
    volume_role = forms.ChoiceField(label=gettext_lazy("Role in this volume"), choices=ROLES, required=False)
    target_chapters = forms.CharField(label=gettext_lazy("Target chapters"), required=False, max_length=500,
                                      help_text=gettext_lazy("a number, or chapters such as 1-10"))
    arc_goal = forms.CharField(label=gettext_lazy("What it must reach by the volume's end"), required=False,
                               max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    original = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, storylines: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        # a blank first choice: an unused extra row posts nothing and stays empty
        self.fields["storyline_id"].choices = [("", "—"), *storylines]


class BaseActiveStorylineFormSet(forms.BaseFormSet):
    def clean(self):
        if any(self.errors):
            return
        chosen = [row.cleaned_data["storyline_id"] for row in self.forms
                  if row.cleaned_data and not row.cleaned_data.get("DELETE")]
        if not chosen:
            raise forms.ValidationError(_("A volume needs at least one active storyline."))
        if len(chosen) > MAX_ACTIVE:
            raise forms.ValidationError(_("At most %(n)d storylines can be active in one volume.") % {"n": MAX_ACTIVE})
        if len(set(chosen)) != len(chosen):
            raise forms.ValidationError(_("Each storyline can be listed only once."))


class ConvergenceForm(forms.Form):
    start = forms.IntegerField(label=gettext_lazy("From chapter"), min_value=1, max_value=100_000)
    end = forms.IntegerField(label=gettext_lazy("To chapter"), min_value=1, max_value=100_000)
    involved_storylines = forms.MultipleChoiceField(label=gettext_lazy("Storylines that meet"),
                                                    widget=forms.CheckboxSelectMultiple)
    trigger = forms.CharField(label=gettext_lazy("What brings them together"), required=False, max_length=2000,
                              widget=forms.Textarea(attrs={"rows": 2}))
    aftermath = forms.CharField(label=gettext_lazy("What follows"), required=False, max_length=2000,
                                widget=forms.Textarea(attrs={"rows": 2}))
    original = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, storylines: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["involved_storylines"].choices = storylines

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("start") and cleaned.get("end") and cleaned["start"] > cleaned["end"]:
            raise forms.ValidationError(_("The first chapter comes after the last."))
        if len(cleaned.get("involved_storylines") or []) == 1:
            self.add_error("involved_storylines", _("Choose at least two storylines that meet."))
        return cleaned


ActiveFormSet = forms.formset_factory(ActiveStorylineForm, formset=BaseActiveStorylineFormSet, extra=1,
                                      can_delete=True, max_num=MAX_ACTIVE, validate_max=True)
ConvergenceFormSet = forms.formset_factory(ConvergenceForm, extra=1, can_delete=True, max_num=30, validate_max=True)


def _shown(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _kept(text: str) -> Any:
    """The target chapters as typed: a number or a list stays a number or a list, text stays text."""
    text = text.strip()
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, list)) and not isinstance(value, bool) else text


def _initial(schedule: dict[str, Any]) -> tuple[dict, list[dict], list[dict]]:
    pattern = schedule.get("interleaving_pattern") if isinstance(schedule.get("interleaving_pattern"), dict) else {}
    form = {
        "volume_theme": _shown(schedule.get("volume_theme")),
        **{key: pattern.get(key) if key == "primary_max_consecutive" else _shown(pattern.get(key))
           for key in INTERLEAVING_KEYS},
        "dormant_storylines": [s for s in schedule.get("dormant_storylines") or [] if isinstance(s, str)],
        "newly_activated": [s for s in schedule.get("newly_activated") or [] if isinstance(s, str)],
        "data_json": json.dumps(schedule, ensure_ascii=False, indent=2),
    }
    if not isinstance(form["primary_max_consecutive"], int) or isinstance(form["primary_max_consecutive"], bool):
        form["primary_max_consecutive"] = None
    active = []
    for item in schedule.get("active_storylines") or []:
        entry = {"storyline_id": item} if isinstance(item, str) else item if isinstance(item, dict) else None
        if entry:
            active.append({"storyline_id": entry.get("storyline_id"), "volume_role": entry.get("volume_role") or "",
                           "target_chapters": _shown(entry.get("target_chapters")),
                           "arc_goal": _shown(entry.get("arc_goal")), "original": json.dumps(item, ensure_ascii=False)})
    events = []
    for event in schedule.get("convergence_events") or []:
        if not isinstance(event, dict):
            continue
        span = event.get("chapter_range") if isinstance(event.get("chapter_range"), list) else []
        events.append({"start": span[0] if len(span) == 2 else None, "end": span[1] if len(span) == 2 else None,
                       "involved_storylines": [s for s in event.get("involved_storylines") or [] if isinstance(s, str)],
                       "trigger": _shown(event.get("trigger")), "aftermath": _shown(event.get("aftermath")),
                       "original": json.dumps(event, ensure_ascii=False)})
    return form, active, events


def _original(row: dict[str, Any]) -> Any:
    try:
        return json.loads(row.get("original") or "null")
    except ValueError:
        return None


def _active_entry(row: dict[str, Any]) -> str | dict[str, Any]:
    original = _original(row)
    entry = dict(original) if isinstance(original, dict) else {}
    entry["storyline_id"] = row["storyline_id"]
    values = {"volume_role": row["volume_role"], "target_chapters": _kept(row["target_chapters"]),
              "arc_goal": row["arc_goal"].strip()}
    for key, value in values.items():
        if value not in ("", None):
            entry[key] = value
        else:
            entry.pop(key, None)
    if set(entry) == {"storyline_id"} and not isinstance(original, dict):
        return row["storyline_id"]  # nothing added: keep the plain id the CLI expects
    return entry


def _event_entry(row: dict[str, Any]) -> dict[str, Any]:
    original = _original(row)
    entry = dict(original) if isinstance(original, dict) else {}
    entry["chapter_range"] = [row["start"], row["end"]]
    entry["involved_storylines"] = row["involved_storylines"]
    for key in ("trigger", "aftermath"):
        if row[key].strip():
            entry[key] = row[key].strip()
        else:
            entry.pop(key, None)
    return entry


def _schedule(volume: Volume, form: ScheduleForm, active: forms.BaseFormSet,
              events: forms.BaseFormSet) -> dict[str, Any]:
    schedule = dict(volume.storyline_schedule or {})
    raw = (form.cleaned_data.get("data_json") or "").strip()
    if raw:
        edited = json_loads_checked(raw)
        if edited != schedule:  # the person edited the JSON itself: it is the schedule
            if not isinstance(edited, dict):
                raise InvalidData(_("The schedule as JSON must be an object."))
            return edited
    values = form.cleaned_data
    schedule["volume"] = volume.number
    if values["volume_theme"].strip():
        schedule["volume_theme"] = values["volume_theme"].strip()
    else:
        schedule.pop("volume_theme", None)
    schedule["active_storylines"] = [_active_entry(row.cleaned_data) for row in active
                                     if row.cleaned_data and not row.cleaned_data.get("DELETE")]
    old_pattern = schedule.get("interleaving_pattern")
    pattern = dict(old_pattern) if isinstance(old_pattern, dict) else {}
    for key in INTERLEAVING_KEYS:
        value = values[key].strip() if isinstance(values[key], str) else values[key]
        if value not in ("", None):
            pattern[key] = value
        else:
            pattern.pop(key, None)
    if pattern:
        schedule["interleaving_pattern"] = pattern
    else:
        schedule.pop("interleaving_pattern", None)
    schedule["convergence_events"] = [_event_entry(row.cleaned_data) for row in events
                                      if row.cleaned_data and not row.cleaned_data.get("DELETE")]
    for key in ("dormant_storylines", "newly_activated"):
        kept = [s for s in schedule.get(key) or [] if not isinstance(s, str)]  # imported objects stay
        if values[key] or kept or key in schedule:
            schedule[key] = [*values[key], *kept]
    return schedule


@login_required
@require_http_methods(["GET", "POST"])
def schedule_edit(request, slug: str, volume: int):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    row = Volume.objects.filter(project=project, number=volume).first()
    if row is None:
        raise Http404(_("Not found."))
    schedule = row.storyline_schedule if isinstance(row.storyline_schedule, dict) else {}
    names = dict(Storyline.objects.filter(project=project).order_by("position", "slug").values_list("slug", "name"))
    form_initial, active_initial, event_initial = _initial(schedule)
    for entry in [*active_initial, *({"storyline_id": s} for e in event_initial for s in e["involved_storylines"]),
                  *({"storyline_id": s} for s in form_initial["dormant_storylines"] + form_initial["newly_activated"])]:
        if entry["storyline_id"] and entry["storyline_id"] not in names:
            names[entry["storyline_id"]] = ""  # a storyline the schedule names but the project lacks stays choosable
    storylines = [(sid, f"{name} ({sid})" if name else sid) for sid, name in names.items()]
    post = request.POST or None
    form = ScheduleForm(post, initial={**form_initial, "base_version": row.version}, storylines=storylines)
    active = ActiveFormSet(post, prefix="active", initial=active_initial, form_kwargs={"storylines": storylines})
    events = ConvergenceFormSet(post, prefix="events", initial=event_initial, form_kwargs={"storylines": storylines})
    if request.method == "POST" and form.is_valid() and active.is_valid() and events.is_valid():
        try:
            data = _schedule(row, form, active, events)
            story_object_update(obj=row, editor=request.user, base_version=form.cleaned_data["base_version"],
                                storyline_schedule=data)
        except VersionConflict as exc:
            messages.error(request, _("Someone saved this volume (version %(v)s) after you opened it; nothing was "
                                      "saved. Open it again and apply your change.")
                           % {"v": exc.extra.get("current_version")})
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("The storyline schedule of volume %(n)d is saved.") % {"n": volume})
            return redirect(f"{reverse('chapter-list', args=[slug])}?volume={volume}")
    return render(request, "projects/schedule_edit.html", page_context(
        access, volume=row, form=form, active=active, events=events, turns=INTERLEAVING_KEYS))
