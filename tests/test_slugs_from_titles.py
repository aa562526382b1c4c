"""Slugs from Chinese titles by their pinyin (pypinyin): made when the person leaves the field
empty, on the web form, over the API and as the form fills itself while one types; still editable."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from projects.models import Project
from projects.slugs import SLUG_MAX_CHARS, slug_from_title

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("title", "slug"), [
    ("雪原长夜", "xue-yuan-chang-ye"),
    ("长安 2049：重启", "chang-an-2049-chong-qi"),
    ("The Long Night 长夜", "the-long-night-chang-ye"),
    ("！？……", "novel"),
    ("", "novel"),
])
def test_a_title_becomes_its_pinyin(title, slug):
    assert slug_from_title(title) == slug


def test_a_long_title_is_cut_at_a_word():
    slug = slug_from_title("北境少年林枫在雪原上救下一位神秘老人卷入星火宗覆灭的旧案一路南下")
    assert len(slug) <= SLUG_MAX_CHARS - 12 and not slug.endswith("-")
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug)


@pytest.fixture
def web(make_user) -> Client:
    client = Client()
    client.force_login(make_user("writer", staff=False))
    return client


def test_the_web_form_makes_the_slug_and_a_second_book_gets_another(web):
    for _ in range(2):
        response = web.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "", "brief": "简介"})
        assert response.status_code == 302
    assert sorted(Project.objects.values_list("slug", flat=True)) == ["xue-yuan-chang-ye", "xue-yuan-chang-ye-2"]


def test_a_slug_typed_by_the_person_is_kept(web):
    web.post(reverse("project-create-web"), {"title": "雪原长夜", "slug": "snow", "brief": "简介"})
    assert Project.objects.get().slug == "snow"


def test_the_suggestion_the_page_asks_for(web):
    response = web.get(reverse("slug-suggestion"), {"title": "雾城纪事"})
    assert response.json() == {"slug": "wu-cheng-ji-shi"}
    assert Client().get(reverse("slug-suggestion"), {"title": "x"}).status_code == 302  # log in first


def test_the_api_makes_the_slug_when_it_is_left_out(make_user):
    client = APIClient()
    client.force_authenticate(make_user("api-writer", staff=False))
    response = client.post("/api/projects", {"title": "雾城纪事", "brief": "简介"}, format="json")
    assert response.status_code == 201 and response.json()["slug"] == "wu-cheng-ji-shi"
