"""The pipeline's REST API: what comes next for a project, taking that step, answering the
NOVEL_ASK gates a step stopped at and approving plans; writing chapters, pausing, retrying and
cancelling runs, rewriting a chapter; runs and the prompt receipts of a chapter's LLM calls.
Views call one selector and one service (STYLE.md); actions that start LLM work are throttled."""
from __future__ import annotations

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from pipeline.errors import PipelineNotReady
from pipeline.questions.answers import gate_answer_submit
from pipeline.models import (
    ACTIVE_RUN_STATUSES,
    SIDE_RUN_KINDS,
    GateQuestion,
    GateStatus,
    LLMCall,
    PipelineRun,
    RunKind,
    StageRun,
)
from pipeline.book.orchestrator import advance, next_step
from pipeline.book.rewrite import MAX_NOTES, chapter_rewrite_start
from pipeline.runtime.runs import chapter_run_start, run_cancel, run_retry
from pipeline.nightly.spending import llm_work_admit
from projects.api.pagination import cursor_by, paginated
from projects.api.strict import StrictInput
from projects.errors import NotFound
from projects.permissions import Action
from projects.selectors import project_get_for_member

MAX_CHAPTERS_PER_REQUEST = 50  # a batch larger than a night's work is a mistake, not a plan


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
    class ProjectAdvanceInput(StrictInput):
        step = serializers.CharField(required=False, max_length=60, help_text="The step you expect to take next.")

    class ProjectAdvanceOutput(serializers.Serializer):
        run_id = serializers.IntegerField(allow_null=True)
        next = NextStepOutput()

    @extend_schema(request=ProjectAdvanceInput, responses={202: ProjectAdvanceOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        incoming = self.ProjectAdvanceInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        llm_work_admit(project=project, user=request.user)
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
    class GateAnswerInput(StrictInput):
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
        llm_work_admit(project=project, user=request.user)
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

    class StagedPlanEditInput(StrictInput):
        outline = serializers.CharField(required=False, max_length=200_000)
        schedule = serializers.JSONField(required=False)
        foreshadowing = serializers.JSONField(required=False)
        new_characters = serializers.JSONField(required=False)
        contracts = serializers.JSONField(required=False, help_text="chapter -> contract")

    def _waiting(self, project):
        from pipeline.book.plan import plan_waiting

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
        from pipeline.book.plan import volume_plan_edit

        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        run = self._waiting(project)
        incoming = self.StagedPlanEditInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        volume_plan_edit(run_id=run.pk, plan=incoming.validated_data, user=request.user)
        run.refresh_from_db()
        return Response(self.StagedPlanOutput(self._output(run)).data)


# --- runs and the actions that start or stop LLM work ------------------------------------------------


class RunOutput(serializers.ModelSerializer):
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)

    class Meta:
        model = PipelineRun
        fields = ["id", "kind", "chapter", "volume_number", "status", "stage", "attempt", "error", "created_by",
                  "batch", "created_at", "updated_at", "finished_at"]


def _run_of(project, run_id: int) -> PipelineRun:
    run = PipelineRun.objects.select_related("created_by").filter(project=project, pk=run_id).first()
    if run is None:
        raise NotFound("No such run in this project.")
    return run


class ProjectRunListApi(APIView):
    """The project's pipeline runs, newest first (without their blackboards)."""

    pagination_class = cursor_by("-pk")

    @extend_schema(responses=RunOutput(many=True))
    def get(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        runs = PipelineRun.objects.filter(project=project).select_related("created_by").defer("blackboard", "context")
        return paginated(self, runs, RunOutput)


class ProjectRunDetailApi(APIView):
    @extend_schema(responses=RunOutput)
    def get(self, request, slug: str, run_id: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        return Response(RunOutput(_run_of(project, run_id)).data)


class ProjectWriteApi(APIView):
    """Write the next chapter, or the next ``chapters`` chapters as one batch (each starts when the
    previous commits). 409 ``pipeline_busy`` while another run is active."""

    class ProjectWriteInput(StrictInput):
        chapters = serializers.IntegerField(min_value=1, max_value=MAX_CHAPTERS_PER_REQUEST, default=1)

    @extend_schema(request=ProjectWriteInput, responses={202: RunOutput})
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        incoming = self.ProjectWriteInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        llm_work_admit(project=project, user=request.user)
        run = chapter_run_start(project_id=project.pk, user=request.user,
                                batch_remaining=incoming.validated_data["chapters"] - 1)
        return Response(RunOutput(_run_of(project, run.pk)).data, status=status.HTTP_202_ACCEPTED)


class ProjectPauseApi(APIView):
    """Pause: cancel the active run (its staged work is dropped; the project is idle again)."""

    @extend_schema(request=None, responses=RunOutput)
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        active = (PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES)
                  .exclude(kind__in=SIDE_RUN_KINDS).first())
        if active is None:
            raise PipelineNotReady("Nothing is running.")
        run_cancel(run_id=active.pk, user=request.user)
        return Response(RunOutput(_run_of(project, active.pk)).data)


class RunRetryApi(APIView):
    """Resume a run stopped in error from the stage it failed in."""

    @extend_schema(request=None, responses={202: RunOutput})
    def post(self, request, slug: str, run_id: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        run = _run_of(project, run_id)
        llm_work_admit(project=project, user=request.user)
        run = run_retry(run_id=run.pk, user=request.user)
        return Response(RunOutput(_run_of(project, run.pk)).data, status=status.HTTP_202_ACCEPTED)


class RunCancelApi(APIView):
    @extend_schema(request=None, responses=RunOutput)
    def post(self, request, slug: str, run_id: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        run_cancel(run_id=_run_of(project, run_id).pk, user=request.user)
        return Response(RunOutput(_run_of(project, run_id)).data)


class ChapterRewriteApi(APIView):
    """Rewrite a committed chapter with notes (CHAPTER_REWRITE, pipeline/book/rewrite.py)."""

    class ChapterRewriteInput(StrictInput):
        notes = serializers.CharField(max_length=MAX_NOTES)

    @extend_schema(request=ChapterRewriteInput, responses={202: RunOutput})
    def post(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.EDIT)
        incoming = self.ChapterRewriteInput(data=request.data)
        incoming.is_valid(raise_exception=True)
        llm_work_admit(project=project, user=request.user)
        run = chapter_rewrite_start(project_id=project.pk, chapter=number, user=request.user,
                                    notes=incoming.validated_data["notes"])
        return Response(RunOutput(_run_of(project, run.pk)).data, status=status.HTTP_202_ACCEPTED)


class PlanApproveApi(APIView):
    """Approve the volume plan waiting for approval (the answer ``approve`` to its gate)."""

    @extend_schema(request=None, responses=GateAnswerApi.GateAnswerOutput)
    def post(self, request, slug: str) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.DECIDE)
        question = (GateQuestion.objects.filter(project=project, status=GateStatus.OPEN, step="volume:validate")
                    .order_by("-created_at", "-pk").first())
        if question is None:
            raise NotFound("No volume plan is waiting for approval.")
        llm_work_admit(project=project, user=request.user)
        answer = gate_answer_submit(question_id=question.pk, answers={"decision": "approve"}, user=request.user)
        project.refresh_from_db()
        output = {"question_id": question.pk, "answer": answer.answer, "next": next_step(project).as_dict()}
        return Response(GateAnswerApi.GateAnswerOutput(output).data)


class ChapterReceiptListApi(APIView):
    """The prompt receipts of a chapter's LLM calls: every stage attempt of its chapter and rewrite
    runs, with model, tokens, cost and the receipt (blocks, tokens, what was trimmed); the calls'
    metadata, not their output."""

    pagination_class = cursor_by("pk")

    class ReceiptCallOutput(serializers.ModelSerializer):
        class Meta:
            model = LLMCall
            fields = ["call_key", "backend", "model", "request_sha256", "stop_reason", "usage", "cost_usd",
                      "currency", "cost_known", "duration_ms", "created_at"]

    class ReceiptOutput(serializers.ModelSerializer):
        run = serializers.IntegerField(source="run_id")
        calls = serializers.SerializerMethodField()

        class Meta:
            model = StageRun
            fields = ["id", "run", "stage", "attempt", "status", "backend", "model", "started_at", "duration_ms",
                      "input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens", "cost_usd",
                      "currency", "cost_known", "receipt", "calls"]

        @extend_schema_field(serializers.ListField(child=serializers.DictField()))
        def get_calls(self, stage_run) -> list:
            return ChapterReceiptListApi.ReceiptCallOutput(stage_run.llm_calls.all(), many=True).data

    @extend_schema(responses=ReceiptOutput(many=True))
    def get(self, request, slug: str, number: int) -> Response:
        project = project_get_for_member(user=request.user, slug=slug, action=Action.READ)
        calls = LLMCall.objects.defer("output_text").order_by("pk")
        stage_runs = (StageRun.objects.filter(run__project=project, run__chapter=number,
                                              run__kind__in=(RunKind.CHAPTER, RunKind.REWRITE))
                      .prefetch_related(Prefetch("llm_calls", queryset=calls)))
        return paginated(self, stage_runs, self.ReceiptOutput)
