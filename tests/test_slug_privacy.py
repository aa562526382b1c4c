"""Creating a project with a slug someone else's project holds tells a stranger nothing about that
project (#15 item 8): the API and the web form answer exactly as for a reserved slug; a member of
the project that holds it is told it is theirs. (Imports: tests/test_filetree.py; the admin's
history pages: tests/test_admin.py.)"""
from __future__ import annotations

import pytest
from django.test import Client

from projects.models import Project
from tests.api_fixtures import World

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")


def _create_api(world: World, who: str, slug: str, language: str = "en"):
    return world.client(who).post("/api/projects", {"slug": slug, "title": "新书"}, format="json",
                                  HTTP_ACCEPT_LANGUAGE=language)


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_api_says_a_taken_slug_is_not_available_as_it_says_for_a_reserved_one(world, language):
    before = Project.objects.count()
    taken = _create_api(world, "outsider", world.project.slug, language)
    reserved = _create_api(world, "outsider", "import", language)
    assert taken.status_code == reserved.status_code == 400
    assert taken.json() == reserved.json()
    assert taken.json()["code"] == "invalid" and list(taken.json()["extra"]["fields"]) == ["slug"]
    if language == "en":
        assert taken.json()["message"] == "This short name (slug) is not available; choose another one."
    else:
        assert taken.json()["message"] == "这个短名称（slug）不可用，请换一个。"
    assert Project.objects.count() == before


@pytest.mark.django_db
def test_a_member_is_told_the_slug_is_their_own_project(world):
    response = _create_api(world, "viewer", world.project.slug)
    assert response.status_code == 400
    assert response.json()["message"] == "You already have a project with this short name (slug); choose another one."


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_web_form_answers_the_same_for_a_taken_and_a_reserved_slug(world, language):
    client = Client()
    client.force_login(world.users["outsider"])

    def slug_errors(slug: str) -> list[str]:
        response = client.post("/new/", {"title": "新书", "slug": slug, "brief": "少年出山。"},
                               HTTP_ACCEPT_LANGUAGE=language)
        assert response.status_code == 200  # the form again, nothing created
        return response.context["form"].errors["slug"]

    assert slug_errors(world.project.slug) == slug_errors("import")
    assert slug_errors("import") == [_create_api(world, "outsider", "import", language).json()["message"]]
    assert not Project.objects.filter(slug="import").exists()
