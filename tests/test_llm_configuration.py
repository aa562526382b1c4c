"""The LLM configuration checked up front: ``manage.py check`` and the worker's start refuse an
unknown backend or provider, a provider whose key variable is unset and a project whose stage model
names a provider that does not exist; the settings and dashboard pages show the same message. The
settings page offers the configured models (with their price) as choices, never free text, and no
key ever reaches a page."""
from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.urls import reverse

from pipeline.models import PipelineRun, StageRun
from projects.models import Project
from tests.conftest import member_client
from tests.factories import ProjectFactory

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-deepseek-very-secret-123"
DEEPSEEK = {"name": "deepseek", "kind": "openai", "base_url": "https://api.deepseek.com",
            "key_env": "DEEPSEEK_API_KEY", "default_model": "deepseek-chat", "currency": "CNY",
            "models": {"deepseek-chat": {"input": 2, "cached_input": 0.2, "output": 3}}}
OLLAMA = {"name": "ollama", "kind": "openai", "base_url": "http://127.0.0.1:11434/v1",
          "default_model": "qwen2.5:7b", "models": ["qwen2.5:7b"]}


@pytest.fixture
def sites(settings, monkeypatch):
    """A site offering the offline backend by default, DeepSeek (key set) and a local Ollama."""
    settings.NOVELSITE_LLM_BACKEND = "offline"
    settings.NOVELSITE_LLM_PROVIDERS = [DEEPSEEK, OLLAMA]
    monkeypatch.setenv("DEEPSEEK_API_KEY", SECRET)
    return settings


def check_errors() -> str:
    with pytest.raises(SystemCheckError) as caught:
        call_command("check")
    return str(caught.value)


# --- manage.py check -------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_good_configuration_passes(sites):
    ProjectFactory(stage_models={"draft": "deepseek:deepseek-chat", "judge": "ollama"})
    call_command("check")


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), [
    ({"NOVELSITE_LLM_BACKEND": "gemini"}, "NOVELSITE_LLM_BACKEND is 'gemini', which is neither a backend nor a "
                                          "configured provider"),
    ({"NOVELSITE_LLM_BACKEND": "anthropic", "ANTHROPIC_API_KEY": ""},
     "Provider anthropic needs its key: the environment variable ANTHROPIC_API_KEY is not set."),
    ({"NOVELSITE_LLM_BACKEND": "openai", "NOVELSITE_DEFAULT_MODEL": "", "OPENAI_API_KEY": "k"},
     "no model is set: set NOVELSITE_DEFAULT_MODEL"),
    ({"NOVELSITE_LLM_BACKEND": "openai", "NOVELSITE_DEFAULT_MODEL": "gpt-x", "OPENAI_API_KEY": ""},
     "the environment variable OPENAI_API_KEY is not set"),
    ({"DEEPSEEK_API_KEY": ""},
     "Provider deepseek needs its key: the environment variable DEEPSEEK_API_KEY is not set."),
    ({"NOVELSITE_LLM_PROVIDERS": [{"name": "x", "kind": "gemini", "default_model": "m"}]}, "\"kind\" must be one of"),
    ({"NOVELSITE_LLM_PROVIDERS": "[{not json"}, "NOVELSITE_LLM_PROVIDERS_JSON must be a JSON list"),
], ids=["unknown-backend", "anthropic-without-key", "openai-without-model", "openai-without-key",
        "table-key-unset", "bad-kind", "bad-json"])
def test_site_configuration_errors_fail_the_check(sites, change, message, monkeypatch):
    for name, value in change.items():
        if name != "DEEPSEEK_API_KEY":  # a table provider's key is read from the environment only
            setattr(sites, name, value)
        monkeypatch.delenv(name, raising=False)
    errors = check_errors()
    assert "novelsite.E010" in errors and message in errors
    assert SECRET not in errors


@pytest.mark.django_db
def test_a_project_naming_a_missing_provider_fails_the_check(sites):
    ProjectFactory(slug="snow", stage_models={"draft": "kimi:moonshot-v1"})
    errors = check_errors()
    assert "novelsite.E011" in errors
    assert "Project snow: Stage draft uses kimi:moonshot-v1: There is no LLM provider named kimi" in errors


def test_manage_py_check_in_a_fresh_environment_names_the_fix():
    """The issue's first try: NOVELSITE_LLM_BACKEND=openai and nothing else passed the check."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("OPENAI_", "NOVELSITE_LLM", "NOVELSITE_DEFAULT_MODEL"))}
    env["NOVELSITE_LLM_BACKEND"] = "openai"
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    assert "set NOVELSITE_DEFAULT_MODEL" in done.stderr and "OPENAI_API_KEY is not set" in done.stderr


def test_the_worker_refuses_to_start_with_a_wrong_configuration():
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANTHROPIC_")}
    env.update(NOVELSITE_LLM_BACKEND="anthropic", DJANGO_SETTINGS_MODULE="novelsite.settings",
               DATABASE_URL="postgres://postgres@127.0.0.1:1/nowhere")  # no database: the site check alone
    done = subprocess.run([sys.executable, "-m", "celery", "-A", "novelsite", "worker", "--pool=solo",
                           "-Q", "never-used-llm-check", "-l", "warning"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "The worker will not start: the LLM configuration is wrong." in done.stderr
    assert "ANTHROPIC_API_KEY is not set" in done.stderr
    assert "Traceback" not in done.stderr


# --- the web pages ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_settings_and_dashboard_show_the_same_message(sites, make_user):
    project = ProjectFactory(stage_models={"draft": "kimi:moonshot-v1"})
    client = member_client(project, make_user, "owner", language="en")
    expected = "Stage draft uses kimi:moonshot-v1: There is no LLM provider named kimi"
    for name in ("settings", "dashboard"):
        page = client.get(reverse(name, args=[project.slug])).content.decode()
        assert 'id="llm-problems"' in page and expected in page, name
    sites.NOVELSITE_LLM_BACKEND = "gemini"
    for name in ("settings", "dashboard"):
        page = client.get(reverse(name, args=[project.slug])).content.decode()
        assert "NOVELSITE_LLM_BACKEND is &#x27;gemini&#x27;" in page, name


@pytest.mark.django_db
def test_the_message_is_in_chinese_by_default(sites, make_user, monkeypatch):
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    project = ProjectFactory()
    page = member_client(project, make_user, "owner").get(reverse("settings", args=[project.slug])).content.decode()
    assert "提供方 deepseek 需要密钥：环境变量 DEEPSEEK_API_KEY 没有设置。" in page
    assert "模型配置需要修正" in page


@pytest.mark.django_db
def test_a_good_configuration_shows_no_message(sites, make_user):
    project = ProjectFactory(stage_models={"draft": "deepseek:deepseek-chat"})
    client = member_client(project, make_user, "owner", language="en")
    for name in ("settings", "dashboard"):
        assert 'id="llm-problems"' not in client.get(reverse(name, args=[project.slug])).content.decode()


def settings_form(project: Project, **models: str) -> dict:
    return {"title": project.title, "brief": project.brief, "autopilot_chapters_per_night": 0,
            "autopilot_cost_cap_usd": "0", "manual_cost_cap_usd": "0", "gate_settings": "{}",
            **{f"model_{stage}": value for stage, value in models.items()}}


@pytest.mark.django_db
def test_the_settings_page_offers_configured_models_with_prices_and_no_keys(sites, make_user):
    project = ProjectFactory()
    page = member_client(project, make_user, "owner", language="en").get(
        reverse("settings", args=[project.slug])).content.decode()
    assert '<select name="model_draft"' in page and '<textarea name="stage_models"' not in page
    assert 'value="deepseek:deepseek-chat"' in page and "CNY 2 in / 0.2 cached / 3 out per million tokens" in page
    assert 'value="ollama:qwen2.5:7b"' in page and "price unknown" in page
    assert 'value="anthropic:claude-sonnet-5-5"' in page and "USD 2 in / 0.1 cached / 10 out" in page
    assert "Site default: offline · offline" in page
    assert SECRET not in page and "DEEPSEEK_API_KEY" not in page


@pytest.mark.django_db
def test_choosing_models_saves_provider_and_model(sites, make_user):
    project = ProjectFactory()
    client = member_client(project, make_user, "owner", language="en")
    response = client.post(reverse("settings", args=[project.slug]),
                           settings_form(project, default="ollama:qwen2.5:7b", draft="deepseek:deepseek-chat"))
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.stage_models == {"default": "ollama:qwen2.5:7b", "draft": "deepseek:deepseek-chat"}
    page = client.get(reverse("settings", args=[project.slug])).content.decode()
    assert '<option value="deepseek:deepseek-chat" selected>' in page


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["kimi:moonshot-v1", "deepseek:gpt-99", "{\"x\": 1}", "a\x00b", "x" * 5000])
def test_a_model_the_site_does_not_offer_is_refused(sites, make_user, value):
    project = ProjectFactory(title="原题", stage_models={"judge": "ollama"})
    client = member_client(project, make_user, "owner", language="en")
    response = client.post(reverse("settings", args=[project.slug]),
                           {**settings_form(project, draft=value), "title": "新题"})
    assert response.status_code == 200
    assert response.context["form"].errors["model_draft"]
    project.refresh_from_db()
    assert (project.title, project.stage_models) == ("原题", {"judge": "ollama"})  # nothing half-written


@pytest.mark.django_db
def test_a_saved_model_no_longer_offered_stays_visible_and_is_kept(sites, make_user):
    project = ProjectFactory(stage_models={"draft": "kimi:moonshot-v1", "judge": "ollama"})
    client = member_client(project, make_user, "owner", language="en")
    page = client.get(reverse("settings", args=[project.slug])).content.decode()
    assert "kimi:moonshot-v1 (not offered by this site)" in page
    assert '<option value="ollama:qwen2.5:7b" selected>' in page  # "ollama" is shown as what it means
    response = client.post(reverse("settings", args=[project.slug]),
                           settings_form(project, draft="kimi:moonshot-v1", judge="ollama:qwen2.5:7b"))
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.stage_models == {"draft": "kimi:moonshot-v1", "judge": "ollama:qwen2.5:7b"}


# --- costs on the dashboard ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_dashboard_shows_costs_per_currency_and_unknown_costs(sites, make_user):
    project = ProjectFactory()
    run = PipelineRun.objects.create(project=project, kind="chapter", chapter=1, status="done", stage="commit")
    StageRun.objects.create(run=run, stage="draft", status="succeeded", cost_usd=Decimal("0.25"), currency="CNY")
    StageRun.objects.create(run=run, stage="judge", status="succeeded", cost_usd=Decimal("0.5"))
    StageRun.objects.create(run=run, stage="refine", status="succeeded", cost_known=False, backend="ollama")
    page = member_client(project, make_user, "owner", language="en").get(
        reverse("dashboard", args=[project.slug])).content.decode()
    assert "USD 0.5000" in page and "CNY 0.2500" in page
    assert "unknown (1 step on a model without a price)" in page
