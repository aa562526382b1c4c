"""A writer's day on the web alone, in a real browser (the system Chromium, as tests/test_browser.py),
once in Chinese and once in English: create a project from a Chinese brief (the slug comes from the
title), answer the quick start, read the trial chapter, edit a character, approve the plan, edit a
chapter contract and the volume's storyline schedule, write chapters while watching the progress,
review a chapter the judge paused by reading it, invite a member with a role, and download the book
as EPUB. Screenshots go to test-output/screenshots/writers-day-<language>-*.png."""
from __future__ import annotations

import re

import pytest

from projects.models import ChapterContract, Character, Membership, Project, Volume
from tests.conftest import shot, web_log_in

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BRIEF = "北境少年林枫在雪原上救下一位神秘老人，卷入星火宗覆灭的旧案，一路南下追查预言的真相。"
TIMEOUT_MS = 60_000
WORDS = {
    "zh-CN": {"projects": "项目", "new": "新建项目", "answer": "回答问题", "plan": "卷规划", "world": "世界",
              "edit": "编辑", "chapters": "章节", "trial": "快速开始的试写章", "saved": "已保存",
              "state_writing": "写作中", "invite": "邀请", "viewer": "读者", "reviewer": "审阅者"},
    "en-US": {"projects": "Projects", "new": "New project", "answer": "Answer the question", "plan": "Volume plan",
              "world": "World", "edit": "Edit", "chapters": "Chapters", "trial": "The quick start's trial chapter",
              "saved": "saved", "state_writing": "Writing", "invite": "Invite", "viewer": "Viewer",
              "reviewer": "Reviewer"},
}


@pytest.fixture(params=["zh-CN", "en-US"])
def language(request):
    return request.param


@pytest.fixture
def browser_context_args(browser_context_args, language):
    # the browser's language decides the site's (LocaleMiddleware reads Accept-Language)
    return {**browser_context_args, "locale": language, "viewport": {"width": 1280, "height": 900}}


@pytest.fixture(autouse=True)
def _pipeline_in_the_background(settings, background_runs_on):
    settings.NOVELSITE_OFFLINE = {"latency_ms": 300}  # slow enough for the progress to be seen moving


def test_a_writers_day_on_the_web(page, live_server, make_user, settings, language):
    make_user("writer")
    make_user("friend")
    try:
        writers_day(page, live_server.url, settings, language)
    except Exception:
        shot(page, f"writers-day-{language}-failure")
        raise


def writers_day(page, url: str, settings, language: str) -> None:  # noqa: PLR0915 (one story, told in order)
    from playwright.sync_api import expect

    words = WORDS[language]
    step = iter(range(1, 100))

    def snap(name: str) -> None:
        shot(page, f"writers-day-{language}-{next(step):02d}-{name}")

    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=20_000)
    web_log_in(page, url, "writer")
    expect(page.locator("h1")).to_have_text(words["projects"])

    # a project from a Chinese brief: the slug is filled in from the title, in pinyin
    page.click(f"text={words['new']}")
    page.locator("#create-form input[name=title]").press_sequentially("雪原长夜")
    expect(page.locator("#create-form input[name=slug]")).to_have_value("xue-yuan-chang-ye")
    page.fill("#create-form textarea[name=brief]", BRIEF)
    snap("create")
    page.click("#create-form button[type=submit]")
    expect(page).to_have_url(f"{url}/p/xue-yuan-chang-ye/")
    slug = "xue-yuan-chang-ye"

    # the quick start: it stops at the platform and genre question, answered on the gates page
    take_next_step(page)
    page.click("#answer-question")
    page.locator("input[name=q-platform]").first.check()
    page.locator("input[name=q-genre]").first.check()
    snap("quick-start-question")
    page.click(".gate-form button[type=submit]")
    expect(page.locator("#next-step")).to_have_attribute("data-code", "volume:outline")

    # the trial chapter can be read
    page.click(f"nav.project-nav >> text={words['chapters']}")
    page.click(f"text={words['trial']}")
    expect(page.locator("#trial-chapter p").first).to_be_visible()
    snap("trial-chapter")

    # a character of the cast the quick start made from the brief
    page.click(f"nav.project-nav >> text={words['world']}")
    page.locator("#characters summary").get_by_role("link", name=words["edit"]).first.click()
    expect(page).to_have_url(re.compile(r"/edit/characters/[a-z0-9-]+/$"))
    character_slug = page.url.rstrip("/").rsplit("/", 1)[1]
    page.fill("textarea[name=profile]", "## 身份\n北境猎户之子。\n\n## 秘密\n左手掌心有星火宗的烙印。")
    snap("character-edit")
    page.click("#save-character")
    expect(page.locator(".messages")).to_contain_text(words["saved"])

    # the volume plan: staged, read, approved
    page.goto(f"{url}/p/{slug}/")
    take_next_step(page)
    page.click("#plan-waiting")
    expect(page.locator("h1")).to_have_text(words["plan"])
    expect(page.locator("#plan-outline")).to_be_visible()
    snap("plan")
    page.click("#approve-plan")
    expect(page.locator("#next-step")).to_have_attribute("data-code", "chapter:001:draft")

    # a chapter contract and the storyline schedule, edited as forms
    page.goto(f"{url}/p/{slug}/contracts/2/edit/")
    page.fill("[name=objectives-0-description]", "林枫在密信里读到星火宗的暗号")
    snap("contract-edit")
    page.click("#save-contract")
    expect(page.locator("#contracts")).to_contain_text("林枫在密信里读到星火宗的暗号")
    page.click(f"nav.project-nav >> text={words['chapters']}")
    page.locator("#volume-tools a[href$='/edit/schedule/1/']").click()
    page.fill("[name=volume_theme]", "雪原上的第一把火")
    page.fill("[name=active-0-arc_goal]", "林枫查到星火宗覆灭的第一条线索")
    snap("schedule-edit")
    page.click("#save-schedule")
    expect(page.locator(".messages")).to_be_visible()

    # write two chapters: the request answers at once and the dashboard follows the run
    page.goto(f"{url}/p/{slug}/")
    page.fill("input[name=count][type=number]", "2")
    with page.expect_navigation(timeout=5_000):
        page.locator("form:has(input[name=count][type=number]) button[type=submit]").click()
    expect(page.locator("#run-working")).to_be_disabled()
    expect(page.locator("#progress")).to_have_attribute("data-seen", "1")  # a polled stage was shown
    snap("progress")
    expect(page.locator("#chapters-written")).to_have_text("2", timeout=TIMEOUT_MS)
    expect(page.locator("#run-working")).to_have_count(0)
    snap("two-chapters")

    # the judge pauses chapter 3 (low scores on demand): the writer reads it and accepts it
    settings.NOVELSITE_OFFLINE = {"latency_ms": 300, "score_mode": "low"}
    with page.expect_navigation(timeout=5_000):
        page.click("#write-next")
    expect(page.locator("#answer-question")).to_be_visible(timeout=TIMEOUT_MS)
    settings.NOVELSITE_OFFLINE = {"latency_ms": 300}
    page.click("#answer-question")
    section = page.locator("section.gate:has(#staged-chapter)").first
    expect(section.locator("#staged-chapter p").first).to_be_visible()
    expect(section.locator("#judge-evaluation")).to_be_visible()
    snap("paused-chapter")
    section.locator("input[name=q-decision][value=accept]").check()
    with page.expect_navigation(timeout=TIMEOUT_MS):
        section.locator(".gate-form button[type=submit]").click()
    expect(page.locator("#chapters-written")).to_have_text("3")
    expect(page.locator("#orchestrator-state")).to_have_text(words["state_writing"])
    snap("accepted")

    # invite a friend as a reviewer: the role is chosen explicitly, viewer by default
    page.goto(f"{url}/p/{slug}/members/")
    invite = page.locator("form:has(input[name=action][value=invite])")
    expect(invite.locator("select[name=role]")).to_have_value("viewer")
    invite.locator("input[name=username]").fill("friend")
    invite.locator("select[name=role]").select_option("reviewer")
    snap("invite")
    invite.locator("button[type=submit]").click()
    expect(page.locator("table.list tr", has_text="friend")).to_contain_text(words["reviewer"])

    # the book as an EPUB, named by its title
    page.goto(f"{url}/p/{slug}/")
    with page.expect_download() as download:
        page.click("#downloads >> text=EPUB")
    assert download.value.suggested_filename == "雪原长夜.epub"
    with open(download.value.path(), "rb") as epub:
        assert epub.read(4) == b"PK\x03\x04"
    snap("dashboard-end")

    # what the day left in the database
    project = Project.objects.get(slug=slug)
    assert project.last_completed_chapter == 3
    assert "星火宗的烙印" in Character.objects.get(project=project, slug=character_slug).profile
    contract = ChapterContract.objects.get(project=project, chapter=2).data
    assert contract["objectives"][0]["description"] == "林枫在密信里读到星火宗的暗号"
    schedule = Volume.objects.get(project=project, number=1).storyline_schedule
    assert schedule["volume_theme"] == "雪原上的第一把火"
    assert Membership.objects.get(project=project, user__username="friend").role == "reviewer"


def take_next_step(page) -> None:
    """The button posts in the background and the request answers at once; the dashboard follows
    the run by polling and reloads when it stops (at a question or a staged plan)."""
    from playwright.sync_api import expect

    with page.expect_navigation(timeout=TIMEOUT_MS):
        page.click("#take-next-step")
    expect(page.locator("#progress")).not_to_have_attribute("data-poll", "1")
