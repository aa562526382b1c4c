"""Editing the rest of the story on the web: world documents, world rules, storylines (with their
memory) and a volume's title and outline. One view for all four, driven by ``KINDS``; lists of
words (keywords, exceptions, point-of-view characters) are one per line, never JSON. Every save
goes through ``story_object_create`` / ``story_object_update`` (validation, version check, history),
as in the admin. Characters and chapter contracts have their own pages (character_edit,
contract_edit)."""
from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import models
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from projects.errors import InvalidData, VersionConflict
from projects.models import Storyline, Volume, WorldDoc, WorldRule
from projects.permissions import Action
from projects.query_params import plain_int
from projects.services.editing import story_object_create, story_object_update
from projects.views.access import page_context, project_access


class LinesField(forms.CharField):
    """A list of strings edited as lines of a textarea."""

    widget = forms.Textarea(attrs={"rows": 3})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        return "\n".join(str(v) for v in value) if isinstance(value, list) else value

    def to_python(self, value):
        return [line.strip() for line in (super().to_python(value) or "").splitlines() if line.strip()]


class StoryForm(forms.ModelForm):
    """Texts are kept as typed: no trimming (an outline's blank lines matter) and browser line ends
    (CRLF) stored as LF, like the files of the tree."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            if isinstance(field, forms.CharField) and isinstance(field.widget, forms.Textarea) \
                    and not isinstance(field, LinesField):
                field.strip = False

    def clean(self):
        cleaned = super().clean()
        for name, value in cleaned.items():
            if isinstance(value, str):
                cleaned[name] = value.replace("\r\n", "\n")
        return cleaned


class WorldDocForm(StoryForm):
    class Meta:
        model = WorldDoc
        fields = ["name", "content"]
        labels = {"name": gettext_lazy("Name (the file name, e.g. geography)"),
                  "content": gettext_lazy("Text (Markdown)")}
        widgets = {"content": forms.Textarea(attrs={"rows": 24})}


class WorldRuleForm(StoryForm):
    keywords = LinesField(label=gettext_lazy("Keywords the checks look for (one per line)"))
    exceptions = LinesField(label=gettext_lazy("Exceptions (one per line)"))

    class Meta:
        model = WorldRule
        fields = ["rule_id", "category", "rule", "constraint_type", "canon_status", "keywords", "exceptions"]
        labels = {"rule_id": gettext_lazy("Id (W-001 …)"), "category": gettext_lazy("Category"),
                  "rule": gettext_lazy("Rule"), "constraint_type": gettext_lazy("Hard or soft"),
                  "canon_status": gettext_lazy("Canon status")}
        widgets = {"rule": forms.Textarea(attrs={"rows": 3})}


class StorylineForm(StoryForm):
    pov_characters = LinesField(label=gettext_lazy("Point-of-view characters (ids, one per line)"))

    class Meta:
        model = Storyline
        fields = ["slug", "name", "type", "scope", "status", "pov_characters", "description", "memory"]
        labels = {"slug": gettext_lazy("Id"), "name": gettext_lazy("Name"), "type": gettext_lazy("Type"),
                  "scope": gettext_lazy("Scope"), "status": gettext_lazy("Status"),
                  "description": gettext_lazy("Description"),
                  "memory": gettext_lazy("Memory (what the writer is reminded of; at most 500 characters)")}
        widgets = {"description": forms.Textarea(attrs={"rows": 4}), "memory": forms.Textarea(attrs={"rows": 4})}


class VolumeForm(StoryForm):
    class Meta:
        model = Volume
        fields = ["number", "title", "outline"]
        labels = {"number": gettext_lazy("Volume"), "title": gettext_lazy("Title"),
                  "outline": gettext_lazy("Outline (Markdown, one '### 第 N 章' block per chapter)")}
        widgets = {"outline": forms.Textarea(attrs={"rows": 30})}


@dataclass(frozen=True)
class Kind:
    model: type[models.Model]
    key: str  # the field that names a row in the address; fixed once the row exists
    form: type[forms.ModelForm]
    title: str
    back: str  # where the page goes after a save: the world page's section, or the chapter list


KINDS = {
    "docs": Kind(WorldDoc, "name", WorldDocForm, gettext_lazy("World document"), "world"),
    "rules": Kind(WorldRule, "rule_id", WorldRuleForm, gettext_lazy("World rule"), "world"),
    "storylines": Kind(Storyline, "slug", StorylineForm, gettext_lazy("Storyline"), "world"),
    "volumes": Kind(Volume, "number", VolumeForm, gettext_lazy("Volume"), "chapter-list"),
}
ANCHORS = {"docs": "docs", "rules": "rules", "storylines": "storylines"}


@login_required
@require_http_methods(["GET", "POST"])
def story_object_edit(request, slug: str, kind: str, key: str | None = None):
    spec = KINDS.get(kind)
    if spec is None:
        raise Http404(_("Nothing to edit here."))
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    obj = None
    if key is not None:
        if spec.model is Volume:
            key = plain_int(key)  # "vol-x" or "²" is no volume: a 404, not a 500
        obj = spec.model.objects.filter(project=project, **{spec.key: key}).first() if key is not None else None
        if obj is None:
            raise Http404(_("Not found."))
    form = spec.form(request.POST or None, instance=obj or spec.model(project=project))
    base_version = forms.IntegerField(required=False).clean(request.POST.get("base_version")) \
        if request.method == "POST" else (obj.version if obj else None)
    if obj is not None:
        form.fields[spec.key].disabled = True  # other files and rows refer to it: renaming is not an edit
    for name, field in form.fields.items():
        if isinstance(field, LinesField) and any(not isinstance(v, str) for v in getattr(obj, name, None) or []):
            field.disabled = True  # imported entries that are not plain words: kept as they are, shown read-only
            field.help_text = _("Kept as imported: these entries are not plain words; change them in the admin.")
    if request.method == "POST" and form.is_valid():
        changes = {name: form.cleaned_data[name] for name, field in form.fields.items()
                   if name != spec.key and not field.disabled}
        try:
            if obj is None:
                obj = story_object_create(instance=spec.model(project=project,
                                                              **{spec.key: form.cleaned_data[spec.key]},
                                                              **changes), editor=request.user)
            else:
                obj = story_object_update(obj=obj, editor=request.user, base_version=base_version, **changes)
        except VersionConflict as exc:
            messages.error(request, _("Someone saved this (version %(v)s) after you opened it; nothing was saved. "
                                      "Open it again and apply your change.") % {"v": exc.extra.get("current_version")})
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Saved."))
            return redirect(_back(spec, kind, project, obj))
    return render(request, "projects/story_object_edit.html", page_context(
        access, form=form, obj=obj, spec=spec, kind=kind, base_version=base_version))


def _back(spec: Kind, kind: str, project, obj) -> str:
    if spec.back == "chapter-list":
        return f"{reverse('chapter-list', args=[project.slug])}?volume={obj.number}"
    return f"{reverse('world', args=[project.slug])}#{ANCHORS[kind]}"
