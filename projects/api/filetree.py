"""Export as a streamed zip download, and import from an uploaded zip."""
from __future__ import annotations

from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.errors import NotFound
from projects.filetree.errors import TreeError
from projects.filetree.export import zip_stream
from projects.filetree.importer import tree_import
from projects.filetree.source import read_zip
from projects.models import Project
from projects.permissions import Action
from projects.selectors import project_get_for_member
from projects.services.projects import project_quota_check
from projects.slugs import slug_not_available_message


class ProjectExportApi(APIView):
    @extend_schema(responses={(200, "application/zip"): OpenApiTypes.BINARY})
    def get(self, request, slug: str) -> StreamingHttpResponse:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        response = StreamingHttpResponse(zip_stream(project), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{project.slug}.zip"'
        return response


class ProjectImportApi(APIView):
    parser_classes = [MultiPartParser]
    body_limit_setting = "NOVELSITE_IMPORT_MAX_UPLOAD_BYTES"  # projects/body_limits.py, before parsing

    class ProjectImportInput(serializers.Serializer):
        file = serializers.FileField()
        slug = serializers.SlugField(required=False, max_length=60)
        replace = serializers.BooleanField(default=False)

        def validate_file(self, file):
            limit = settings.NOVELSITE_IMPORT_MAX_UPLOAD_BYTES
            if file.size > limit:
                raise serializers.ValidationError(f"The file is {file.size} bytes; the limit is {limit}.")
            return file

    class ProjectImportOutput(serializers.Serializer):
        slug = serializers.CharField()
        title = serializers.CharField()
        files = serializers.IntegerField()
        kept = serializers.ListField(child=serializers.CharField())
        skipped = serializers.ListField(child=serializers.CharField())
        warnings = serializers.ListField(child=serializers.CharField())

    @extend_schema(request=ProjectImportInput, responses={201: ProjectImportOutput})
    def post(self, request) -> Response:
        incoming = self.ProjectImportInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        slug = data.get("slug")
        if not data["replace"]:  # replacing one's own project does not add one
            project_quota_check(request.user)

        def may_replace(existing: Project) -> None:
            """Only its owner replaces a project. Someone who cannot see it hears what they would
            hear without ``replace``: the slug is not available (not a 404 that says it exists)."""
            try:
                project_get_for_member(user=request.user, slug=existing.slug, action=Action.MANAGE)
            except NotFound:
                raise TreeError(existing.slug, slug_not_available_message()) from None

        existing = Project.objects.filter(slug=slug).first() if data["replace"] and slug else None
        if existing is not None:  # before reading the upload; again in tree_import for a slug from the tree
            may_replace(existing)
        source = read_zip(data["file"])
        source.name = source.name or data["file"].name.rsplit(".", 1)[0]

        report = tree_import(source, slug=slug, owner=request.user, replace=data["replace"], may_replace=may_replace)
        output = {"slug": report.project.slug, "title": report.project.title, "files": report.files,
                  "kept": report.kept, "skipped": report.skipped, "warnings": report.warnings}
        return Response(self.ProjectImportOutput(output).data, status=status.HTTP_201_CREATED)
