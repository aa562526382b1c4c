from django.urls import path

from pipeline.web.api import (
    ChapterReceiptListApi,
    ChapterRewriteApi,
    GateAnswerApi,
    PlanApproveApi,
    ProjectAdvanceApi,
    ProjectGateListApi,
    ProjectNextStepApi,
    ProjectPauseApi,
    ProjectRunDetailApi,
    ProjectRunListApi,
    ProjectStagedPlanApi,
    ProjectWriteApi,
    RunCancelApi,
    RunRetryApi,
)
from projects.api import converters  # noqa: F401  (registers <id:…>, a bounded integer)

P = "projects/<slug:slug>"

urlpatterns = [
    path(f"{P}/next", ProjectNextStepApi.as_view(), name="project-next"),
    path(f"{P}/advance", ProjectAdvanceApi.as_view(), name="project-advance"),
    path(f"{P}/gates", ProjectGateListApi.as_view(), name="project-gates"),
    path(f"{P}/gates/<id:question_id>/answer", GateAnswerApi.as_view(), name="gate-answer"),
    path(f"{P}/plan", ProjectStagedPlanApi.as_view(), name="project-staged-plan"),
    path(f"{P}/plan/approve", PlanApproveApi.as_view(), name="api-plan-approve"),
    path(f"{P}/write", ProjectWriteApi.as_view(), name="api-project-write"),
    path(f"{P}/pause", ProjectPauseApi.as_view(), name="api-project-pause"),
    path(f"{P}/runs", ProjectRunListApi.as_view(), name="api-run-list"),
    path(f"{P}/runs/<id:run_id>", ProjectRunDetailApi.as_view(), name="api-run-detail"),
    path(f"{P}/runs/<id:run_id>/retry", RunRetryApi.as_view(), name="api-run-retry"),
    path(f"{P}/runs/<id:run_id>/cancel", RunCancelApi.as_view(), name="api-run-cancel"),
    path(f"{P}/chapters/<id:number>/rewrite", ChapterRewriteApi.as_view(), name="api-chapter-rewrite"),
    path(f"{P}/chapters/<id:number>/receipts", ChapterReceiptListApi.as_view(), name="api-chapter-receipts"),
]
