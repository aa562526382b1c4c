"""The facts ledger on the web (issue #18, #16): a list of the book's lasting facts (open or
closed, by character) for every member, and forms to add and edit them for those whose role
allows editing. Fields are form fields (characters and foreshadowing as checkboxes, never JSON);
every save goes through ``story_fact_create`` / ``story_fact_update`` (validation, version check,
history), as in the admin."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods

from projects.errors import InvalidData, VersionConflict
from projects.labels import label
from projects.models import StoryFact
from projects.permissions import Action
from projects.schemas import STORY_FACT_KINDS, STORY_FACT_STATUSES, STORY_FACT_TEXT_MAX
from projects.selectors import story_facts_for_list
from projects.services.facts import HUMAN_FIELDS, story_fact_create, story_fact_update
from projects.views.access import page_context, project_access

LIST_FILTERS = ("open", "closed", "all")


class StoryFactForm(forms.Form):
    kind = forms.ChoiceField(label=gettext_lazy("Kind"))
    text = forms.CharField(label=gettext_lazy("What is true from now on"), max_length=STORY_FACT_TEXT_MAX,
                           widget=forms.Textarea(attrs={"rows": 3}))
    chapter = forms.IntegerField(label=gettext_lazy("Established in chapter"), min_value=1, max_value=100_000)
    characters = forms.MultipleChoiceField(label=gettext_lazy("Characters it binds"), required=False,
                                           widget=forms.CheckboxSelectMultiple)
    storyline = forms.ChoiceField(label=gettext_lazy("Storyline"), required=False)
    foreshadowing = forms.MultipleChoiceField(label=gettext_lazy("Related foreshadowing"), required=False,
                                              widget=forms.CheckboxSelectMultiple)
    status = forms.ChoiceField(label=gettext_lazy("Status"))
    closed_chapter = forms.IntegerField(label=gettext_lazy("Fulfilled or cancelled in chapter"), min_value=1,
                                        max_value=100_000, required=False,
                                        help_text=gettext_lazy("Only for a fulfilled or cancelled fact."))
    closing_note = forms.CharField(label=gettext_lazy("How it was fulfilled or cancelled"), required=False,
                                   max_length=STORY_FACT_TEXT_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    base_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, project, fact: StoryFact | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [(k, label("fact_kind", k)) for k in STORY_FACT_KINDS]
        self.fields["status"].choices = [(s, label("fact_status", s)) for s in STORY_FACT_STATUSES]
        self.fields["characters"].choices = list(project.characters.order_by("slug")
                                                 .values_list("slug", "display_name"))
        self.fields["storyline"].choices = [("", "—"), *project.storylines.values_list("slug", "name")]
        fids = list(project.foreshadowing.order_by("fid").values_list("fid", flat=True))
        kept = [f for f in (fact.foreshadowing if fact else []) if f not in fids]  # imported ids: kept, shown
        self.fields["foreshadowing"].choices = [(f, f) for f in fids + kept]
        if not self.fields["foreshadowing"].choices:
            del self.fields["foreshadowing"]

    def clean_text(self):
        return self.cleaned_data["text"].replace("\r\n", "\n").strip()

    def clean_closing_note(self):
        return self.cleaned_data["closing_note"].replace("\r\n", "\n").strip()

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("status") == "open":
            cleaned["closed_chapter"], cleaned["closing_note"] = None, ""
        elif cleaned.get("status") and cleaned.get("closed_chapter") is None:
            self.add_error("closed_chapter", _("Say in which chapter the fact was fulfilled or cancelled."))
        return cleaned


@login_required
@require_GET
def fact_list(request, slug: str):
    access = project_access(request, slug, Action.READ)
    project = access.project
    shown = request.GET.get("status") if request.GET.get("status") in LIST_FILTERS else "open"
    characters = dict(project.characters.order_by("slug").values_list("slug", "display_name"))
    character = request.GET.get("character") if request.GET.get("character") in characters else ""
    facts = story_facts_for_list(project=project, status=shown, character=character)
    for fact in facts:
        fact.names = [characters.get(s, s) for s in fact.characters]
    return render(request, "projects/fact_list.html", page_context(
        access, facts=facts, shown=shown, character=character, characters=characters, filters=LIST_FILTERS))


@login_required
@require_http_methods(["GET", "POST"])
def fact_edit(request, slug: str, fact_id: str | None = None):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    fact = None
    if fact_id is not None:
        fact = StoryFact.objects.filter(project=project, fact_id=fact_id).first()
        if fact is None:
            raise Http404(_("No such fact."))
    initial = {"kind": "promise", "status": "open", "chapter": project.last_completed_chapter or 1}
    if fact:
        initial = {name: getattr(fact, name) for name in HUMAN_FIELDS} | {"base_version": fact.version}
    form = StoryFactForm(request.POST or None, initial=initial, project=project, fact=fact)
    if request.method == "POST" and form.is_valid():
        values = {name: form.cleaned_data.get(name, []) for name in HUMAN_FIELDS}
        values["foreshadowing"] = list(values["foreshadowing"] or [])
        try:
            if fact is None:
                fact = story_fact_create(project=project, editor=request.user, **values)
            else:
                fact = story_fact_update(fact=fact, editor=request.user, base_version=form.cleaned_data["base_version"],
                                         **values)
        except VersionConflict as exc:
            messages.error(request, _("Someone saved this (version %(v)s) after you opened it; nothing was saved. "
                                      "Open it again and apply your change.") % {"v": exc.extra.get("current_version")})
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("%(id)s saved.") % {"id": fact.fact_id})
            return redirect(reverse("fact-list", args=[project.slug])
                            + ("?status=all" if fact.status != "open" else ""))
    history = list(fact.history.select_related("history_user").order_by("-history_date")[:20]) if fact else []
    return render(request, "projects/fact_edit.html", page_context(access, form=form, fact=fact, history=history))
