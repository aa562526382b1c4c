"""Admin for the pipeline's runtime records: read-only (the pipeline owns them), scoped by project
role like the story data. Prompt template overrides are the one thing people edit here."""
from django.contrib import admin

from pipeline.models import GateAnswer, GateQuestion, LLMCall, PipelineRun, PromptTemplate, StageRun
from projects.admin.base import ProjectScopedAdmin, VersionedStoryAdmin


class StageRunInline(admin.TabularInline):
    model = StageRun
    extra = 0
    can_delete = False
    fields = ["stage", "attempt", "status", "model", "duration_ms", "input_tokens", "output_tokens",
              "cache_read_tokens", "cost_usd"]
    readonly_fields = fields

    def has_view_permission(self, request, obj=None):
        return True  # shown on the parent's page, which the user may already see

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(PipelineRun)
class PipelineRunAdmin(ProjectScopedAdmin):
    pipeline_owned = True
    list_display = ["pk", "project", "kind", "chapter", "status", "stage", "lease_owner", "lease_expires_at",
                    "updated_at"]
    list_select_related = ["project"]
    list_filter = ["kind", "status", "project"]
    search_fields = ["project__slug", "stage", "error"]
    inlines = [StageRunInline]


@admin.register(StageRun)
class StageRunAdmin(ProjectScopedAdmin):
    pipeline_owned = True
    project_field = "run__project"
    list_display = ["run", "stage", "attempt", "status", "model", "duration_ms", "input_tokens", "output_tokens",
                    "cost_usd"]
    list_select_related = ["run", "run__project"]
    list_filter = ["stage", "status"]


@admin.register(LLMCall)
class LLMCallAdmin(ProjectScopedAdmin):
    pipeline_owned = True
    project_field = "run__project"
    list_display = ["call_key", "backend", "model", "stop_reason", "cost_usd", "duration_ms", "created_at"]
    list_select_related = ["run"]
    list_filter = ["backend", "model"]
    search_fields = ["call_key", "request_id"]


@admin.register(GateQuestion)
class GateQuestionAdmin(ProjectScopedAdmin):
    pipeline_owned = True
    list_display = ["step", "topic", "project", "status", "created_at"]
    list_select_related = ["project"]
    list_filter = ["status", "project"]
    search_fields = ["step", "topic"]


@admin.register(GateAnswer)
class GateAnswerAdmin(ProjectScopedAdmin):
    pipeline_owned = True
    project_field = "question__project"
    list_display = ["question", "answered_by", "answered_at"]
    list_select_related = ["question", "answered_by"]


@admin.register(PromptTemplate)
class PromptTemplateAdmin(VersionedStoryAdmin):
    list_display = ["name", "project", "updated_by", "updated_at"]
    list_select_related = ["project", "updated_by"]
    list_filter = ["project"]
    search_fields = ["name", "source"]
    autocomplete_fields = ["project"]
    readonly_fields = ("version", "updated_by")

    def extra_changes(self, request, obj):
        return {"updated_by": request.user}
