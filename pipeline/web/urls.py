"""Pipeline web pages under /p/<slug>/ (the story pages are in projects/urls.py)."""
from django.urls import path

from pipeline.web.views import dashboard, gates, promotions, runs, trial, voice

urlpatterns = [
    path("p/<slug:slug>/", dashboard.dashboard, name="dashboard"),
    path("p/<slug:slug>/progress/", dashboard.progress_view, name="progress"),
    path("p/<slug:slug>/advance/", dashboard.advance_view, name="advance"),
    path("p/<slug:slug>/write/", dashboard.write_view, name="write"),
    path("p/<slug:slug>/pause/", dashboard.pause_view, name="pause"),
    path("p/<slug:slug>/retry/", dashboard.retry_view, name="retry"),
    path("p/<slug:slug>/gates/", gates.gate_list, name="gates"),
    path("p/<slug:slug>/gates/<int:question_id>/answer/", gates.gate_answer, name="gate-answer-web"),
    path("p/<slug:slug>/plan/", gates.plan_view, name="plan"),
    path("p/<slug:slug>/trial/", trial.trial_view, name="trial"),
    path("p/<slug:slug>/plan/decide/", gates.plan_decide, name="plan-decide"),
    path("p/<slug:slug>/plan/edit/", gates.plan_edit, name="plan-edit"),
    path("p/<slug:slug>/chapters/<int:number>/rewrite/", dashboard.chapter_rewrite_view, name="chapter-rewrite"),
    path("p/<slug:slug>/settings/voice/", voice.voice_view, name="settings-voice"),
    path("p/<slug:slug>/runs/", runs.run_list, name="runs"),
    path("p/<slug:slug>/runs/<int:run_id>/", runs.run_view, name="run"),
    path("p/<slug:slug>/promotions/", promotions.promotion_list, name="promotions"),
    path("p/<slug:slug>/promotions/<int:run_id>/", promotions.promotion_view, name="promotion"),
    path("p/<slug:slug>/promotions/<int:run_id>/regenerate/", promotions.promotion_regenerate,
         name="promotion-regenerate"),
]
