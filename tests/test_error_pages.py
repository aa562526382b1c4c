"""Error pages a person may meet on the web, in their language with a way back (DEBUG off, as in
production), and static files served by the app itself (WhiteNoise), so that pages are styled."""
from __future__ import annotations

import pytest
from django.test import Client, override_settings
from django.urls import path, reverse

from projects.models import Membership, Role
from projects.sample_project import sample_project_create

pytestmark = pytest.mark.django_db


def _boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", _boom)]


@pytest.fixture
def viewer(make_user):
    owner, viewer = make_user("owner", staff=False), make_user("viewer", staff=False)
    project = sample_project_create(owner=owner)
    Membership.objects.create(project=project, user=viewer, role=Role.VIEWER)
    client = Client()
    client.force_login(viewer)
    return client, project


@pytest.mark.parametrize(("language", "words"), [("zh-hans", "你的角色不能做这件事"),
                                                 ("en", "Your role does not allow this")])
def test_a_role_that_may_not_is_told_so_in_their_language_with_navigation(viewer, language, words):
    client, project = viewer
    response = client.get(reverse("settings", args=[project.slug]), HTTP_ACCEPT_LANGUAGE=language)

    assert response.status_code == 403
    page = response.content.decode()
    assert words in page
    assert reverse("dashboard", args=[project.slug]) in page or reverse("projects-home") in page
    assert "site.css" in page


@pytest.mark.parametrize(("language", "words"), [("zh-hans", "这个页面不存在"), ("en", "This page does not exist")])
def test_a_missing_page_says_so_in_the_persons_language(viewer, language, words):
    client, _project = viewer
    response = client.get("/p/no-such-book/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 404
    assert words in response.content.decode()


@override_settings(ROOT_URLCONF="tests.test_error_pages")
def test_a_server_error_is_a_styled_page_without_a_traceback():
    client = Client(raise_request_exception=False)
    response = client.get("/boom/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 500
    page = response.content.decode()
    assert "出错了" in page and "site.css" in page
    assert "RuntimeError" not in page and "Traceback" not in page


def test_static_files_are_served_by_the_app_with_debug_off():
    response = Client().get("/static/novelsite/site.css")
    assert response.status_code == 200
    assert b"".join(response.streaming_content).startswith(b"/*") \
        or response.get("Content-Type", "").startswith("text/css")
