"""Admin building blocks: per-project role scoping and conflict-safe, versioned edits.

A non-superuser staff member sees only the projects they belong to; owners and editors edit,
reviewers and viewers read (``projects.permissions``). Django's model permissions are not
consulted: a role in the project decides, so one membership row is all a teammate needs.
"""
from __future__ import annotations

import copy
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.http import HttpRequest
from simple_history.admin import SimpleHistoryAdmin

from projects.errors import VersionConflict
from projects.json_fields import SchemaJSONModelForm
from projects.models import EditVersioned, Membership, Project
from projects.permissions import Action, role_allows
from projects.services.editing import story_object_create, story_object_update, story_object_version_check


def _roles(request: HttpRequest) -> dict[int, str]:
    """The user's role per project id, read once per request."""
    if not hasattr(request, "_novel_roles"):
        rows = Membership.objects.filter(user_id=request.user.pk).values_list("project_id", "role")
        request._novel_roles = dict(rows)
    return request._novel_roles


def request_allows(request: HttpRequest, project_id: int | None, action: Action) -> bool:
    """May the request's user do ``action`` in that project?"""
    user = request.user
    if not (user.is_active and user.is_staff):
        return False
    return user.is_superuser or role_allows(_roles(request).get(project_id), action)


def editable_projects(request: HttpRequest) -> models.QuerySet[Project]:
    if request.user.is_superuser:
        return Project.objects.all()
    ids = [pid for pid, role in _roles(request).items() if role_allows(role, Action.EDIT)]
    return Project.objects.filter(pk__in=ids)


class ProjectScopedAdmin(admin.ModelAdmin):
    """Rows of one project, visible and editable by role. ``project_field`` is the path from the
    model to its Project; ``pipeline_owned`` makes the model read-only for everyone."""

    form = SchemaJSONModelForm
    project_field = "project"
    pipeline_owned = False
    edit_action = Action.EDIT
    delete_action = Action.EDIT

    def _project_id(self, obj: models.Model) -> int:
        if self.project_field == "pk":
            return obj.pk
        *path, last = self.project_field.split("__")
        for part in path:
            obj = getattr(obj, part)
        return getattr(obj, f"{last}_id")

    def _allows(self, request: HttpRequest, action: Action, obj: models.Model | None) -> bool:
        if obj is not None:
            return request_allows(request, self._project_id(obj), action)
        if not (request.user.is_active and request.user.is_staff):
            return False
        return request.user.is_superuser or any(role_allows(r, action) for r in _roles(request).values())

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(**{f"{self.project_field}__in": list(_roles(request))})

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._allows(request, Action.READ, None)

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return self._allows(request, Action.READ, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not self.pipeline_owned and self._allows(request, self.edit_action, None)

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return not self.pipeline_owned and self._allows(request, self.edit_action, obj)

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return not self.pipeline_owned and self._allows(request, self.delete_action, obj)

    def get_list_filter(self, request):
        # A filter on a relation lists only the related rows of this user's projects (the default
        # lists every project's title and slug, and every volume, to any staff member).
        filters = []
        for entry in super().get_list_filter(request):
            if isinstance(entry, str) and self.model._meta.get_field(entry).is_relation:
                entry = (entry, admin.RelatedOnlyFieldListFilter)
            filters.append(entry)
        return filters

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        # Only projects (and their rows) the user may edit can be chosen; posting another id fails
        # form validation rather than reaching the database.
        related = db_field.related_model
        if related is Project:
            kwargs["queryset"] = editable_projects(request)
        elif any(f.name == "project" and f.related_model is Project for f in related._meta.fields):
            kwargs["queryset"] = related._default_manager.filter(project__in=editable_projects(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class VersionedForm(SchemaJSONModelForm):
    """Carries the version the editor started from; a save over a newer version is refused."""

    base_version = forms.IntegerField(widget=forms.HiddenInput, required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.instance.pk is None:
            return cleaned
        base = cleaned.get("base_version")
        try:
            # Locks the project and the row for the rest of the admin's transaction, so that two
            # people saving at once get this message, one of them, rather than a 500 at the write.
            story_object_version_check(obj=self.instance, base_version=base)
        except VersionConflict as conflict:
            raise forms.ValidationError(
                "Someone else saved this (version %(current)s) after you opened it (version %(base)s). "
                "Nothing was saved: copy your changes, reload the page and apply them again.",
                code="version_conflict",
                params={"current": conflict.extra["current_version"], "base": base},
            ) from None
        return cleaned


class VersionedStoryAdmin(ProjectScopedAdmin, SimpleHistoryAdmin):
    """Human-edited story objects: history of every save (who, when, diff, revert) and optimistic
    concurrency through ``projects.services.editing``."""

    form = VersionedForm
    readonly_fields: tuple[str, ...] = ("version",)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change=change, **kwargs)
        # The version in the database now, not the one on obj: a revert from history starts
        # from a historical instance, but it is applied over the latest version.
        current = None
        if obj is not None and obj.pk is not None:
            current = type(obj)._default_manager.filter(pk=obj.pk).values_list("version", flat=True).first()
        # A copy per form class: the declared field is shared by every form built from VersionedForm,
        # so setting .initial on it would leak one request's version into another's form.
        base_version = copy.deepcopy(form_class.base_fields["base_version"])
        base_version.initial = current
        form_class.base_fields["base_version"] = base_version
        return form_class

    def _history_refusal(self, request, object_id: str):
        """As the change view answers: 403 for someone who may not see this model at all (whatever the
        id), the "does not exist" redirect for an id outside the user's projects or missing."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        if self._history_hidden(request, object_id):
            return self._get_obj_does_not_exist_redirect(request, self.model._meta, object_id)
        return None

    def _history_hidden(self, request, object_id: str) -> bool:
        """simple_history finds an object's history outside ``get_queryset`` (so that a deleted
        object's history can be seen), then answers 403 for another project's object where a
        missing id is a 404: that tells a stranger the id exists. Hidden unless the object, or
        the latest historical record of a deleted one, belongs to a project the user may read."""
        try:
            if self.get_queryset(request).filter(pk=object_id).exists():
                return False
            history = getattr(self.model, self.model._meta.simple_history_manager_attribute)
            latest = history.filter(**{self.model._meta.pk.attname: object_id}).order_by("-history_date").first()
        except (ValueError, ValidationError):  # not an id of this model at all
            return True
        return latest is None or not self.has_view_permission(request, latest.instance)

    def history_view(self, request, object_id, extra_context=None):
        refusal = self._history_refusal(request, unquote(object_id))
        return refusal or super().history_view(request, object_id, extra_context)

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        refusal = self._history_refusal(request, unquote(object_id))
        if refusal:
            return refusal
        # simple_history checks only the view permission, also for the POST that reverts: a revert is
        # a change and needs the change permission on the current row.
        if request.method == "POST":
            obj = self.get_object(request, unquote(object_id))
            if obj is None or not self.has_change_permission(request, obj):
                raise PermissionDenied
        return super().history_form_view(request, object_id, version_id, extra_context)

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        if "base_version" not in fields:
            fields.append("base_version")
        return fields

    def extra_changes(self, request, obj: EditVersioned) -> dict[str, Any]:
        """Fields the admin sets itself on every save (not from the form)."""
        return {}

    def save_model(self, request, obj: EditVersioned, form, change: bool) -> None:
        if not change:
            for name, value in self.extra_changes(request, obj).items():
                setattr(obj, name, value)
            story_object_create(instance=obj, editor=request.user)
            return
        names = [f.name for f in obj._meta.concrete_fields if f.name in form.fields and f.editable]
        changes = {name: getattr(obj, name) for name in names} | self.extra_changes(request, obj)
        saved = story_object_update(
            obj=obj, editor=request.user, base_version=form.cleaned_data["base_version"], **changes
        )
        obj.version = saved.version
