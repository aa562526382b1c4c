"""Editing a chapter contract on the web: its fields as a form (objectives one row each, states as
``who.what = value`` lines), keys the form does not show kept, the version check of every edit."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from django.urls import reverse

from projects.models import ChapterContract
from projects.sample_project import sample_project_create
from tests.conftest import member_client as editor

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    project = sample_project_create(owner=make_user("owner", staff=False))
    contract = project.chapter_contracts.get(chapter=2)
    ChapterContract.objects.filter(pk=contract.pk).update(data={
        **contract.data, "storyline_context": {"last_chapter_summary": "林枫离开雪原", "chapters_since_last": 0},
        "x_author_note": "保留"})
    return project




def url(project, chapter: int = 2) -> str:
    return reverse("contract-edit", args=[project.slug, chapter])


def post_data(response, **changes: Any) -> dict:
    data: dict = {}
    for form in [response.context["form"], response.context["rows"].management_form, *response.context["rows"]]:
        for bound in form:
            value = bound.value()
            if isinstance(bound.field.widget, forms.CheckboxInput):
                if value:
                    data[bound.html_name] = "on"
            elif isinstance(bound.field, forms.MultipleChoiceField):
                data[bound.html_name] = list(value or [])
            else:
                data[bound.html_name] = "" if value is None else str(value)
    data.update(changes)
    return data


def test_a_writer_edits_the_objectives_and_the_states_and_the_rest_is_kept(project, make_user):
    client = editor(project, make_user)
    page = client.get(url(project))
    assert page.status_code == 200
    assert "lin-feng.location = 北境雪原" in page.content.decode()

    response = client.post(url(project), post_data(
        page, **{"objectives-0-description": "林枫在密信里读到星火宗的暗号",
                 "objectives-1-id": "OBJ-2-2", "objectives-1-type": "character_development",
                 "objectives-1-description": "林枫第一次违背师命",
                 "states_after": "lin-feng.location = 幽暗森林\nlin-feng.wounded = true",
                 "foreshadowing": "ancient_prophecy = advanced",
                 "acceptance_criteria": "密信的内容不能全部揭开\n林枫的怀疑要有理由"}))

    assert response.status_code == 302
    data = ChapterContract.objects.get(project=project, chapter=2).data
    assert data["objectives"][0]["description"] == "林枫在密信里读到星火宗的暗号"
    assert data["objectives"][1] == {"id": "OBJ-2-2", "type": "character_development", "required": False,
                                     "description": "林枫第一次违背师命"}
    assert data["postconditions"]["state_changes"] == {"lin-feng": {"location": "幽暗森林", "wounded": True}}
    assert data["postconditions"]["foreshadowing_updates"] == {"ancient_prophecy": "advanced"}
    assert data["acceptance_criteria"] == ["密信的内容不能全部揭开", "林枫的怀疑要有理由"]
    assert data["storyline_context"] == {"last_chapter_summary": "林枫离开雪原", "chapters_since_last": 0}
    assert data["x_author_note"] == "保留"
    assert data["chapter"] == 2


@pytest.mark.parametrize(("field", "value"), [
    ("states_after", "lin-feng location 幽暗森林"),
    ("foreshadowing", "ancient_prophecy = forgotten"),
])
def test_a_malformed_line_is_a_form_error_naming_it(project, make_user, field, value):
    client = editor(project, make_user)
    before = ChapterContract.objects.get(project=project, chapter=2).data
    response = client.post(url(project), post_data(client.get(url(project)), **{field: value}))
    assert response.status_code == 200
    assert "1" in str(response.context["form"].errors[field])
    assert ChapterContract.objects.get(project=project, chapter=2).data == before


def test_a_contract_without_a_required_objective_is_refused(project, make_user):
    client = editor(project, make_user)
    page = client.get(url(project))
    data = post_data(page)
    data.pop("objectives-0-required", None)
    response = client.post(url(project), data)
    assert response.status_code == 200 and response.context["form"].non_field_errors()


def test_the_json_replaces_the_form_only_when_changed_and_a_stale_save_is_refused(project, make_user):
    client = editor(project, make_user)
    page = client.get(url(project))
    stored = ChapterContract.objects.get(project=project, chapter=2)
    edited = {**stored.data, "excitement_type": "reveal"}
    assert client.post(url(project),
                       post_data(page, data_json=json.dumps(edited, ensure_ascii=False))).status_code == 302
    assert ChapterContract.objects.get(pk=stored.pk).data["excitement_type"] == "reveal"

    stale = client.post(url(project), post_data(page, excitement_type="twist"), follow=True)  # the old page
    assert ChapterContract.objects.get(pk=stored.pk).data["excitement_type"] == "reveal"
    assert "nothing was saved" in stale.content.decode() or "没有保存" in stale.content.decode()


def test_the_list_shows_the_contracts_and_readers_cannot_edit(project, make_user):
    viewer = editor(project, make_user, "viewer")
    page = viewer.get(reverse("contract-list", args=[project.slug]))
    assert page.status_code == 200 and "Chapter 2" in page.content.decode() or "第 2 章" in page.content.decode()
    assert viewer.get(url(project)).status_code == 403
    assert editor(project, make_user).get(url(project, 99)).status_code == 404


def test_the_empty_extra_row_as_a_browser_posts_it_is_ignored(project, make_user):
    """A browser posts the extra row's selects and checkboxes as they are: blank means unused."""
    client = editor(project, make_user)
    page = client.get(url(project))
    data = post_data(page, excitement_type="twist")
    data["objectives-1-type"] = ""  # what the blank first option of the extra row posts
    response = client.post(url(project), data)
    assert response.status_code == 302
    assert len(ChapterContract.objects.get(project=project, chapter=2).data["objectives"]) == 1
