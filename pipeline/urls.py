from django.urls import path

from pipeline.api import (
    GateAnswerApi,
    ProjectAdvanceApi,
    ProjectGateListApi,
    ProjectNextStepApi,
    ProjectStagedPlanApi,
)

urlpatterns = [
    path("projects/<slug:slug>/next", ProjectNextStepApi.as_view(), name="project-next"),
    path("projects/<slug:slug>/advance", ProjectAdvanceApi.as_view(), name="project-advance"),
    path("projects/<slug:slug>/gates", ProjectGateListApi.as_view(), name="project-gates"),
    path("projects/<slug:slug>/gates/<int:question_id>/answer", GateAnswerApi.as_view(), name="gate-answer"),
    path("projects/<slug:slug>/plan", ProjectStagedPlanApi.as_view(), name="project-staged-plan"),
]
