"""Inviting a member in a real browser (#16): the owner sees the offline notice, creates an account
for someone new with a chosen role, passes on the one-time link; the new member chooses a password
with it and finds the project; the link then no longer works. Screenshots in test-output/screenshots/."""
from __future__ import annotations

import re

import pytest

from tests.conftest import shot

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
NOODLES = "废土上的一家面馆，老板娘收留了一个失忆的机械少年。"


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "locale": "zh-CN", "viewport": {"width": 1280, "height": 900}}


def log_in(page, url: str, username: str, password: str) -> None:
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit].primary")


def test_an_owner_invites_someone_new_with_a_one_time_link(page, browser, live_server, make_user, settings):
    from playwright.sync_api import expect

    from projects.services.projects import project_create

    settings.NOVELSITE_LLM_BACKEND = "offline"
    settings.NOVELSITE_EMAIL_CONFIGURED = False
    owner = make_user("owner")
    project_create(owner=owner, slug="noodles", title="废土面馆", brief=NOODLES)

    log_in(page, live_server.url, "owner", "pw-owner")
    page.goto(f"{live_server.url}/p/noodles/members/")
    expect(page.locator("#offline-notice")).to_contain_text("占位文本：未配置模型")
    expect(page.locator("select[name=new-role]")).to_have_value("viewer")
    expect(page.locator("select[name=role]")).to_have_value("viewer")
    page.fill("input[name=new-username]", "laoban")
    page.fill("input[name=new-email]", "laoban@example.com")
    page.select_option("select[name=new-role]", "editor")
    shot(page, "members-01-create")
    page.click("text=创建并邀请")
    expect(page.locator("#new-member-link")).to_be_visible()
    expect(page.locator("table.list")).to_contain_text("laoban")
    shot(page, "members-02-link")
    link = page.locator("#new-member-link input").input_value()
    assert re.match(rf"{re.escape(live_server.url)}/welcome/[^/]+/[^/]+/$", link)

    newcomer = browser.new_context(locale="zh-CN").new_page()
    newcomer.goto(link)
    expect(newcomer.locator("h1")).to_have_text("设置你的密码")
    newcomer.fill("input[name=new_password1]", "Lantern-Noodles-42")
    newcomer.fill("input[name=new_password2]", "Lantern-Noodles-42")
    shot(newcomer, "members-03-set-password")
    newcomer.click("button[type=submit].primary")
    expect(newcomer.locator("h1")).to_have_text("密码已设置")
    log_in(newcomer, live_server.url, "laoban", "Lantern-Noodles-42")
    expect(newcomer.locator("main")).to_contain_text("废土面馆")
    shot(newcomer, "members-04-signed-in")
    newcomer.goto(link)
    expect(newcomer.locator("h1")).to_have_text("这个链接已经失效")
    shot(newcomer, "members-05-link-used")
