"""The pipeline's REST API: what comes next for a project, taking that step, and answering the
NOVEL_ASK gates a step stopped at. Views call one selector and one service (STYLE.md)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from pipeline.gates import gate_answer_submit
from pipeline.models import GateQuestion, GateStatus
from pipeline.orchestrator import advance, next_step
from projects.errors import NotFound
from projects.permissions import Action
from projects.selectors import project_get_for_member


class NextStepOutput(serializers.Serializer):
    step = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    action = serializers.CharField()
    inflight = serializers.DictField()
    evidence = serializers.DictField()
    run_id = serializers.IntegerField(allow_null=True)
    question_id = serializers.IntegerField(allow_null=True)


class ProjectNextStepApi(APIView):
    @extend_schema(responses=NextStepOutput)
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(NextStepOutput(next_step(project).as_dict()).data)


class ProjectAdvanceApi(APIView):
    class ProjectAdvanceInput(serializers.Serializer):
        step = serializers.CharField(required=False, max_length=60, help_text="The step you expect to take next.")

    class ProjectAdvanceOutput(serializers.Serializer):
        run_id = serializers.IntegerField(allow_null=True)
        next = NextStepOutput()

    @extend_schema(request=ProjectAdvanceInput, responses={202: ProjectAdvanceOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        incoming = self.ProjectAdvanceInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        run = advance(project_id=project.pk, user=request.user, step=incoming.validated_data.get("step"))
        project.refresh_from_db()
        output = {"run_id": run.pk if run else None, "next": next_step(project).as_dict()}
        return Response(self.ProjectAdvanceOutput(output).data, status=status.HTTP_202_ACCEPTED)


class GateQuestionOutput(serializers.ModelSerializer):
    class Meta:
        model = GateQuestion
        fields = ["id", "step", "topic", "spec", "answer_path", "status", "created_at"]


class ProjectGateListApi(APIView):
    @extend_schema(responses=GateQuestionOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        questions = GateQuestion.objects.filter(project=project, status=GateStatus.OPEN).order_by("created_at", "pk")
        return Response(GateQuestionOutput(questions, many=True).data)


class GateAnswerApi(APIView):
    class GateAnswerInput(serializers.Serializer):
        answers = serializers.JSONField(help_text="question id -> a string or a list of strings (seed 003)")

    class GateAnswerOutput(serializers.Serializer):
        question_id = serializers.IntegerField()
        answer = serializers.JSONField()
        next = NextStepOutput()

    @extend_schema(request=GateAnswerInput, responses={200: GateAnswerOutput})
    def post(self, request, slug: str, question_id: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.DECIDE)
        if not GateQuestion.objects.filter(project=project, pk=question_id).exists():
            raise NotFound("No such question in this project.")
        incoming = self.GateAnswerInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        answer = gate_answer_submit(question_id=question_id, answers=incoming.validated_data["answers"],
                                    user=request.user)
        project.refresh_from_db()
        output = {"question_id": question_id, "answer": answer.answer, "next": next_step(project).as_dict()}
        return Response(self.GateAnswerOutput(output).data)


class ProjectStagedPlanApi(APIView):
    """The volume plan waiting for approval: read it (with its validation and earlier versions, for a
    diff), or edit it before approving (an edit that breaks a planning rule is refused)."""

    class StagedPlanOutput(serializers.Serializer):
        run_id = serializers.IntegerField()
        plan = serializers.JSONField()
        validation = serializers.JSONField()
        previous_versions = serializers.JSONField(help_text="Earlier staged versions, oldest first.")

    class StagedPlanEditInput(serializers.Serializer):
        outline = serializers.CharField(required=False, max_length=200_000)
        schedule = serializers.JSONField(required=False)
        foreshadowing = serializers.JSONField(required=False)
        new_characters = serializers.JSONField(required=False)
        contracts = serializers.JSONField(required=False, help_text="chapter -> contract")

    def _waiting(self, project):
        from pipeline.stages.plan import plan_waiting

        run = plan_waiting(project)
        if run is None:
            raise NotFound("No volume plan is waiting for approval.")
        return run

    def _output(self, run) -> dict:
        board = run.blackboard
        history = [entry["value"] for entry in board.get("history", {}).get("book.plan", [])]
        return {"run_id": run.pk, "plan": board["content"]["book"]["plan"],
                "validation": board.get("control", {}).get("plan_validation", {}), "previous_versions": history}

    @extend_schema(responses=StagedPlanOutput)
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(self.StagedPlanOutput(self._output(self._waiting(project))).data)

    @extend_schema(request=StagedPlanEditInput, responses=StagedPlanOutput)
    def patch(self, request, slug: str) -> Response:
        from pipeline.stages.plan import volume_plan_edit

        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        run = self._waiting(project)
        incoming = self.StagedPlanEditInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        volume_plan_edit(run_id=run.pk, plan=incoming.validated_data, user=request.user)
        run.refresh_from_db()
        return Response(self.StagedPlanOutput(self._output(run)).data)
