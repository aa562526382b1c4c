"""Editing the foreshadowing ledger on the web: a person adds an item (id, description, scope, target
chapter range) or changes those fields of an existing one. Status, the planted chapter and the
history are the pipeline's (facts §10.9: they follow committed chapters) and are shown read-only.
Saves go through ``foreshadowing_create`` / ``foreshadowing_update``."""
from __future__ import annotations

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
from projects.labels import label
from projects.models import Foreshadowing
from projects.models.foreshadowing import ForeshadowScope
from projects.permissions import Action
from projects.services.foreshadowing import (
    HUMAN_FIELDS,
    foreshadowing_create,
    foreshadowing_digest,
    foreshadowing_update,
)
from projects.state_ops import MAX_FORESHADOW_ID_LENGTH
from projects.views.access import page_context, project_access


class ForeshadowingForm(forms.Form):
    fid = forms.CharField(label=gettext_lazy("Id"), max_length=MAX_FORESHADOW_ID_LENGTH,
                          help_text=gettext_lazy("Like F-001: no spaces or slashes; fixed once saved."))
    description = forms.CharField(label=gettext_lazy("Description"), required=False, max_length=20_000,
                                  strip=False, widget=forms.Textarea(attrs={"rows": 4}))
    scope = forms.ChoiceField(label=gettext_lazy("Scope"), choices=ForeshadowScope.choices)
    target_resolve_start = forms.IntegerField(label=gettext_lazy("Resolve from chapter"), min_value=0,
                                              max_value=100_000, required=False)
    target_resolve_end = forms.IntegerField(label=gettext_lazy("Resolve by chapter"), min_value=0,
                                            max_value=100_000, required=False)
    base_digest = forms.CharField(widget=forms.HiddenInput, required=False, max_length=64)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["scope"].choices = [(code, label("foreshadow_scope", code)) for code, _l in
                                        ForeshadowScope.choices]

    def clean_description(self):
        return self.cleaned_data["description"].replace("\r\n", "\n")


@login_required
@require_http_methods(["GET", "POST"])
def foreshadowing_edit(request, slug: str, fid: str | None = None):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    item = None
    if fid is not None:
        item = Foreshadowing.objects.filter(project=project, fid=fid).first()
        if item is None:
            raise Http404(_("No such foreshadowing item."))
    initial = {"scope": "medium"}
    if item:
        initial = {"fid": item.fid, **{name: getattr(item, name) for name in HUMAN_FIELDS},
                   "base_digest": foreshadowing_digest(item)}
    form = ForeshadowingForm(request.POST or None, initial=initial)
    if item:
        form.fields["fid"].disabled = True  # chapters' foreshadow ops name it: renaming is not an edit
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        fields = {name: data[name] for name in HUMAN_FIELDS}
        try:
            if item is None:
                item = foreshadowing_create(project=project, editor=request.user, fid=data["fid"], **fields)
            else:
                item = foreshadowing_update(item=item, editor=request.user, base_digest=data["base_digest"], **fields)
        except VersionConflict:
            messages.error(request, _("Someone changed this item after you opened it; nothing was saved. "
                                      "Open it again and apply your change."))
        except InvalidData as exc:
            form.add_error("fid" if exc.extra.get("field") == "fid" and not item else None, exc.message)
        else:
            messages.success(request, _("%(fid)s saved.") % {"fid": item.fid})
            return redirect(f"{reverse('world', args=[project.slug])}#foreshadowing")
    events = list(item.events.order_by("chapter", "pk")) if item else []
    return render(request, "projects/foreshadowing_edit.html", page_context(
        access, form=form, item=item, events=events))
