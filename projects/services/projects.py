"""Creating projects and managing who belongs to them."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from novelsite.llm_providers import stage_model_problems
from projects.errors import InvalidData, NovelsiteError, SlugUnavailable
from projects.lock_objects import project_lock
from projects.models import CHECKPOINT_FIELDS, Membership, Project, Role, StoryState
from projects.platforms.apply import platform_apply
from projects.services.editing import full_clean_or_raise
from projects.slugs import slug_not_available_message, slug_unavailable_message
from projects.state_ops import empty_state


class ProjectLimitReached(NovelsiteError):
    """You own as many projects as one person may; delete one, or ask a staff member."""

    code = "project_limit"
    http_status = 403


def project_quota_check(user: AbstractBaseUser) -> None:
    """Before a person creates or imports a project: each one may start quick starts that cost LLM
    calls, so a person owns at most ``NOVELSITE_SPENDING["max_projects_per_user"]`` (staff exempt)."""
    if user.is_staff or user.is_superuser:
        return
    limit = settings.NOVELSITE_SPENDING["max_projects_per_user"]
    owned = Membership.objects.filter(user=user, role=Role.OWNER).count()
    if owned >= limit:
        raise ProjectLimitReached(
            _("You already own %(owned)d projects, the most one person may own here (%(limit)d).")
            % {"owned": owned, "limit": limit}, extra={"owned": owned, "limit": limit})


@transaction.atomic
def project_create(*, owner: AbstractBaseUser | None, slug: str, title: str, **fields) -> Project:
    """A new project in INIT with an empty state; ``owner`` becomes its owner. A taken or reserved
    slug is refused with the same message whoever holds it (``projects.slugs``)."""
    unavailable = slug_unavailable_message(slug=slug, user=owner)
    if unavailable:
        raise SlugUnavailable(unavailable, extra={"fields": {"slug": [unavailable]}})
    platform = fields.pop("target_platform", "")
    project = Project(slug=slug, title=title, **fields)
    if platform:  # the platform's built-in profile becomes the project's (projects.platforms.apply)
        platform_apply(project, platform=platform)
    project._history_user = owner
    full_clean_or_raise(project)
    try:
        with transaction.atomic():  # two people creating the same slug at once: the loser is told the same
            project.save()
    except IntegrityError:
        message = slug_not_available_message()
        raise SlugUnavailable(message, extra={"fields": {"slug": [message]}}) from None
    StoryState.objects.create(project=project, data=empty_state())
    if owner is not None:
        Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    return project


@transaction.atomic
def project_update(*, project: Project, editor: AbstractBaseUser | None) -> Project:
    """Save edited project settings (``project`` already carries the new values). The checkpoint
    fields are the pipeline's and are not written here."""
    project._history_user = editor
    full_clean_or_raise(project)
    editable = [f.name for f in Project._meta.concrete_fields
                if f.editable and not f.primary_key and f.name not in CHECKPOINT_FIELDS
                and f.name != "checkpoint_extra"]
    project.save(update_fields=[*editable, "updated_at"])
    return project


@transaction.atomic
def membership_set_role(*, project: Project, user: AbstractBaseUser, role: str) -> Membership:
    """Add ``user`` with ``role``, or change their role. A project always keeps one owner."""
    if role not in Role.values:
        raise InvalidData(f"role: unknown role {role!r}; use one of {', '.join(Role.values)}")
    project_lock(project.pk)
    membership, _created = Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})
    if role != Role.OWNER and membership_is_last_owner(membership):
        raise InvalidData("role: the last owner cannot be demoted; make someone else owner first")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    """Remove someone from a project. A project always keeps one owner."""
    project_lock(membership.project_id)
    if membership_is_last_owner(membership):
        raise InvalidData("role: the last owner cannot be removed; make someone else owner first")
    membership.delete()


def membership_is_last_owner(membership: Membership) -> bool:
    if membership.pk is None:
        return False
    stored_role = Membership.objects.filter(pk=membership.pk).values_list("role", flat=True).first()
    others = Membership.objects.filter(project_id=membership.project_id, role=Role.OWNER).exclude(pk=membership.pk)
    return stored_role == Role.OWNER and not others.exists()


PROJECT_SETTINGS_FIELDS = frozenset({
    "title", "brief", "genre", "target_platform", "genre_drive_type", "autopilot_enabled",
    "autopilot_chapters_per_night", "autopilot_cost_cap_usd", "manual_cost_cap_usd", "gate_settings", "lint_settings",
    "stage_models",
})


@transaction.atomic
def project_settings_update(*, project: Project, editor: AbstractBaseUser | None, **changes) -> Project:
    """Change a project's settings (the API's PATCH): only the fields people own, validated in
    full (JSON schemas included) before anything is written. Takes the project lock."""
    unknown = set(changes) - PROJECT_SETTINGS_FIELDS
    if unknown:
        raise InvalidData(f"not a project setting: {', '.join(sorted(unknown))}")
    if isinstance(changes.get("stage_models"), dict):
        # a provider or model the site does not offer is refused now, not found by a worker later (#19);
        # one saved earlier and no longer offered is kept as it is (the pages say so)
        before = project.stage_models or {}
        chosen = {stage: model for stage, model in changes["stage_models"].items() if before.get(stage) != model}
        if problems := stage_model_problems(chosen):
            raise InvalidData("; ".join(problems), extra={"field": "stage_models"})
    current = project_lock(project.pk)
    platform = changes.pop("target_platform", None)
    for name, value in changes.items():
        setattr(current, name, value)
    if platform is not None:  # another platform brings its own profile (projects.platforms.apply)
        platform_apply(current, platform=platform)
    return project_update(project=current, editor=editor)
