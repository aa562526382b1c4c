"""The API docs and the admin's JSON editor in a real browser under the enforced Content Security
Policy: Swagger UI renders from the sidecar's files and nothing is blocked (the system Chromium
through pytest-playwright, as in tests/test_browser.py)."""
from __future__ import annotations

import pytest


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT_MS = 30_000


def _blocked(page) -> list[str]:
    """Console messages of the CSP blocking (not merely reporting) something."""
    messages: list[str] = []
    page.on("console", lambda m: messages.append(m.text) if "Content Security Policy" in m.text
            and not any(word in m.text.lower() for word in ("report-only", "report only")) else None)
    return messages


def test_swagger_ui_renders_under_the_csp(page, live_server):
    blocked = _blocked(page)
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_server.url)
            and not r.url.startswith("data:") else None)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=TIMEOUT_MS)
    assert "Novelsite API" in page.inner_text(".swagger-ui .info .title")
    assert page.locator(".opblock").count() > 20
    assert blocked == [] and outside == []


def test_admin_json_editor_works_under_the_csp(page, live_server, make_user):
    from projects.sample_project import sample_project_create

    make_user("admin", superuser=True)
    project = sample_project_create()
    blocked = _blocked(page)
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw-admin")
    page.click("input[type=submit]")
    page.goto(f"{live_server.url}/admin/projects/project/{project.pk}/change/")
    # django-jsonform's React editor renders its form groups (some inside collapsed fieldsets)
    page.wait_for_selector(".rjf-form-group", state="attached", timeout=TIMEOUT_MS)
    assert page.locator(".rjf-form-group").count() > 0
    assert blocked == []
