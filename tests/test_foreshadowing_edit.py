"""The foreshadowing ledger edited on the web: a person adds an item or changes its description,
scope and target range; status and history stay the pipeline's (#16)."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from projects.models import Foreshadowing, ForeshadowingEvent
from projects.sample_project import sample_project_create
from tests.conftest import member_client as member

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    project = sample_project_create(owner=make_user("owner", staff=False))
    item = Foreshadowing.objects.create(project=project, fid="F-001", description="玉佩的来历", scope="long",
                                        status="advanced", planted_chapter=1, target_resolve_start=20,
                                        target_resolve_end=30, last_updated_chapter=3)
    ForeshadowingEvent.objects.create(foreshadowing=item, chapter=1, action="planted", detail="林枫拾到玉佩")
    ForeshadowingEvent.objects.create(foreshadowing=item, chapter=3, action="advanced", detail="玉佩发光")
    return project




def edit_url(project, fid: str = "F-001") -> str:
    return reverse("foreshadowing-edit", args=[project.slug, fid])


def new_url(project) -> str:
    return reverse("foreshadowing-new", args=[project.slug])


def form_data(page, **changes) -> dict[str, str]:
    form = page.context["form"]
    data = {b.html_name: "" if b.value() is None else str(b.value()) for b in form if not b.field.disabled}
    return {**data, **{k: str(v) for k, v in changes.items()}}


def test_an_editor_changes_description_scope_and_range_and_the_pipeline_fields_stay(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    body = page.content.decode()
    assert page.status_code == 200 and "玉佩发光" in body  # the history is shown
    assert 'name="status"' not in body  # and the status is not a field
    response = client.post(edit_url(project), form_data(
        page, description="玉佩是陈老的旧物", scope="medium", target_resolve_start=10, target_resolve_end=12,
        status="resolved", planted_chapter=9))
    assert response.status_code == 302 and response.url.endswith("#foreshadowing")
    item = Foreshadowing.objects.get(project=project, fid="F-001")
    assert (item.description, item.scope, item.target_resolve_start, item.target_resolve_end) == (
        "玉佩是陈老的旧物", "medium", 10, 12)
    assert (item.status, item.planted_chapter, item.last_updated_chapter, item.events.count()) == (
        "advanced", 1, 3, 2)


def test_an_editor_adds_an_item(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(new_url(project))
    response = client.post(new_url(project), form_data(page, fid="F-002", description="雪原下的古城", scope="short",
                                                       target_resolve_start=5, target_resolve_end=8))
    assert response.status_code == 302
    item = Foreshadowing.objects.get(project=project, fid="F-002")
    assert (item.status, item.planted_chapter, item.scope, item.target_resolve_end) == ("planted", None, "short", 8)
    world = client.get(reverse("world", args=[project.slug])).content.decode()
    assert "雪原下的古城" in world and edit_url(project, "F-002") in world


@pytest.mark.parametrize(("changes", "why"), [
    ({"fid": "F 003"}, "a space in the id"),
    ({"fid": "a/b"}, "a slash in the id"),
    ({"fid": "x.__proto__"}, "a forbidden segment"),
    ({"fid": "F" * 201}, "too long"),
    ({"fid": "F-001"}, "taken"),
    ({"fid": ""}, "empty"),
    ({"scope": "forever"}, "unknown scope"),
    ({"target_resolve_start": "9", "target_resolve_end": "3"}, "ends before it starts"),
    ({"target_resolve_start": "9", "target_resolve_end": ""}, "half a range"),
    ({"target_resolve_start": "-1", "target_resolve_end": "3"}, "negative chapter"),
    ({"target_resolve_start": "1e9", "target_resolve_end": "3"}, "not a whole number"),
])
def test_a_bad_new_item_is_a_form_error_and_nothing_is_saved(project, make_user, changes, why):
    client = member(project, make_user, "editor")
    page = client.get(new_url(project))
    data = form_data(page, **{"fid": "F-003", "description": "<script>alert(1)</script>", "scope": "short", **changes})
    response = client.post(new_url(project), data)
    assert response.status_code == 200, why
    assert "<script>alert(1)</script>" not in response.content.decode()
    assert Foreshadowing.objects.filter(project=project).count() == 1, why


def test_a_bad_range_on_an_existing_item_is_refused(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    response = client.post(edit_url(project), form_data(page, target_resolve_start=40, target_resolve_end=30))
    assert response.status_code == 200
    assert Foreshadowing.objects.get(project=project, fid="F-001").target_resolve_start == 20


def test_a_stale_save_is_refused_with_a_message(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    assert client.post(edit_url(project), form_data(page, description="甲")).status_code == 302
    second = client.post(edit_url(project), form_data(page, description="乙"), follow=True)
    body = second.content.decode()
    assert "nothing was saved" in body or "没有保存" in body
    assert Foreshadowing.objects.get(project=project, fid="F-001").description == "甲"


@pytest.mark.parametrize("role", ["viewer", "reviewer"])
def test_a_member_who_may_not_edit_is_forbidden(project, make_user, role):
    client = member(project, make_user, role)
    assert client.get(edit_url(project)).status_code == 403
    assert client.post(edit_url(project), {"description": "x", "scope": "short"}).status_code == 403
    assert client.post(new_url(project), {"fid": "F-9", "scope": "short"}).status_code == 403
    assert Foreshadowing.objects.get(project=project, fid="F-001").description == "玉佩的来历"


def test_a_stranger_gets_404_and_a_missing_item_is_404(project, make_user):
    stranger = Client()
    stranger.force_login(make_user("stranger", staff=False))
    assert stranger.post(edit_url(project), {"description": "x", "scope": "short"}).status_code == 404
    assert stranger.post(new_url(project), {"fid": "F-9", "scope": "short"}).status_code == 404
    assert member(project, make_user, "editor").get(edit_url(project, "F-404")).status_code == 404
    assert Foreshadowing.objects.filter(project=project).count() == 1


def test_an_imported_id_with_a_slash_still_has_its_page(project, make_user):
    Foreshadowing.objects.create(project=project, fid="旧/伏笔 1", description="导入的")
    client = member(project, make_user, "editor")
    assert client.get(reverse("world", args=[project.slug])).status_code == 200
    assert client.get(edit_url(project, "旧/伏笔 1")).status_code == 200


def test_the_admin_applies_the_same_rules_to_a_ledger_item(make_user):
    """A staff owner adding an item in the admin gets the web page's id and range checks."""
    from django.test import Client
    from django.urls import reverse

    from projects.models import Foreshadowing
    from projects.sample_project import sample_project_create

    owner = make_user("staff-owner")
    project = sample_project_create(owner=owner, slug="ledger")
    client = Client()
    client.force_login(owner)
    from tests.test_admin import form_post_data

    url = reverse("admin:projects_foreshadowing_add")
    base = form_post_data(client.get(url), project=project.pk, description="第七盏灯", scope="short")
    for fid, start, end in (("has space", "", ""), ("F-009", "9", "3"), ("F-009", "3", "")):
        response = client.post(url, {**base, "fid": fid, "target_resolve_start": start, "target_resolve_end": end})
        assert response.status_code == 200, fid
    assert not Foreshadowing.objects.filter(project=project, fid__in=["has space", "F-009"]).exists()
    ok = client.post(url, {**base, "fid": "F-009", "target_resolve_start": "3", "target_resolve_end": "9"})
    assert ok.status_code == 302, ok.context["adminform"].form.errors if ok.context else ""
