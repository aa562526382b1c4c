"""Promotion posts over the API: start one, follow its steps, read (and copy) each platform
version, regenerate one step."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from pipeline.models import PipelineRun, RunKind
from pipeline.promotion.platforms import PLATFORMS, STYLES
from pipeline.promotion.run import STEPS, promotion_start, promotion_step_regenerate
from pipeline.promotion.snapshot import seed_snapshot
from pipeline.nightly.spending import llm_work_admit
from projects.errors import NotFound
from projects.permissions import Action
from projects.selectors import project_get_for_member

LIST_LIMIT = 50


def _promotion(project, run_id: int) -> PipelineRun:
    run = PipelineRun.objects.filter(project=project, kind=RunKind.PROMOTION, pk=run_id).first()
    if run is None:
        raise NotFound("No such promotion in this project.")
    return run


class PromotionOutput(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    status = serializers.CharField()
    stage = serializers.CharField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    steps = serializers.SerializerMethodField()
    target = serializers.SerializerMethodField()

    def get_steps(self, run) -> dict:
        return run.blackboard.get("control", {}).get("step_status", {})

    def get_target(self, run) -> dict:
        return run.blackboard.get("meta", {}).get("target", {})


class PromotionDetailOutput(PromotionOutput):
    snapshot = serializers.SerializerMethodField(help_text="The blackboard in seed 001's zones.")

    def get_snapshot(self, run) -> dict:
        return seed_snapshot(run.blackboard)


class ProjectPromotionListApi(APIView):
    class PromotionStartInput(serializers.Serializer):
        chapter = serializers.IntegerField(required=False, min_value=1)
        chapters = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False,
                                         min_length=2, max_length=2)
        volume = serializers.IntegerField(required=False, min_value=1)
        platform = serializers.ChoiceField(choices=PLATFORMS, default="xiaohongshu")
        style = serializers.ChoiceField(choices=STYLES, default="casual")
        intent = serializers.CharField(required=False, allow_blank=True, max_length=300, default="")
        constraints = serializers.JSONField(required=False, default=dict)

        def validate(self, data):
            given = [key for key in ("chapter", "chapters", "volume") if key in data]
            if len(given) != 1:
                raise serializers.ValidationError("give exactly one of chapter, chapters, volume")
            return data

    @extend_schema(responses=PromotionOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        runs = PipelineRun.objects.filter(project=project, kind=RunKind.PROMOTION).order_by("-pk")[:LIST_LIMIT]
        return Response(PromotionOutput(runs, many=True).data)

    @extend_schema(request=PromotionStartInput, responses={202: PromotionOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        incoming = self.PromotionStartInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        target = {key: data[key] for key in ("chapter", "chapters", "volume") if key in data}
        llm_work_admit(project=project, user=request.user)
        run = promotion_start(project_id=project.pk, target=target, platform=data["platform"], style=data["style"],
                              intent=data["intent"], constraints=data["constraints"], user=request.user)
        run.refresh_from_db()
        return Response(PromotionOutput(run).data, status=status.HTTP_202_ACCEPTED)


class ProjectPromotionDetailApi(APIView):
    @extend_schema(responses=PromotionDetailOutput)
    def get(self, request, slug: str, run_id: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(PromotionDetailOutput(_promotion(project, run_id)).data)


class ProjectPromotionRegenerateApi(APIView):
    class PromotionRegenerateInput(serializers.Serializer):
        step = serializers.ChoiceField(choices=STEPS)

    @extend_schema(request=PromotionRegenerateInput, responses={202: PromotionOutput})
    def post(self, request, slug: str, run_id: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        run = _promotion(project, run_id)
        incoming = self.PromotionRegenerateInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        llm_work_admit(project=project, user=request.user)
        run = promotion_step_regenerate(run_id=run.pk, step=incoming.validated_data["step"], user=request.user)
        run.refresh_from_db()
        return Response(PromotionOutput(run).data, status=status.HTTP_202_ACCEPTED)
