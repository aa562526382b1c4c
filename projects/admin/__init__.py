"""Admin for story data. People edit here; JSON is edited through django-jsonform; every save goes
through ``projects.services`` (validation, version check, history)."""
from django import forms
from django.contrib import admin
from django.http import HttpRequest

from projects.admin.base import ProjectScopedAdmin, VersionedStoryAdmin, editable_projects, request_allows
from projects.models import (
    CHECKPOINT_FIELDS,
    ArchivedSummary,
    Chapter,
    ChapterContract,
    ChapterLog,
    ChapterSummary,
    Character,
    Evaluation,
    ExtraFile,
    Foreshadowing,
    ForeshadowingEvent,
    Membership,
    Project,
    ResearchNote,
    Role,
    StateChange,
    StoryState,
    Storyline,
    Volume,
    VolumeStateSnapshot,
    WorldDoc,
    WorldRule,
)
from projects.errors import InvalidData
from projects.json_fields import SchemaJSONModelForm
from projects.permissions import Action
from projects.services.foreshadowing import foreshadowing_id_check, foreshadowing_range_check
from projects.services.projects import (
    membership_is_last_owner,
    membership_remove,
    membership_set_role,
    PROJECT_SETTINGS_FIELDS,
    project_create,
    project_update,
)

admin.site.site_header = "Novelsite"
admin.site.site_title = "Novelsite"


class MembershipForm(forms.ModelForm):
    """Refuses, with a form error, a change that would leave the project without an owner."""

    class Meta:
        model = Membership
        fields = ["project", "user", "role"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("role") != Role.OWNER and membership_is_last_owner(self.instance):
            raise forms.ValidationError("The last owner cannot be demoted; make someone else owner first.")
        return cleaned


class MembershipFormSet(forms.BaseInlineFormSet):
    def clean(self):
        super().clean()
        if self.instance.pk is None:
            return  # a new project: project_create makes its creator owner
        kept_owners = [f for f in self.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")
                       and f.cleaned_data.get("role") == Role.OWNER]
        untouched = self.instance.memberships.filter(role=Role.OWNER).exclude(
            pk__in=[f.instance.pk for f in self.forms if f.instance.pk])
        if not kept_owners and not untouched.exists():
            raise forms.ValidationError("A project needs at least one owner.")


class MembershipInline(admin.TabularInline):
    model = Membership
    form = MembershipForm
    formset = MembershipFormSet
    extra = 0

    def _manages(self, request: HttpRequest, obj) -> bool:
        return obj is not None and request_allows(request, obj.pk, Action.MANAGE)

    def has_view_permission(self, request, obj=None):
        return True  # the inline lives on a project page the user may already see

    def has_add_permission(self, request, obj=None):
        return self._manages(request, obj)

    def has_change_permission(self, request, obj=None):
        return self._manages(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._manages(request, obj)


@admin.register(Project)
class ProjectAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    project_field = "pk"
    delete_action = Action.MANAGE
    list_display = ["title", "slug", "orchestrator_state", "current_volume", "last_completed_chapter",
                    "autopilot_enabled", "updated_at"]
    list_filter = ["orchestrator_state", "autopilot_enabled", "genre"]
    search_fields = ["title", "slug"]
    prepopulated_fields = {"slug": ["title"]}
    readonly_fields = [*CHECKPOINT_FIELDS, "checkpoint_extra", "created_at", "updated_at"]
    inlines = [MembershipInline]
    fieldsets = [
        (None, {"fields": ["title", "slug", "brief", "genre", "target_platform", "genre_drive_type"]}),
        ("Platform", {"fields": ["platform_profile", "genre_weight_profiles", "golden_chapter_gates",
                                 "platform_writing_guide"], "classes": ["collapse"]}),
        ("Style", {"fields": ["style_profile", "ai_blacklist", "style_drift"]}),
        ("Storylines and relationships", {"fields": ["storyline_spec", "storylines_meta", "relationships"],
                                          "classes": ["collapse"]}),
        ("Autopilot and gates", {"fields": ["autopilot_enabled", "autopilot_chapters_per_night",
                                            "autopilot_cost_cap_usd", "manual_cost_cap_usd", "gate_settings",
                                            "lint_settings", "stage_models"]}),
        ("Checkpoint (moved by the pipeline)", {"fields": [*CHECKPOINT_FIELDS, "checkpoint_extra"],
                                                "classes": ["collapse"]}),
        (None, {"fields": ["created_at", "updated_at"]}),
    ]

    def has_add_permission(self, request):
        return request.user.is_active and request.user.is_staff  # any teammate may start a novel

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and not request_allows(request, obj.pk, Action.MANAGE):
            fields += ["slug", *sorted(PROJECT_SETTINGS_FIELDS)]  # an editor changes the style, not the settings
        return fields

    def get_prepopulated_fields(self, request, obj=None):
        return super().get_prepopulated_fields(request, obj) if obj is None else {}  # the slug is kept

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_staff

    def get_deleted_objects(self, objs, request):
        # Everything a project holds goes with it. Whoever may delete the project (its owner) may
        # delete its rows too, including the pipeline's, which are read-only on their own.
        deleted, model_count, _perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, set(), protected

    def save_model(self, request, obj, form, change):
        if change:
            project_update(project=obj, editor=request.user)
        else:
            fields = {f.name: getattr(obj, f.name) for f in obj._meta.concrete_fields
                      if f.name in form.fields and f.name not in ("slug", "title")}
            created = project_create(owner=request.user, slug=obj.slug, title=obj.title, **fields)
            obj.pk = created.pk


@admin.register(Membership)
class MembershipAdmin(ProjectScopedAdmin):
    edit_action = Action.MANAGE
    delete_action = Action.MANAGE
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["project", "user"]
    search_fields = ["project__title", "project__slug", "user__username"]
    autocomplete_fields = ["project"]
    form = MembershipForm

    def get_readonly_fields(self, request, obj=None):
        return ["project", "user"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        saved = membership_set_role(project=obj.project, user=obj.user, role=obj.role)
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        membership_remove(membership=obj)

    def delete_queryset(self, request, queryset):
        for membership in queryset.order_by("pk"):
            membership_remove(membership=membership)

    def get_deleted_objects(self, objs, request):
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        owners_left: dict[int, int] = {}
        for membership in objs:
            if membership.role != Role.OWNER:
                continue
            if membership.project_id not in owners_left:
                owners_left[membership.project_id] = Membership.objects.filter(
                    project_id=membership.project_id, role=Role.OWNER).count()
            owners_left[membership.project_id] -= 1
            if owners_left[membership.project_id] < 1:
                protected = [*protected, f"{membership} (the last owner of {membership.project.slug})"]
        return deleted, model_count, perms_needed, protected

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "project" and not request.user.is_superuser:
            kwargs["queryset"] = Project.objects.filter(
                memberships__user=request.user, memberships__role="owner"
            )
            return admin.ModelAdmin.formfield_for_foreignkey(self, db_field, request, **kwargs)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(ResearchNote)
class ResearchNoteAdmin(VersionedStoryAdmin):
    list_display = ["name", "project", "updated_at"]
    list_select_related = ["project"]
    search_fields = ["name", "content"]
    list_filter = ["project"]
    autocomplete_fields = ["project"]


@admin.register(WorldDoc)
class WorldDocAdmin(VersionedStoryAdmin):
    list_display = ["name", "project", "updated_at"]
    list_select_related = ["project"]
    search_fields = ["name", "content"]
    list_filter = ["project"]
    autocomplete_fields = ["project"]


@admin.register(WorldRule)
class WorldRuleAdmin(VersionedStoryAdmin):
    list_display = ["rule_id", "project", "category", "constraint_type", "canon_status", "short_rule"]
    list_select_related = ["project"]
    list_filter = ["constraint_type", "canon_status", "project"]
    search_fields = ["rule_id", "rule", "category"]
    autocomplete_fields = ["project"]

    @admin.display(description="rule")
    def short_rule(self, obj: WorldRule) -> str:
        return obj.rule[:60]


@admin.register(Character)
class CharacterAdmin(VersionedStoryAdmin):
    list_display = ["display_name", "slug", "project", "status", "canon_status", "updated_at"]
    list_select_related = ["project"]
    list_filter = ["status", "canon_status", "project"]
    search_fields = ["slug", "display_name", "profile"]
    autocomplete_fields = ["project"]


@admin.register(Storyline)
class StorylineAdmin(VersionedStoryAdmin):
    list_display = ["name", "slug", "project", "type", "status", "scope"]
    list_select_related = ["project"]
    list_filter = ["status", "scope", "project"]
    search_fields = ["slug", "name", "description"]
    autocomplete_fields = ["project"]


class ChapterContractInline(admin.TabularInline):
    model = ChapterContract
    fields = ["chapter", "version"]
    readonly_fields = ["chapter", "version"]
    extra = 0
    can_delete = False
    show_change_link = True

    def has_view_permission(self, request, obj=None):
        return True  # shown on the parent's page, which the user may already see

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Volume)
class VolumeAdmin(VersionedStoryAdmin):
    list_display = ["__str__", "project", "title", "status", "updated_at"]
    list_select_related = ["project"]
    list_filter = ["status", "project"]
    search_fields = ["title", "outline", "project__slug"]
    autocomplete_fields = ["project"]
    inlines = [ChapterContractInline]


@admin.register(ChapterContract)
class ChapterContractAdmin(VersionedStoryAdmin):
    list_display = ["__str__", "project", "volume", "chapter"]
    list_select_related = ["project", "volume"]
    list_filter = ["project"]
    search_fields = ["chapter", "project__slug"]
    autocomplete_fields = ["project", "volume"]


@admin.register(Chapter)
class ChapterAdmin(VersionedStoryAdmin):
    list_display = ["number", "title", "project", "volume", "storyline", "word_count", "updated_at"]
    list_select_related = ["project", "volume", "storyline"]
    list_filter = ["project", "volume"]
    search_fields = ["title", "number", "project__slug"]
    autocomplete_fields = ["project", "volume", "storyline"]
    readonly_fields = ("version", "word_count")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("text")  # never load the whole novel for a list


class PipelineOwnedAdmin(ProjectScopedAdmin):
    """Written by the pipeline; people read it here and change it through the pipeline."""

    pipeline_owned = True


@admin.register(ChapterSummary)
class ChapterSummaryAdmin(PipelineOwnedAdmin):
    list_display = ["chapter", "project", "storyline_slug", "updated_at"]
    list_select_related = ["chapter", "project"]
    list_filter = ["project"]
    search_fields = ["text"]


@admin.register(ArchivedSummary)
class ArchivedSummaryAdmin(PipelineOwnedAdmin):
    list_display = ["__str__", "project", "level", "volume_number", "superseded", "created_at"]
    list_select_related = ["project"]
    list_filter = ["level", "superseded", "project"]
    search_fields = ["text"]


@admin.register(Evaluation)
class EvaluationAdmin(PipelineOwnedAdmin):
    list_display = ["chapter", "project", "overall", "recommendation", "gate_decision", "force_passed", "revisions"]
    list_select_related = ["chapter", "project"]
    list_filter = ["gate_decision", "force_passed", "project"]


@admin.register(ChapterLog)
class ChapterLogAdmin(PipelineOwnedAdmin):
    list_display = ["chapter", "project", "gate_decision", "total_duration_ms", "total_cost_usd"]
    list_select_related = ["chapter", "project"]
    list_filter = ["gate_decision", "project"]


@admin.register(StoryState)
class StoryStateAdmin(PipelineOwnedAdmin):
    list_display = ["project", "state_version", "schema_version", "updated_at"]
    list_select_related = ["project"]


@admin.register(StateChange)
class StateChangeAdmin(PipelineOwnedAdmin):
    list_display = ["project", "state_version", "chapter", "storyline_slug", "source", "created_by", "created_at"]
    list_select_related = ["project", "created_by"]
    list_filter = ["source", "project"]
    search_fields = ["storyline_slug"]


@admin.register(VolumeStateSnapshot)
class VolumeStateSnapshotAdmin(PipelineOwnedAdmin):
    list_display = ["__str__", "project", "created_at"]
    list_select_related = ["project"]


class ForeshadowingEventInline(admin.TabularInline):
    model = ForeshadowingEvent
    extra = 0
    readonly_fields = ["chapter", "action", "detail"]
    can_delete = False

    def has_view_permission(self, request, obj=None):
        return True  # shown on the parent's page, which the user may already see

    def has_add_permission(self, request, obj=None):
        return False


class ForeshadowingForm(SchemaJSONModelForm):
    """The web page's rules for a ledger item (id form, a target range with both ends in order)."""

    def clean(self):
        cleaned = super().clean()
        try:
            if self.instance.pk is None and "fid" in cleaned:
                foreshadowing_id_check(cleaned["fid"])
            foreshadowing_range_check(cleaned.get("target_resolve_start"), cleaned.get("target_resolve_end"))
        except InvalidData as exc:
            raise forms.ValidationError(exc.message) from exc
        return cleaned


@admin.register(Foreshadowing)
class ForeshadowingAdmin(ProjectScopedAdmin):
    form = ForeshadowingForm
    list_display = ["fid", "project", "scope", "status", "planted_chapter", "target_resolve_end",
                    "last_updated_chapter"]
    list_select_related = ["project"]
    list_filter = ["scope", "status", "project"]
    search_fields = ["fid", "description"]
    autocomplete_fields = ["project"]
    readonly_fields = ["status", "planted_chapter", "planted_storyline", "last_updated_chapter"]
    inlines = [ForeshadowingEventInline]


@admin.register(ExtraFile)
class ExtraFileAdmin(ProjectScopedAdmin):
    list_display = ["path", "project"]
    list_select_related = ["project"]
    list_filter = ["project"]
    search_fields = ["path"]
    autocomplete_fields = ["project"]


__all__ = ["ProjectAdmin", "editable_projects"]

from projects.admin import facts as _facts  # noqa: E402,F401  (registers the facts ledger's admin)
