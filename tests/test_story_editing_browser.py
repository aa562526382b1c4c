"""A writer edits the story on the web alone, in a real browser (Chromium, as tests/test_browser.py):
a character with its contracts, then a chapter contract; in Chinese and in English, with
screenshots in test-output/screenshots/."""
from __future__ import annotations

import re

import pytest

from projects.models import ChapterContract, Character, Membership, Role
from projects.sample_project import sample_project_create
from tests.conftest import shot, web_log_in

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORDS = {
    "zh-CN": {"edit": "编辑", "save": "保存", "saved": "已保存", "contracts": "章节契约"},
    "en-US": {"edit": "Edit", "save": "Save", "saved": "saved", "contracts": "Chapter contracts"},
}


@pytest.fixture(params=["zh-CN", "en-US"])
def language(request):
    return request.param


@pytest.fixture
def browser_context_args(browser_context_args, language):
    return {**browser_context_args, "locale": language, "viewport": {"width": 1280, "height": 900}}


def test_a_writer_edits_a_character_and_a_chapter_contract(page, live_server, make_user, language):
    from playwright.sync_api import expect

    words = WORDS[language]
    writer = make_user("writer", staff=False)
    project = sample_project_create(owner=make_user("owner", staff=False))
    Membership.objects.create(project=project, user=writer, role=Role.EDITOR)
    page.set_default_timeout(30_000)
    web_log_in(page, live_server.url, "writer")

    # the character: a contract's rule changed, one contract added
    page.goto(f"{live_server.url}/p/{project.slug}/world/")
    page.locator("#characters summary", has_text="lin-feng").get_by_role("link", name=words["edit"]).click()
    expect(page).to_have_url(re.compile(r"/edit/characters/lin-feng/$"))
    page.fill("[name=contracts-0-rule]", "遇事先怀疑，查清再动手")
    page.fill("[name=contracts-1-id]", "C-LIN-FENG-002")
    page.select_option("[name=contracts-1-type]", "speech")
    page.fill("[name=contracts-1-rule]", "对陌生人只说半句话")
    shot(page, f"story-character-edit-{language}")
    page.click("#save-character")
    expect(page.locator("#contracts")).to_contain_text("遇事先怀疑，查清再动手")
    expect(page.locator("#contracts")).to_contain_text("对陌生人只说半句话")
    expect(page.locator(".messages")).to_contain_text(words["saved"])
    shot(page, f"story-character-saved-{language}")

    # a chapter contract: an objective rewritten, a state change added
    page.goto(f"{live_server.url}/p/{project.slug}/world/")
    page.click("#contracts-link")
    expect(page.locator("h1")).to_have_text(words["contracts"])
    page.locator("#contracts tr", has_text="2").get_by_role("link", name=words["edit"]).first.click()
    page.fill("[name=objectives-0-description]", "林枫在密信里读到星火宗的暗号")
    page.fill("[name=states_after]", "lin-feng.location = 幽暗森林")
    shot(page, f"story-contract-edit-{language}")
    page.click("#save-contract")
    expect(page.locator("#contracts")).to_contain_text("林枫在密信里读到星火宗的暗号")

    character = Character.objects.get(project=project, slug="lin-feng")
    assert [c["rule"] for c in character.contracts] == ["遇事先怀疑，查清再动手", "对陌生人只说半句话"]
    data = ChapterContract.objects.get(project=project, chapter=2).data
    assert data["objectives"][0]["description"] == "林枫在密信里读到星火宗的暗号"
    assert data["postconditions"]["state_changes"] == {"lin-feng": {"location": "幽暗森林"}}
