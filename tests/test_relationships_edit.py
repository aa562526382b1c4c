"""Editing the relationships on the web (rows of character, towards, number), and the graph the
world page draws from them: the same validation, project lock, history and refusal of a stale save
as every story edit (#16)."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django import forms
from django.test import Client
from django.urls import reverse

from projects.models import Character, Project, Role
from projects.relationship_graph import relationship_graph_svg
from projects.sample_project import sample_project_create
from tests.conftest import member_client as member

pytestmark = pytest.mark.django_db

SAMPLE = {"lin-feng": {"zhao-ming": -30, "chen-lao": 50}}


@pytest.fixture
def project(make_user):
    return sample_project_create(owner=make_user("owner", staff=False))




def url(project) -> str:
    return reverse("relationships-edit", args=[project.slug])


def post_data(response, **changes: Any) -> dict[str, str]:
    """What the browser posts for the page as rendered, with ``changes`` typed in."""
    data: dict[str, str] = {}
    context = response.context
    forms_ = [context["form"]]
    if context["offer_rows"]:
        forms_ += [context["rows"].management_form, *context["rows"]]
    for form in forms_:
        for bound in form:
            value = bound.value()
            if isinstance(bound.field.widget, forms.CheckboxInput):
                if value:
                    data[bound.html_name] = "on"
                continue
            data[bound.html_name] = "" if value is None else str(value)
    data.update({k: str(v) for k, v in changes.items()})
    return data


def row_of(page, who: str, whom: str) -> int:
    """The index of the row that shows who → whom."""
    return next(i for i, row in enumerate(page.context["rows"]) if (row.initial.get("who"), row.initial.get("whom"))
                == (who, whom))


def stored(project) -> Any:
    return Project.objects.get(pk=project.pk).relationships


def test_an_editor_changes_a_number_adds_a_row_and_removes_one(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(url(project))
    assert page.status_code == 200
    body = page.content.decode()
    assert "林枫" in body and "赵明" in body  # chosen by display name
    zhao, chen = row_of(page, "lin-feng", "zhao-ming"), row_of(page, "lin-feng", "chen-lao")
    response = client.post(url(project), post_data(page, **{
        f"rel-{zhao}-value": "-60", f"rel-{chen}-DELETE": "on",
        "rel-2-who": "zhao-ming", "rel-2-whom": "lin-feng", "rel-2-value": "-80"}))
    assert response.status_code == 302 and response.url.endswith("#relationships")
    assert stored(project) == {"lin-feng": {"zhao-ming": -60}, "zhao-ming": {"lin-feng": -80}}
    record = Project.objects.get(pk=project.pk).history.first()
    assert record.history_user.username == "editor" and record.relationships == stored(project)


@pytest.mark.parametrize(("changes", "why"), [
    ({"rel-0-value": "101"}, "out of range"),
    ({"rel-0-value": "-1e9"}, "out of range"),
    ({"rel-0-value": "nan"}, "not a number"),
    ({"rel-0-value": "abc"}, "not a number"),
    ({"rel-0-whom": "no-such-character"}, "unknown character"),
    ({"rel-0-who": "<script>alert(1)</script>"}, "unknown character"),
    ({"rel-0-whom": "lin-feng"}, "towards themself"),
    ({"rel-1-whom": "zhao-ming"}, "the same pair twice"),
    ({"base_digest": ""}, "no base"),
    ({"raw_json": '{"a": '}, "malformed JSON"),
    ({"raw_json": '"just a string"'}, "not an object or an array"),
    ({"raw_json": '{"lin-feng": {"zhao-ming": 500}}'}, "out of range in JSON"),
])
def test_malformed_and_hostile_rows_are_refused_and_nothing_is_saved(project, make_user, changes, why):
    client = member(project, make_user, "editor")
    page = client.get(url(project))
    response = client.post(url(project), post_data(page, **changes))
    assert response.status_code == 200, why
    assert "<script>alert(1)</script>" not in response.content.decode()
    assert stored(project) == SAMPLE, why


def test_a_stale_save_is_refused_with_a_message(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(url(project))
    zhao = row_of(page, "lin-feng", "zhao-ming")
    first = client.post(url(project), post_data(page, **{f"rel-{zhao}-value": "10"}))
    assert first.status_code == 302
    second = client.post(url(project), post_data(page, **{f"rel-{1 - zhao}-value": "99"}), follow=True)
    body = second.content.decode()
    assert "nothing was saved" in body or "没有保存" in body
    assert stored(project) == {"lin-feng": {"zhao-ming": 10, "chen-lao": 50}}


def test_the_advanced_json_replaces_the_rows_only_when_changed(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(url(project))
    data = post_data(page, **{f"rel-{row_of(page, 'lin-feng', 'zhao-ming')}-value": "5"})
    data["raw_json"] = data["raw_json"].replace("\n", "\r\n")  # unchanged, as a browser sends it
    assert client.post(url(project), data).status_code == 302
    assert stored(project)["lin-feng"]["zhao-ming"] == 5
    page = client.get(url(project))
    assert client.post(url(project), post_data(page, raw_json='{"chen-lao": {"lin-feng": 70}}')).status_code == 302
    assert stored(project) == {"chen-lao": {"lin-feng": 70}}


def test_another_shape_is_offered_as_json_only_and_kept_untouched(project, make_user):
    odd = {"lin-feng": [{"to": "zhao-ming", "kind": "rival", "score": -30}], "note": "imported"}
    Project.objects.filter(pk=project.pk).update(relationships=odd)
    client = member(project, make_user, "editor")
    page = client.get(url(project))
    assert page.context["offer_rows"] is False
    assert 'name="rel-0-who"' not in page.content.decode()
    assert client.post(url(project), post_data(page)).status_code == 302  # saved without a change
    assert stored(project) == odd
    world = client.get(reverse("world", args=[project.slug])).content.decode()
    assert "relationship-graph" not in world  # no graph for a shape it cannot draw


@pytest.mark.parametrize(("role", "status"), [("viewer", 403), ("reviewer", 403)])
def test_a_member_who_may_not_edit_is_forbidden(project, make_user, role, status):
    client = member(project, make_user, role)
    page_for_owner = Client()
    page_for_owner.force_login(project.memberships.get(role=Role.OWNER).user)
    data = post_data(page_for_owner.get(url(project)), **{"rel-0-value": "100"})
    assert client.get(url(project)).status_code == status
    assert client.post(url(project), data).status_code == status
    assert stored(project) == SAMPLE


def test_a_stranger_gets_404(project, make_user):
    stranger = make_user("stranger", staff=False)
    client = Client()
    client.force_login(stranger)
    assert client.post(url(project), {"rel-0-value": "1"}).status_code == 404
    assert stored(project) == SAMPLE


def test_the_graph_has_a_node_per_character_and_an_edge_per_relationship(project, make_user):
    Character.objects.filter(project=project, slug="chen-lao").update(display_name='陈老<b>"&')
    Project.objects.filter(pk=project.pk).update(
        relationships={"lin-feng": {"zhao-ming": -30, "chen-lao": 50}, "zhao-ming": {"lin-feng": 0}})
    client = member(project, make_user, "viewer")
    body = client.get(reverse("world", args=[project.slug])).content.decode()
    svg = re.search(r'<svg class="chart relationship-graph".*?</svg>', body, re.S).group(0)
    assert len(re.findall(r'<g class="node"', svg)) == Character.objects.filter(project=project).count() == 3
    assert len(re.findall(r'<path class="edge', svg)) == 3
    assert 'class="edge warm"' in svg and 'class="edge cold"' in svg
    assert "<title>林枫 → 赵明: -30</title>" in svg
    assert "陈老&lt;b&gt;&quot;&amp;" in svg and "陈老<b>" not in svg


def test_the_graph_escapes_ids_without_a_character():
    svg = str(relationship_graph_svg({"<x>": {"y&": 12.5}}, names={}))
    assert "&lt;x&gt;" in svg and "y&amp;" in svg and "<x>" not in svg and ": 12.5</title>" in svg
    assert str(relationship_graph_svg([{"a": 1}], names={"a": "甲"})) == ""
