"""Chapters: the list (never with the text), one chapter with its text, a person's edit of text or
title against the version they opened, and a chapter's evaluation and pipeline log."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.api.pagination import cursor_by, paginated
from projects.api.strict import StrictInput
from projects.errors import NotFound
from projects.models import ChapterLog, Evaluation
from projects.permissions import Action
from projects.query_params import query_int
from projects.selectors import chapter_get_for_project, chapter_list_for_project, project_get_for_member
from projects.services.editing import chapter_update

CHAPTER_TEXT_MAX = 200_000


class ChapterListApi(APIView):
    pagination_class = cursor_by("number")

    class ChapterListOutput(serializers.Serializer):
        number = serializers.IntegerField()
        title = serializers.CharField()
        volume = serializers.IntegerField(source="volume.number")
        word_count = serializers.IntegerField()
        version = serializers.IntegerField()
        overall = serializers.SerializerMethodField()
        updated_at = serializers.DateTimeField()

        def get_overall(self, chapter) -> float | None:
            evaluation = getattr(chapter, "evaluation", None)  # select_related: no query; None if not judged
            return float(evaluation.overall) if evaluation and evaluation.overall is not None else None

    @extend_schema(responses=ChapterListOutput(many=True), parameters=[
        OpenApiParameter("volume", OpenApiTypes.INT, description="Only the chapters of this volume.")])
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        chapters = chapter_list_for_project(project=project)
        volume = query_int(request.query_params, "volume")
        if volume is not None:
            chapters = chapters.filter(volume__number=volume)
        return paginated(self, chapters, self.ChapterListOutput)


class ChapterDetailApi(APIView):
    """GET: one chapter with its text. PATCH: change its text and/or title (editor); send the
    ``version`` you read as ``base_version``: if someone saved since, 409 ``version_conflict``."""

    class ChapterDetailOutput(serializers.Serializer):
        number = serializers.IntegerField()
        title = serializers.CharField()
        volume = serializers.IntegerField(source="volume.number")
        storyline = serializers.CharField(source="storyline.slug", allow_null=True, default=None)
        text = serializers.CharField()
        word_count = serializers.IntegerField()
        version = serializers.IntegerField()
        created_at = serializers.DateTimeField()
        updated_at = serializers.DateTimeField()

    class ChapterUpdateInput(StrictInput):
        text = serializers.CharField(max_length=CHAPTER_TEXT_MAX, required=False)
        title = serializers.CharField(max_length=200, required=False, allow_blank=True)
        base_version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)

        def validate(self, attrs: dict) -> dict:
            if "text" not in attrs and "title" not in attrs:
                raise serializers.ValidationError("Send text, title or both.")
            return attrs

    @extend_schema(responses=ChapterDetailOutput)
    def get(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(self.ChapterDetailOutput(chapter_get_for_project(project=project, number=number)).data)

    @extend_schema(request=ChapterUpdateInput, responses=ChapterDetailOutput)
    def patch(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        chapter = chapter_get_for_project(project=project, number=number)
        incoming = self.ChapterUpdateInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        chapter = chapter_update(chapter=chapter, editor=request.user, text=data.get("text", chapter.text),
                                 title=data.get("title"), base_version=data["base_version"])
        return Response(self.ChapterDetailOutput(chapter_get_for_project(project=project, number=chapter.number)).data)


class ChapterEvaluationApi(APIView):
    class ChapterEvaluationOutput(serializers.ModelSerializer):
        class Meta:
            model = Evaluation
            fields = ["data", "overall", "recommendation", "gate_decision", "force_passed", "revisions", "created_at"]

    @extend_schema(responses=ChapterEvaluationOutput)
    def get(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        evaluation = Evaluation.objects.filter(project=project, chapter__number=number).first()
        if evaluation is None:
            raise NotFound("This chapter has no evaluation.")
        return Response(self.ChapterEvaluationOutput(evaluation).data)


class ChapterLogApi(APIView):
    class ChapterLogOutput(serializers.ModelSerializer):
        class Meta:
            model = ChapterLog
            fields = ["data", "total_duration_ms", "total_cost_usd", "gate_decision", "created_at"]

    @extend_schema(responses=ChapterLogOutput)
    def get(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        log = ChapterLog.objects.filter(project=project, chapter__number=number).first()
        if log is None:
            raise NotFound("This chapter has no pipeline log.")
        return Response(self.ChapterLogOutput(log).data)
