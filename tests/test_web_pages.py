"""The web pages end to end with Django's test client: a project from a brief to a written,
read and edited chapter, with the gate and the plan answered on the pages (eager Celery, offline
LLM), plus the conflict-safe editor and the language switch."""
from __future__ import annotations

import pytest
from django.urls import reverse

from pipeline.models import GateQuestion, GateStatus, PipelineRun
from projects.models import Chapter, OrchestratorState, Project

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]

BRIEF = "北境少年林枫在雪原上救下一位神秘老人，卷入星火宗覆灭的旧案，一路南下追查预言的真相。"


def login(client, user):
    client.force_login(user)
    return client


def written_project(client, owner) -> Project:
    """Create from a brief, answer the quick-start gate, approve the plan, write chapter 1: all on pages."""
    response = client.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": BRIEF})
    assert response.status_code == 302 and response.url == reverse("dashboard", args=["snow"])
    assert client.post(reverse("advance", args=["snow"]), {"step": "quickstart:world"}).status_code == 302
    question = GateQuestion.objects.get(project__slug="snow", status=GateStatus.OPEN)
    page = client.get(reverse("gates", args=["snow"]))
    assert "init.platform_binding" in page.content.decode()
    response = client.post(reverse("gate-answer-web", args=["snow", question.pk]),
                           {"q-platform": "qidian", "q-genre": "xuanhuan"})
    assert response.status_code == 302
    project = Project.objects.get(slug="snow")
    assert project.orchestrator_state == OrchestratorState.VOL_PLANNING
    client.post(reverse("advance", args=["snow"]), {"step": "volume:outline"})
    page = client.get(reverse("plan", args=["snow"]))
    assert page.status_code == 200 and "approve-plan" in page.content.decode()
    outline = page.context["outline"]
    client.post(reverse("plan-edit", args=["snow"]), {"outline": outline + "\n\n（编辑补充：第一卷结尾留出悬念。）"})
    page = client.get(reverse("plan", args=["snow"]))
    assert page.context["previous"] and any("编辑补充" in line for kind, line in page.context["outline_diff"]
                                            if kind == "+")
    assert client.post(reverse("plan-decide", args=["snow"]), {"decision": "approve"}).status_code == 302
    project.refresh_from_db()
    assert project.orchestrator_state == OrchestratorState.WRITING
    assert client.post(reverse("write", args=["snow"]), {"count": "1"}).status_code == 302
    project.refresh_from_db()
    assert project.last_completed_chapter == 1
    return project


def test_from_a_brief_to_an_edited_chapter_on_the_pages(client, make_user):
    owner = make_user("owner")
    login(client, owner)
    project = written_project(client, owner)
    for name, args in [("dashboard", ["snow"]), ("chapter-list", ["snow"]), ("chapter-read", ["snow", 1]),
                       ("chapter-history", ["snow", 1]), ("world", ["snow"]), ("state", ["snow"]),
                       ("runs", ["snow"]), ("members", ["snow"]), ("settings", ["snow"]), ("gates", ["snow"]),
                       ("plan", ["snow"]), ("progress", ["snow"])]:
        response = client.get(reverse(name, args=args))
        assert response.status_code == 200, name
    dashboard = client.get(reverse("dashboard", args=["snow"])).content.decode()
    assert "<svg" in dashboard and "<polyline" in dashboard
    from pipeline.web.selectors import chapter_metrics

    (metric,) = chapter_metrics(project=project)  # the style-drift charts have their points
    assert metric.avg_sentence_length > 0 and 0 < metric.dialogue_ratio < 1
    assert client.get(reverse("state", args=["snow"]) + "?chapter=1").status_code == 200
    run = PipelineRun.objects.filter(project=project, chapter=1).first()
    detail = client.get(reverse("run", args=["snow", run.pk])).content.decode()
    assert "draft" in detail

    chapter = Chapter.objects.get(project=project, number=1)
    edit_url = reverse("chapter-edit", args=["snow", 1])
    assert client.get(edit_url).status_code == 200
    response = client.post(edit_url, {"title": "新标题", "text": "第一段。\n第二段。", "base_version": chapter.version})
    assert response.status_code == 302
    chapter.refresh_from_db()
    assert (chapter.title, chapter.text) == ("新标题", "第一段。\n第二段。")

    # a save over a newer version shows both texts and refuses
    response = client.post(edit_url, {"title": "旧", "text": "我的改动。", "base_version": chapter.version - 1})
    body = response.content.decode()
    assert response.status_code == 200 and 'id="conflict"' in body and "第二段。" in body and "我的改动。" in body
    chapter.refresh_from_db()
    assert chapter.text == "第一段。\n第二段。"
    assert f'name="base_version" value="{chapter.version}"' in body  # the next save is on top of it
    history = client.get(reverse("chapter-history", args=["snow", 1]))
    assert history.status_code == 200 and len(history.context["rows"]) >= 2

    # a rewrite with notes writes the latest chapter again
    response = client.post(reverse("chapter-rewrite", args=["snow", 1]), {"notes": "让老人的身份更早露出破绽"})
    assert response.status_code == 302
    project.refresh_from_db()
    assert project.last_completed_chapter == 1 and project.orchestrator_state == OrchestratorState.WRITING
    # the latest chapter is rolled back exactly and written again by a second chapter run
    assert PipelineRun.objects.filter(project=project, kind="chapter", chapter=1, status="done").count() == 2


def test_members_settings_and_language(client, make_user):
    owner, other = make_user("owner"), make_user("other")
    login(client, owner)
    client.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": BRIEF})
    response = client.post(reverse("members", args=["snow"]), {"username": "other", "role": "reviewer"})
    assert response.status_code == 302
    assert Project.objects.get(slug="snow").memberships.get(user=other).role == "reviewer"
    response = client.post(reverse("settings", args=["snow"]), {
        "title": "雪原长夜二", "brief": BRIEF, "autopilot_enabled": "on", "autopilot_chapters_per_night": "2",
        "autopilot_cost_cap_usd": "3.50", "manual_cost_cap_usd": "20.00", "stage_models": "{}", "gate_settings": "{}"})
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(slug="snow")
    assert (project.title, project.autopilot_enabled, project.autopilot_chapters_per_night) == ("雪原长夜二", True, 2)

    assert "项目" in client.get(reverse("projects-home")).content.decode()  # Chinese by default
    client.post(reverse("set_language"), {"language": "en", "next": "/"})
    assert "Projects" in client.get(reverse("projects-home")).content.decode()


def test_anonymous_people_are_sent_to_log_in_and_can(client, make_user):
    make_user("owner")
    response = client.get(reverse("projects-home"))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    response = client.post(reverse("login"), {"username": "owner", "password": "pw-owner"})
    assert response.status_code == 302 and response.url == reverse("projects-home")


def test_a_zipped_tree_is_imported_from_the_page(client, make_user, sample_project):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from projects.filetree.export import zip_stream

    owner = make_user("owner")
    login(client, owner)
    archive = SimpleUploadedFile("book.zip", b"".join(zip_stream(sample_project)), content_type="application/zip")
    response = client.post(reverse("project-import-web"), {"archive": archive, "slug": "copy"})
    assert response.status_code == 302 and response.url == reverse("dashboard", args=["copy"])
    copy = Project.objects.get(slug="copy")
    assert copy.memberships.get(user=owner).role == "owner"
    assert copy.chapters.count() == sample_project.chapters.count()
    broken = SimpleUploadedFile("bad.zip", b"not a zip", content_type="application/zip")
    response = client.post(reverse("project-import-web"), {"archive": broken})
    assert response.status_code == 200 and "zip" in response.content.decode()


def test_profiles_are_rendered_as_sanitized_markdown(client, make_user):
    from tests.factories import CharacterFactory

    owner = make_user("owner")
    login(client, owner)
    client.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": BRIEF})
    CharacterFactory(project=Project.objects.get(slug="snow"), profile="**林枫**<script>alert(1)</script>")
    body = client.get(reverse("world", args=["snow"])).content.decode()
    assert "<strong>林枫</strong>" in body and "<script>alert" not in body


def test_the_dashboard_shows_last_nights_batch(client, make_user):
    import datetime

    from pipeline.models import BatchRun

    owner = make_user("owner")
    login(client, owner)
    client.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": BRIEF})
    BatchRun.objects.create(project=Project.objects.get(slug="snow"), date=datetime.date(2026, 11, 22),
                            status="done", chapters_requested=3, stop_reason="cost_cap",
                            summary={"chapters": [{"number": 1, "title": "风起"}], "cost_usd": "0.5"})
    body = client.get(reverse("dashboard", args=["snow"])).content.decode()
    assert "2026-11-22" in body and "cost_cap" in body
