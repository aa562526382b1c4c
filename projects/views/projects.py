"""Project list, creating a project (from a brief or an imported tree), members and settings."""
from __future__ import annotations

import json

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from novelsite.llm_providers import project_problems
from projects.body_limits import body_limit
from projects.stage_model_choices import STAGE_MODEL_PREFIX, stage_model_fields
from projects.errors import InvalidData, NovelsiteError, SlugUnavailable
from projects.filetree.importer import tree_import
from projects.filetree.source import read_zip
from projects.filetree.errors import TreeError
from projects.json_input import json_loads_checked
from projects.models import Membership, Role, VoiceSample
from projects.models.project import BRIEF_MAX_CHARS
from projects.permissions import Action
from projects.query_params import plain_int
from projects.selectors import projects_for_user
from projects.services.invitations import (
    NewMember,
    NoSuchUser,
    email_is_configured,
    member_account_invite,
    member_invite,
)
from projects.services.platforms import project_platform_update
from projects.services.projects import (
    membership_remove,
    project_create,
    project_quota_check,
    project_settings_update,
)
from projects.slugs import slug_suggest
from projects.views.access import flash_error, page_context, project_access
from projects.views.platform_settings import PlatformSettingsForm, platform_form_initial


class ProjectCreateForm(forms.Form):
    title = forms.CharField(label=gettext_lazy("Title"), max_length=200)
    slug = forms.SlugField(label=gettext_lazy("Short name (for URLs)"), max_length=60, required=False,
                           help_text=gettext_lazy("Leave it empty to make one from the title's pinyin."))
    brief = forms.CharField(label=gettext_lazy("Brief"), widget=forms.Textarea(attrs={"rows": 8}),
                            help_text=gettext_lazy("At most %(n)d characters.") % {"n": BRIEF_MAX_CHARS})
    genre = forms.CharField(label=gettext_lazy("Genre"), max_length=40, required=False)


class ProjectImportForm(forms.Form):
    archive = forms.FileField(label=gettext_lazy("Zip of a novel tree"))
    slug = forms.SlugField(label=gettext_lazy("Short name (for URLs)"), max_length=60, required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["archive"].help_text = _("At most %(size)s.") % {
            "size": filesizeformat(settings.NOVELSITE_IMPORT_MAX_UPLOAD_BYTES)}

    def clean_archive(self):
        archive = self.cleaned_data["archive"]
        limit = settings.NOVELSITE_IMPORT_MAX_UPLOAD_BYTES
        if archive.size > limit:  # the body check saw its Content-Length; this is the file itself
            raise forms.ValidationError(_("The file is %(size)s; the limit is %(limit)s.") % {
                "size": filesizeformat(archive.size), "limit": filesizeformat(limit)})
        return archive


@login_required
@require_safe
def project_list(request):
    projects = projects_for_user(user=request.user).order_by("title", "pk")
    return render(request, "projects/project_list.html", {"projects": projects})


@login_required
@require_http_methods(["GET", "POST"])
def project_create_view(request):
    form = ProjectCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        fields = dict(form.cleaned_data)
        fields["slug"] = fields["slug"] or slug_suggest(title=fields["title"], user=request.user)
        try:
            project_quota_check(request.user)
            project = project_create(owner=request.user, **fields)
        except SlugUnavailable as exc:
            form.add_error("slug", exc.message)
        except NovelsiteError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Project created. Take the first step: the quick start."))
            return redirect("dashboard", slug=project.slug)
    return render(request, "projects/project_create.html", {"form": form, "import_form": ProjectImportForm()})


@login_required
@require_safe
def slug_suggestion_view(request):
    """The slug the create form would make from ``?title=`` (the page fills the field as one types)."""
    return JsonResponse({"slug": slug_suggest(title=request.GET.get("title", "")[:200], user=request.user)})


@login_required
@require_POST
@body_limit("NOVELSITE_IMPORT_MAX_UPLOAD_BYTES")  # a larger body is refused before it is read
def project_import_view(request):
    form = ProjectImportForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            project_quota_check(request.user)
            report = tree_import(read_zip(form.cleaned_data["archive"]), slug=form.cleaned_data["slug"] or None,
                                 owner=request.user)
        except TreeError as exc:
            form.add_error(None, str(exc))
        except NovelsiteError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Imported %(files)d files.") % {"files": report.files})
            return redirect("dashboard", slug=report.project.slug)
    return render(request, "projects/project_create.html", {"form": ProjectCreateForm(), "import_form": form})


class MemberForm(forms.Form):
    """Invite an existing account, or change a member's role. The role is chosen, never implied:
    the form starts at the least one (viewer)."""

    username = forms.CharField(label=gettext_lazy("User name or e-mail"), max_length=254)
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=Role.choices, initial=Role.VIEWER)


class NewMemberForm(forms.Form):
    """An account for someone who has none yet."""

    prefix = "new"
    username = forms.CharField(label=gettext_lazy("User name"), max_length=150,
                               help_text=gettext_lazy("Letters, digits and @/./+/-/_ only."))
    email = forms.EmailField(label=gettext_lazy("E-mail"), max_length=254)
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=Role.choices, initial=Role.VIEWER)


@login_required
@require_http_methods(["GET", "POST"])
def members_view(request, slug: str):
    # MANAGE is checked before any form is read: whether an account exists is told to owners only
    access = project_access(request, slug, Action.MANAGE if request.method == "POST" else Action.READ)
    action = request.POST.get("action", "invite") if request.method == "POST" else ""
    form = MemberForm(request.POST if action == "invite" else None)
    new_form = NewMemberForm(request.POST if action == "create" else None)
    new_member = None
    if request.POST.get("remove"):
        _member_remove(request, access.project)
        return redirect("members", slug=slug)
    if action == "invite" and _member_invite(request, access.project, form):
        return redirect("members", slug=slug)
    if action == "create":
        new_member = _member_create(request, access.project, new_form)
        if new_member is not None and new_member.emailed:
            return redirect("members", slug=slug)
        if new_member is not None:
            new_form = NewMemberForm()  # the link is shown once, on this response only
    members = Membership.objects.filter(project=access.project).select_related("user").order_by("user__username")
    return render(request, "projects/members.html", page_context(access, members=members, form=form,
                                                                 new_form=new_form, new_member=new_member,
                                                                 email_configured=email_is_configured()))


def _member_remove(request, project) -> None:
    membership = Membership.objects.filter(project=project, pk=plain_int(request.POST["remove"])).first()
    try:
        membership and membership_remove(membership=membership)
    except NovelsiteError as exc:
        flash_error(request, exc)


def _member_invite(request, project, form: MemberForm) -> bool:
    if not form.is_valid():
        return False
    try:
        membership = member_invite(project=project, identifier=form.cleaned_data["username"],
                                   role=form.cleaned_data["role"])
    except NoSuchUser as exc:
        form.add_error("username", exc.message)
        return False
    except NovelsiteError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, _("%(user)s is now %(role)s.") % {"user": membership.user.get_username(),
                                                                     "role": Role(membership.role).label})
    return True


def _member_create(request, project, form: NewMemberForm) -> NewMember | None:
    if not form.is_valid():
        return None
    try:
        new_member = member_account_invite(project=project, inviter=request.user,
                                           site_url=request.build_absolute_uri("/"), **form.cleaned_data)
    except InvalidData as exc:
        for field, errors in (exc.extra.get("fields") or {"__all__": [exc.message]}).items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
        return None
    user, role = new_member.membership.user, Role(new_member.membership.role).label
    if new_member.emailed:
        messages.success(request, _("Account %(user)s created as %(role)s; the invitation was sent to %(email)s.")
                         % {"user": user.get_username(), "role": role, "email": user.email})
    else:
        messages.success(request, _("Account %(user)s created as %(role)s.") % {"user": user.get_username(),
                                                                                 "role": role})
    return new_member


LINT_SETTINGS_EXAMPLE = '{"lints": {"simile_max_per_kchars": 3}, "word_count": {"min": 2000, "max": 4000}}'


class ProjectSettingsForm(forms.Form):
    title = forms.CharField(label=gettext_lazy("Title"), max_length=200)
    brief = forms.CharField(label=gettext_lazy("Brief"), widget=forms.Textarea(attrs={"rows": 6}), required=False)
    autopilot_enabled = forms.BooleanField(label=gettext_lazy("Autopilot (nightly batches)"), required=False)
    autopilot_chapters_per_night = forms.IntegerField(label=gettext_lazy("Chapters per night"),
                                                      min_value=0, max_value=50)
    autopilot_cost_cap_usd = forms.DecimalField(label=gettext_lazy("Cost cap per night (USD)"), min_value=0,
                                                max_digits=8, decimal_places=2)
    manual_cost_cap_usd = forms.DecimalField(
        label=gettext_lazy("Cost cap per day for work started by hand (USD)"), min_value=0, max_digits=8,
        decimal_places=2)
    gate_settings = forms.CharField(label=gettext_lazy("Gate thresholds (JSON)"),
                                    widget=forms.Textarea(attrs={"rows": 4}),
                                    required=False)
    lint_settings = forms.CharField(
        label=gettext_lazy("Craft lint thresholds (JSON)"), widget=forms.Textarea(attrs={"rows": 4}), required=False,
        help_text=format_lazy("{} {}", gettext_lazy("Over the platform's (empty: the platform's and the defaults), "
                                                    "for example:"), LINT_SETTINGS_EXAMPLE))

    def clean_json(self, name: str):
        raw = (self.cleaned_data.get(name) or "").strip()
        try:
            return json_loads_checked(raw) if raw else {}  # bounded depth, no NUL: never a 500
        except InvalidData as exc:
            raise forms.ValidationError(_("Not valid JSON: %(error)s") % {"error": exc.message}) from exc

    def __init__(self, *args, stage_models=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.stage_model_fields = stage_model_fields(stage_models or {})
        self.fields.update(self.stage_model_fields)

    def clean(self):
        cleaned = super().clean()
        cleaned["stage_models"] = {name[len(STAGE_MODEL_PREFIX):]: cleaned[name] for name in self.stage_model_fields
                                   if cleaned.get(name)}
        return cleaned

    def clean_gate_settings(self):
        return self.clean_json("gate_settings")

    def clean_lint_settings(self):
        return self.clean_json("lint_settings")


SETTINGS_FIELDS = ("title", "brief", "autopilot_enabled", "autopilot_chapters_per_night", "autopilot_cost_cap_usd",
                   "manual_cost_cap_usd", "stage_models", "gate_settings", "lint_settings")


def _settings_initial(project) -> dict:
    initial = {name: getattr(project, name) for name in SETTINGS_FIELDS}
    initial["gate_settings"] = json.dumps(project.gate_settings or {}, ensure_ascii=False, indent=2)
    initial["lint_settings"] = json.dumps(project.lint_settings or {}, ensure_ascii=False, indent=2)
    return initial


def settings_page_context(project) -> dict:
    """The settings page's two forms as they stand (the platform form posts to its own view)."""
    return {"form": ProjectSettingsForm(initial=_settings_initial(project), stage_models=project.stage_models),
            "platform_form": PlatformSettingsForm(initial=platform_form_initial(project), project=project),
            "llm_problems": project_problems(project.stage_models),
            "has_voice_sample": VoiceSample.objects.filter(project=project).exists()}


@login_required
@require_http_methods(["GET", "POST"])
def settings_view(request, slug: str):
    access = project_access(request, slug, Action.MANAGE)
    project = access.project
    form = ProjectSettingsForm(request.POST or None, initial=_settings_initial(project),
                               stage_models=project.stage_models)
    if request.method == "POST" and form.is_valid():
        try:
            project_settings_update(project=project, editor=request.user,
                                    **{name: form.cleaned_data[name] for name in SETTINGS_FIELDS})
        except NovelsiteError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Settings saved."))
            return redirect("settings", slug=slug)
    return render(request, "projects/settings.html", page_context(access, **{**settings_page_context(project),
                                                                           "form": form}))


@login_required
@require_http_methods(["GET", "POST"])
def platform_settings_view(request, slug: str):
    """POST only in practice: the form is shown on the settings page. Another platform starts from
    that platform's own numbers; otherwise the posted numbers are saved, checked in full."""
    access = project_access(request, slug, Action.MANAGE)
    project = access.project
    if request.method != "POST":
        return redirect("settings", slug=slug)
    form = PlatformSettingsForm(request.POST, project=project)
    if form.is_valid():
        data = form.cleaned_data
        changed = data["target_platform"] != project.target_platform
        numbers = None if changed else {name: data[name] for name in form.NUMBER_FIELDS}
        try:
            project_platform_update(project=project, editor=request.user, platform=data["target_platform"],
                                    genre=data["genre"], genre_drive_type=data["genre_drive_type"], numbers=numbers)
        except NovelsiteError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Platform settings saved; the new platform's own numbers apply.") if changed
                             else _("Platform settings saved."))
            return redirect("settings", slug=slug)
    return render(request, "projects/settings.html", page_context(access, **{**settings_page_context(project),
                                                                           "platform_form": form}))
