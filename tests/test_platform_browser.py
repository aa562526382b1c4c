"""The owner sets the platform and its main numbers in a real browser (Chromium, as
tests/test_browser.py), then sees it on the dashboard; in Chinese and in English, with screenshots
in test-output/screenshots/."""
from __future__ import annotations

import pytest

from projects.models import Project
from projects.platforms.limits import platform_limits
from projects.services.projects import project_create
from tests.conftest import shot, web_log_in

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORDS = {
    "zh-CN": {"saved": "平台设置已保存", "fanqie": "番茄", "length": "章节字数"},
    "en-US": {"saved": "Platform settings saved", "fanqie": "Fanqie", "length": "Chapter length"},
}


@pytest.fixture(params=["zh-CN", "en-US"])
def language(request):
    return request.param


@pytest.fixture
def browser_context_args(browser_context_args, language):
    return {**browser_context_args, "locale": language, "viewport": {"width": 1280, "height": 1400}}


def test_the_owner_moves_the_book_to_fanqie_and_tightens_its_numbers(page, live_server, make_user, language):
    from playwright.sync_api import expect

    words = WORDS[language]
    owner = make_user("owner", staff=False)
    project = project_create(owner=owner, slug="snow", title="雪夜", target_platform="qidian", genre="xuanhuan")
    page.set_default_timeout(30_000)
    web_log_in(page, live_server.url, "owner")

    page.goto(f"{live_server.url}/p/{project.slug}/settings/")
    page.select_option("#platform-settings [name=target_platform]", "fanqie")
    shot(page, f"platform-settings-{language}")
    page.click("#save-platform")
    expect(page.locator(".messages")).to_contain_text(words["saved"])
    expect(page.locator("#platform-settings [name=word_target_min]")).to_have_value("1800")  # fanqie's own

    page.fill("#platform-settings [name=word_target_min]", "2000")
    page.fill("#platform-settings [name=max_paragraph_chars]", "180")
    page.click("#save-platform")
    expect(page.locator(".messages")).to_contain_text(words["saved"])
    project = Project.objects.get(pk=project.pk)
    assert platform_limits(project)["word_count"]["target_min"] == 2000
    assert platform_limits(project)["readability"]["max_paragraph_chars"] == 180

    page.goto(f"{live_server.url}/p/{project.slug}/")
    expect(page.locator("#platform")).to_have_text(words["fanqie"])
    expect(page.locator("#chapter-length")).to_have_text("2000–2500")
    expect(page.locator(".stats")).to_contain_text(words["length"])
    shot(page, f"platform-dashboard-{language}")
