"""One spending policy on every path a person takes (pipeline/nightly/spending.py): the API and the web pages
share the per-person and per-project rates, a project works on one run at a time (promotions
included), runs started by hand stop at the project's daily cap, and a person owns a limited number
of projects (staff exempt). The runs are queued, not worked (``no_llm_work``)."""
from __future__ import annotations

import io
import zipfile
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from pipeline.models import BatchRun, LLMCall, PipelineRun, RunKind, RunStatus
from projects.models import Project

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_throttle_cache")]


@pytest.fixture
def policy(settings):
    def set_policy(**changes):
        settings.NOVELSITE_SPENDING = {**settings.NOVELSITE_SPENDING, **changes}
    return set_policy


def web(world, who: str) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE="en")  # the messages below are checked in English
    client.force_login(world.users[who])
    return client


def flashed(response) -> str:
    return " ".join(str(m) for m in response.context["messages"]) if response.context else ""


def promotion_post(client: Client, slug: str):
    return client.post(reverse("promotions", args=[slug]), {"target_kind": "chapter", "target": "1",
                                                            "platform": "xiaohongshu", "style": "casual"}, follow=True)


def working_promotions(project) -> int:
    return PipelineRun.objects.filter(project=project, kind=RunKind.PROMOTION,
                                      status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).count()


def test_a_second_promotion_while_one_works_is_refused_on_the_web_and_the_api(world):
    slug = world.project.slug
    first = promotion_post(web(world, "editor"), slug)
    assert working_promotions(world.project) == 1, flashed(first)

    second = promotion_post(web(world, "editor"), slug)
    api = world.client("editor").post(f"/api/projects/{slug}/promotions", {"chapter": 1}, format="json")

    assert "already working" in flashed(second)
    assert api.status_code == 409 and api.json()["code"] == "pipeline_busy"
    assert working_promotions(world.project) == 1


def test_the_limit_of_working_runs_is_a_setting(world, policy):
    policy(max_active_runs=3)
    for _ in range(3):
        promotion_post(web(world, "editor"), world.project.slug)
    assert working_promotions(world.project) == 3
    assert "already working" in flashed(promotion_post(web(world, "editor"), world.project.slug))


def test_the_web_and_the_api_share_one_allowance_per_person(world, policy):
    policy(user_rate="3/hour", max_active_runs=100)
    slug, api = world.project.slug, world.client("editor")
    assert api.post(f"/api/projects/{slug}/promotions", {"chapter": 1}, format="json").status_code == 202
    assert promotion_post(web(world, "editor"), slug).status_code == 200
    assert api.post(f"/api/projects/{slug}/promotions", {"chapter": 1}, format="json").status_code == 202

    refused_api = api.post(f"/api/projects/{slug}/promotions", {"chapter": 1}, format="json")
    refused_web = promotion_post(web(world, "editor"), slug)

    assert refused_api.status_code == 429 and refused_api.json()["code"] == "throttled"
    assert int(refused_api["Retry-After"]) > 0
    assert "try again in" in flashed(refused_web)
    assert working_promotions(world.project) == 3
    # another person has their own allowance
    assert world.client("owner").post(f"/api/projects/{slug}/promotions", {"chapter": 1},
                                      format="json").status_code == 202


def test_a_project_has_an_allowance_across_its_people(world, policy):
    policy(user_rate="100/hour", project_rate="2/hour", max_active_runs=100)
    slug = world.project.slug
    for who in ("editor", "owner"):
        assert world.client(who).post(f"/api/projects/{slug}/promotions", {"chapter": 1},
                                      format="json").status_code == 202
    refused = promotion_post(web(world, "owner"), slug)
    assert "This project has started a lot of LLM work" in flashed(refused)


def test_regenerating_a_plan_on_the_web_is_counted(world, policy):
    """A reviewer answering questions over and over is counted like any other LLM work."""
    policy(user_rate="2/hour")
    client = web(world, "reviewer")
    for _ in range(3):
        response = client.post(reverse("plan-decide", args=[world.project.slug]), {"decision": "regenerate"},
                               follow=True)
    # no plan is waiting in the sample project: the first two are admitted and find none (404), the
    # third is refused before it looks
    assert response.status_code == 404 or "try again in" in flashed(response)


def _spend(project, usd: str, *, nightly: bool = False) -> None:
    batch = BatchRun.objects.create(project=project, date=timezone.localdate(), chapters_requested=1) if nightly \
        else None
    run = PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=2, status=RunStatus.DONE,
                                     batch=batch)
    LLMCall.objects.create(run=run, call_key=f"{run.pk}:draft:1:1", backend="anthropic", model="m",
                           request_sha256="0" * 64, output_text="x", cost_usd=Decimal(usd))


def test_work_started_by_hand_stops_at_the_daily_cap_and_the_night_does_not_count(world):
    project, slug = world.project, world.project.slug
    Project.objects.filter(pk=project.pk).update(manual_cost_cap_usd=Decimal("1.00"))
    _spend(project, "5.00", nightly=True)  # the nightly batch has its own cap
    _spend(project, "0.60")
    assert world.client("editor").post(f"/api/projects/{slug}/promotions", {"chapter": 1},
                                       format="json").status_code == 202
    PipelineRun.objects.filter(project=project, kind=RunKind.PROMOTION).update(status=RunStatus.DONE)
    _spend(project, "0.40")

    refused = world.client("editor").post(f"/api/projects/{slug}/write", {}, format="json")
    on_the_web = web(world, "editor").post(reverse("write", args=[slug]), {"count": "1"}, follow=True)

    assert refused.status_code == 429 and refused.json()["extra"] == {"spent_usd": "1.00", "cap_usd": "1.00"}
    assert "budget" in flashed(on_the_web)
    # the owner raises the cap in the settings; then work starts again
    patch = world.client("owner").patch(f"/api/projects/{slug}", {"manual_cost_cap_usd": "5.00"}, format="json")
    assert patch.status_code == 200
    assert world.client("editor").post(f"/api/projects/{slug}/write", {}, format="json").status_code == 202


def test_only_the_owner_sets_the_daily_cap(world):
    response = world.client("editor").patch(f"/api/projects/{world.project.slug}", {"manual_cost_cap_usd": "900"},
                                            format="json")
    assert response.status_code == 403
    assert Project.objects.get(pk=world.project.pk).manual_cost_cap_usd == Decimal("20.00")


# --- Projects per person ------------------------------------------------------------------------


def _zip_of_a_tree() -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("brief.md", "# 创作纲领\n\n- **书名**：夜渡\n")
        archive.writestr(".checkpoint.json", '{"last_completed_chapter": 0, "current_volume": 1}')
    buffer.seek(0)
    buffer.name = "night.zip"
    return buffer


def test_a_person_owns_at_most_the_limit_of_projects_on_every_path(world, policy):
    policy(max_projects_per_user=2)  # the owner owns the sample project already
    api = world.client("owner")
    api.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens['owner']}", HTTP_ACCEPT_LANGUAGE="en")
    assert api.post("/api/projects", {"slug": "second", "title": "二", "brief": "简介"},
                    format="json").status_code == 201

    by_api = api.post("/api/projects", {"slug": "third", "title": "三", "brief": "简介"}, format="json")
    by_web = web(world, "owner").post(reverse("project-create-web"), {"title": "三", "slug": "third", "brief": "简介"})
    by_import = api.post("/api/projects/import", {"file": _zip_of_a_tree()}, format="multipart")
    by_web_import = web(world, "owner").post(reverse("project-import-web"), {"archive": _zip_of_a_tree()})

    assert by_api.status_code == 403 and by_api.json()["code"] == "project_limit"
    assert by_import.status_code == 403 and by_import.json()["code"] == "project_limit"
    assert by_web.status_code == 200 and "most one person may own" in by_web.content.decode()
    assert "most one person may own" in by_web_import.content.decode()
    assert not Project.objects.filter(slug="third").exists()
    assert Project.objects.count() == 2


def test_staff_are_not_limited_in_projects(world, policy, make_user):
    policy(max_projects_per_user=0)
    staff = make_user("staffer", staff=True)
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(staff)
    response = client.post(reverse("project-create-web"), {"title": "三", "slug": "staff-book", "brief": "简介"})
    assert response.status_code == 302
    assert Project.objects.filter(slug="staff-book").exists()
