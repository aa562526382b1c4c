"""An editor records a promise in the facts ledger in a real browser (Chromium), closes it later,
and finds it by character on the ledger page; screenshots in test-output/screenshots/ (#18, #16)."""
from __future__ import annotations

import re

import pytest

from projects.models import Membership, Role, StoryFact
from projects.sample_project import sample_project_create
from tests.conftest import shot, web_log_in

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "locale": "zh-CN", "viewport": {"width": 1280, "height": 900}}


def test_an_editor_records_and_closes_a_promise(page, live_server, make_user):
    from playwright.sync_api import expect

    writer = make_user("writer", staff=False)
    project = sample_project_create(owner=make_user("owner", staff=False))
    Membership.objects.create(project=project, user=writer, role=Role.EDITOR)
    page.set_default_timeout(30_000)
    web_log_in(page, live_server.url, "writer")

    page.goto(f"{live_server.url}/p/{project.slug}/world/")
    page.click("#facts-link")
    expect(page).to_have_url(re.compile(r"/facts/$"))
    page.click("#new-fact")
    page.select_option("select[name=kind]", label="承诺或誓言")
    page.fill("textarea[name=text]", "林枫答应陈老，把星火残卷送回宗门旧址")
    page.fill("input[name=chapter]", "2")
    page.check("input[name=characters][value=lin-feng]")
    page.check("input[name=characters][value=chen-lao]")
    page.select_option("select[name=storyline]", value="main-arc")
    shot(page, "fact-new-zh-CN")
    page.click("#save-fact")

    expect(page).to_have_url(re.compile(r"/facts/$"))
    row = page.locator("tr[data-fact=fact-001]")
    expect(row).to_contain_text("林枫答应陈老")
    expect(row).to_contain_text("陈老、林枫")
    expect(row).to_contain_text("仍有效")
    shot(page, "fact-list-zh-CN")

    row.get_by_role("link").click()
    page.select_option("select[name=status]", label="已兑现")
    page.fill("input[name=closed_chapter]", "9")
    page.fill("textarea[name=closing_note]", "残卷送到")
    page.click("#save-fact")
    expect(page).to_have_url(re.compile(r"/facts/\?status=all$"))
    expect(page.locator("tr[data-fact=fact-001]")).to_contain_text("已兑现")

    page.select_option("#fact-filter select[name=status]", value="open")
    page.select_option("#fact-filter select[name=character]", label="陈老")
    page.click("#fact-filter button")
    expect(page.locator("tr[data-fact]")).to_have_count(0)
    fact = StoryFact.objects.get(project=project)
    assert (fact.status, fact.closed_chapter, fact.version, fact.characters) == ("fulfilled", 9, 2,
                                                                                 ["chen-lao", "lin-feng"])
