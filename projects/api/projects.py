"""Projects: the caller's list, creating one from a brief, reading and changing its settings."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api.pagination import cursor_by, paginated
from projects.api.strict import StrictInput
from projects.models import GenreDriveType, Project, TargetPlatform
from projects.models.project import BRIEF_MAX_CHARS
from projects.platforms.limits import platform_limits
from projects.permissions import Action
from projects.selectors import project_access_for_member, projects_for_user
from projects.serializer_fields import SchemaJSONSerializerField
from projects.services.projects import project_create, project_quota_check, project_settings_update
from projects.slugs import slug_suggest


class ProjectDetailApi(APIView):
    """GET: a project's settings and checkpoint (any member). PATCH: its settings (owner)."""

    class ProjectDetailOutput(serializers.ModelSerializer):
        role = serializers.SerializerMethodField()
        platform_limits = serializers.SerializerMethodField()

        class Meta:
            model = Project
            fields = ["slug", "title", "brief", "genre", "target_platform", "genre_drive_type",
                      "autopilot_enabled", "autopilot_chapters_per_night", "autopilot_cost_cap_usd",
                      "manual_cost_cap_usd", "gate_settings", "lint_settings", "stage_models", "orchestrator_state",
                      "pipeline_stage", "inflight_chapter",
                      "last_completed_chapter", "current_volume", "created_at", "updated_at", "role",
                      "platform_profile", "platform_limits"]

        def get_role(self, project) -> str:
            return self.context.get("role", "")

        def get_platform_limits(self, project) -> dict:
            """What the platform asks of a chapter (projects.platforms.limits.platform_limits)."""
            return platform_limits(project)

    class ProjectUpdateInput(StrictInput):
        title = serializers.CharField(required=False, max_length=200)
        brief = serializers.CharField(required=False, allow_blank=True, max_length=BRIEF_MAX_CHARS * 4)
        genre = serializers.CharField(required=False, allow_blank=True, max_length=40)
        target_platform = serializers.ChoiceField(required=False, allow_blank=True, choices=TargetPlatform.choices)
        genre_drive_type = serializers.ChoiceField(required=False, allow_blank=True, choices=GenreDriveType.choices)
        autopilot_enabled = serializers.BooleanField(required=False)
        autopilot_chapters_per_night = serializers.IntegerField(required=False, min_value=0, max_value=50)
        autopilot_cost_cap_usd = serializers.DecimalField(required=False, max_digits=8, decimal_places=2,
                                                          min_value=0)
        manual_cost_cap_usd = serializers.DecimalField(required=False, max_digits=8, decimal_places=2, min_value=0)
        gate_settings = SchemaJSONSerializerField(schema_name="GATE_SETTINGS", required=False)
        lint_settings = SchemaJSONSerializerField(schema_name="LINT_SETTINGS", required=False)
        stage_models = SchemaJSONSerializerField(schema_name="STAGE_MODELS", required=False)

    @extend_schema(responses=ProjectDetailOutput)
    def get(self, request, slug: str) -> Response:
        access = project_access_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(self.ProjectDetailOutput(access.project, context={"role": access.role}).data)

    @extend_schema(request=ProjectUpdateInput, responses=ProjectDetailOutput)
    def patch(self, request, slug: str) -> Response:
        access = project_access_for_member(user=request.user, slug=slug, action=Action.MANAGE)
        incoming = self.ProjectUpdateInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        project = project_settings_update(project=access.project, editor=request.user, **incoming.validated_data)
        return Response(self.ProjectDetailOutput(project, context={"role": access.role}).data)


class ProjectListCreateApi(APIView):
    """GET: the projects you are a member of. POST: a new project from a brief; you become its owner."""

    pagination_class = cursor_by("pk")

    class ProjectListOutput(serializers.ModelSerializer):
        class Meta:
            model = Project
            fields = ["slug", "title", "genre", "target_platform", "orchestrator_state", "last_completed_chapter",
                      "current_volume", "updated_at"]

    class ProjectCreateInput(StrictInput):
        slug = serializers.SlugField(max_length=60, required=False,
                                     help_text="Made from the title's pinyin when left out.")
        title = serializers.CharField(max_length=200)
        brief = serializers.CharField(required=False, allow_blank=True, max_length=BRIEF_MAX_CHARS * 4,
                                      help_text="≤1000 字 (whitespace not counted).")
        genre = serializers.CharField(required=False, allow_blank=True, max_length=40)
        target_platform = serializers.ChoiceField(required=False, allow_blank=True, choices=TargetPlatform.choices)
        genre_drive_type = serializers.ChoiceField(required=False, allow_blank=True, choices=GenreDriveType.choices)

    @extend_schema(responses=ProjectListOutput(many=True))
    def get(self, request) -> Response:
        projects = projects_for_user(user=request.user).only(*self.ProjectListOutput.Meta.fields, "pk")
        return paginated(self, projects, self.ProjectListOutput)

    @extend_schema(request=ProjectCreateInput, responses={201: ProjectDetailApi.ProjectDetailOutput})
    def post(self, request) -> Response:
        incoming = self.ProjectCreateInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        project_quota_check(request.user)
        fields = dict(incoming.validated_data)
        fields["slug"] = fields.get("slug") or slug_suggest(title=fields["title"], user=request.user)
        project = project_create(owner=request.user, **fields)
        data = ProjectDetailApi.ProjectDetailOutput(project, context={"role": "owner"}).data
        return Response(data, status=status.HTTP_201_CREATED)
