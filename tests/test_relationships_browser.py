"""An editor changes a relationship in a real browser (Chromium) and sees the graph redrawn on the
world page; screenshots in test-output/screenshots/ (#16)."""
from __future__ import annotations

import re

import pytest

from projects.models import Membership, Project, Role
from projects.sample_project import sample_project_create
from tests.conftest import SHOTS, shot, web_log_in

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def browser_context_args(browser_context_args):
    return {**browser_context_args, "locale": "zh-CN", "viewport": {"width": 1280, "height": 900}}


def test_an_editor_edits_relationships_and_sees_the_graph(page, live_server, make_user):
    from playwright.sync_api import expect

    writer = make_user("writer", staff=False)
    project = sample_project_create(owner=make_user("owner", staff=False))
    Membership.objects.create(project=project, user=writer, role=Role.EDITOR)
    page.set_default_timeout(30_000)
    web_log_in(page, live_server.url, "writer")

    page.goto(f"{live_server.url}/p/{project.slug}/world/#relationships")
    page.click("#edit-relationships")
    expect(page).to_have_url(re.compile(r"/edit/relationships/$"))
    empty = page.locator("tr.relationship-row").nth(2)  # the two stored rows, then the empty ones
    empty.locator("select[name$=-who]").select_option(label="赵明")
    empty.locator("select[name$=-whom]").select_option(label="林枫")
    empty.locator("input[name$=-value]").fill("-75")
    page.locator("tr.relationship-row").nth(3).locator("select[name$=-who]").select_option(label="陈老")
    page.locator("tr.relationship-row").nth(3).locator("select[name$=-whom]").select_option(label="林枫")
    page.locator("tr.relationship-row").nth(3).locator("input[name$=-value]").fill("80")
    shot(page, "relationships-edit-zh-CN")
    page.click("#save-relationships")

    expect(page).to_have_url(re.compile(r"/world/#relationships$"))
    graph = page.locator("svg.relationship-graph")
    expect(graph).to_be_visible()
    expect(graph.locator("g.node")).to_have_count(3)
    expect(graph.locator("path.edge")).to_have_count(4)
    expect(graph.locator("path.edge.cold")).to_have_count(2)
    page.locator("#relationships").scroll_into_view_if_needed()
    shot(page, "relationships-graph-zh-CN")
    graph.screenshot(path=str(SHOTS / "relationships-graph-only.png"))
    assert Project.objects.get(pk=project.pk).relationships == {
        "lin-feng": {"zhao-ming": -30, "chen-lao": 50}, "zhao-ming": {"lin-feng": -75}, "chen-lao": {"lin-feng": 80}}
