"""While the site runs the offline LLM backend, every web page says so, in words, with how to
configure a model (#16); with a model configured the notice is gone."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from projects.sample_project import sample_project_create

pytestmark = pytest.mark.django_db
ZH = "占位文本：未配置模型。"
EN = "Placeholder text: no model is configured."


@pytest.fixture
def owner_client(make_user):
    owner = make_user("owner", staff=False)
    sample_project_create(owner=owner)
    client = Client()
    client.force_login(owner)
    return client


PAGES = [("projects-home", []), ("dashboard", ["demo"]), ("chapter-list", ["demo"]), ("world", ["demo"]),
         ("members", ["demo"]), ("settings", ["demo"])]


@pytest.mark.parametrize("name, args", PAGES)
def test_every_page_says_the_text_is_a_placeholder(owner_client, settings, name, args):
    settings.NOVELSITE_LLM_BACKEND = "offline"
    body = owner_client.get(reverse(name, args=args)).content.decode()
    assert ZH in body and "ANTHROPIC_API_KEY" in body and "NOVELSITE_LLM_BACKEND" in body
    english = owner_client.get(reverse(name, args=args), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert EN in english and "offline backend" in english


def test_the_login_page_and_error_pages_say_it_too(client, settings):
    settings.NOVELSITE_LLM_BACKEND = "offline"
    assert ZH in client.get(reverse("login")).content.decode()
    assert ZH in client.get("/p/no-such-project/", follow=True).content.decode()


@pytest.mark.parametrize("name, args", PAGES)
def test_no_notice_with_a_model_configured(owner_client, settings, name, args):
    settings.NOVELSITE_LLM_BACKEND = "anthropic"
    settings.ANTHROPIC_API_KEY = "sk-test"
    body = owner_client.get(reverse(name, args=args)).content.decode()
    assert ZH not in body and 'id="offline-notice"' not in body
