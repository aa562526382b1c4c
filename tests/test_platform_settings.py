"""The owner edits the platform, the genre and the profile's main numbers on the settings page
(issue #17 §1), in Chinese and in English, and the dashboard shows the platform in human words."""
from __future__ import annotations

import pytest
from django.urls import reverse

from projects.models import Project
from projects.platforms.limits import platform_limits
from projects.services.projects import project_create
from tests.conftest import member_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return project_create(owner=None, slug="snow", title="雪夜", target_platform="qidian", genre="xuanhuan")


def form(project, **changes) -> dict:
    limits = platform_limits(project)
    data = {"target_platform": project.target_platform, "genre": project.genre, "genre_drive_type": "plot",
            "word_target_min": limits["word_count"]["target_min"],
            "word_target_max": limits["word_count"]["target_max"],
            "word_hard_min": limits["word_count"]["hard_min"], "word_hard_max": limits["word_count"]["hard_max"],
            "hook_required": "on", "hook_min_strength": 3, "max_paragraph_chars": 300,
            "max_exposition_paragraphs": 4, "max_new_entities": 6}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_the_settings_page_shows_the_platform_form_in_chinese(project, make_user):
    owner = member_client(project, make_user, "owner")
    page = owner.get(reverse("settings", args=[project.slug])).content.decode()
    assert "平台与类型" in page and "章节字数：目标下限（字）" in page and "每章结尾必须留钩子" in page
    assert 'value="2500"' in page and "起点" in page and "小红书" not in page
    assert '<option value="xiaohongshu"' not in page


def test_the_settings_page_in_english(project, make_user):
    owner = member_client(project, make_user, "owner", language="en")
    page = owner.get(reverse("settings", args=[project.slug])).content.decode()
    assert "Platform and genre" in page and "Chapter length: target from (字)" in page and "Qidian" in page


def test_the_owner_saves_the_main_numbers(project, make_user):
    owner = member_client(project, make_user, "owner")
    response = owner.post(reverse("settings-platform", args=[project.slug]), form(
        project, word_target_min=2800, word_target_max=3200, hook_min_strength=4, max_paragraph_chars=260,
        max_new_entities=5, genre="xuanyi", genre_drive_type="suspense"))
    assert response.status_code == 302
    project.refresh_from_db()
    limits = platform_limits(project)
    assert (limits["word_count"]["target_min"], limits["word_count"]["target_max"]) == (2800, 3200)
    assert limits["hook_policy"]["min_strength"] == 4 and limits["readability"]["max_paragraph_chars"] == 260
    assert limits["info_load"]["max_new_entities_per_chapter"] == 5
    assert (project.genre, project.genre_drive_type) == ("xuanyi", "suspense")
    assert project.platform_profile["scoring"]["weight_profile_id"] == "suspense:v1"


def test_another_platform_brings_its_own_numbers(project, make_user):
    owner = member_client(project, make_user, "owner")
    response = owner.post(reverse("settings-platform", args=[project.slug]),
                          form(project, target_platform="fanqie", word_target_min=2900), follow=True)
    assert "已换用新平台自己的数值" in response.content.decode()
    project.refresh_from_db()
    assert project.target_platform == "fanqie"
    assert platform_limits(project)["word_count"]["target_min"] == 1800  # fanqie's own, not the posted 2900


@pytest.mark.parametrize("changes, message", [
    ({"target_platform": "xiaohongshu"}, "xiaohongshu"),
    ({"word_target_min": 5000}, "章节字数必须从小到大"),
    ({"hook_min_strength": 9}, "hook_min_strength"),
    ({"max_paragraph_chars": "很多"}, "max_paragraph_chars"),
    ({"word_hard_max": None}, "word_hard_max"),
    ({"genre": "<script>"}, "genre"),
])
def test_bad_input_is_a_form_error_and_nothing_is_saved(project, make_user, changes, message):
    owner = member_client(project, make_user, "owner")
    before = Project.objects.get(pk=project.pk).platform_profile
    response = owner.post(reverse("settings-platform", args=[project.slug]), form(project, **changes))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'class="errorlist' in page and (message in page or f'name="{message}"' in page)
    assert Project.objects.get(pk=project.pk).platform_profile == before


def test_only_the_owner_may_change_the_platform(project, make_user):
    editor = member_client(project, make_user, "editor")
    response = editor.post(reverse("settings-platform", args=[project.slug]), form(project, target_platform="fanqie"))
    assert response.status_code == 403
    assert Project.objects.get(pk=project.pk).target_platform == "qidian"
    assert member_client(project, make_user, "owner").get(
        reverse("settings-platform", args=[project.slug])).status_code == 302


@pytest.mark.parametrize("language, words", [(None, ["起点", "玄幻", "2500–3500"]),
                                             ("en", ["Qidian", "Xuanhuan (fantasy)", "2500–3500"])])
def test_the_dashboard_shows_the_platform_in_human_words(project, make_user, language, words):
    viewer = member_client(project, make_user, "viewer", language=language)
    page = viewer.get(reverse("dashboard", args=[project.slug])).content.decode()
    for word in words:
        assert word in page
    assert 'data-code="qidian"' in page


def test_a_project_without_platform_says_so_on_the_dashboard(make_user):
    plain = project_create(owner=None, slug="plain", title="书")
    page = member_client(plain, make_user, "viewer").get(reverse("dashboard", args=[plain.slug])).content.decode()
    assert "未选择" in page


def test_the_api_takes_only_writing_platforms_and_a_new_one_brings_its_profile(project, make_user):
    from rest_framework.test import APIClient

    from projects.models import Membership, Role

    owner = make_user("api-owner", staff=False)
    Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    client = APIClient()
    client.force_authenticate(owner)
    url = reverse("api-project-detail", args=[project.slug])
    refused = client.patch(url, {"target_platform": "xiaohongshu"}, format="json")
    assert refused.status_code == 400 and "target_platform" in refused.json()["extra"]["fields"]
    assert client.patch(url, {"target_platform": "jinjiang"}, format="json").status_code == 200
    project.refresh_from_db()
    assert project.platform_profile["platform"] == "jinjiang"
    assert platform_limits(project)["hook_policy"]["allowed_types"] == ["emotional_cliff", "question", "next_objective"]
    body = client.get(url).json()  # the API shows the active profile and its thresholds
    assert body["platform_profile"]["platform"] == "jinjiang"
    assert body["platform_limits"]["word_count"] == {"target_min": 2000, "target_max": 3000, "hard_min": 1500,
                                                     "hard_max": 4000}
