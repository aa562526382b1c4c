"""Editing a volume's storyline schedule on the web: rows for the active storylines and the
meetings, fields for how they take turns, the plain-id shape the CLI expects kept where nothing was
added, keys the form does not show kept, the version check, and clear errors for bad input."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from django.urls import reverse

from projects.models import Storyline, Volume
from projects.sample_project import sample_project_create
from projects.services.editing import story_object_create
from tests.conftest import member_client as editor

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    project = sample_project_create(owner=make_user("owner", staff=False))
    for slug, name in (("sect-war", "宗门之战"), ("romance", "雪夜情缘")):
        story_object_create(instance=Storyline(project=project, slug=slug, name=name, type="faction_conflict"),
                            editor=None)
    Volume.objects.filter(project=project, number=1).update(storyline_schedule={
        "volume": 1, "active_storylines": ["main-arc"], "x_planner_note": "保留"})
    return project


def url(project, volume: int = 1) -> str:
    return reverse("schedule-edit", args=[project.slug, volume])


def post_data(response, **changes: Any) -> dict:
    data: dict = {}
    context = response.context
    parts = [context["form"], context["active"].management_form, *context["active"],
             context["events"].management_form, *context["events"]]
    for form in parts:
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


def schedule(project) -> dict:
    return Volume.objects.get(project=project, number=1).storyline_schedule


def test_a_writer_adds_a_storyline_a_meeting_and_the_pace(project, make_user):
    client = editor(project, make_user)
    page = client.get(url(project))
    assert page.status_code == 200
    assert "宗门之战 (sect-war)" in page.content.decode()

    response = client.post(url(project), post_data(page, **{
        "volume_theme": "雪原上的第一把火",
        "active-1-storyline_id": "sect-war", "active-1-volume_role": "secondary",
        "active-1-target_chapters": "[5, 12]", "active-1-arc_goal": "星火宗内乱公开",
        "strategy": "主线为主，支线穿插", "primary_max_consecutive": "3",
        "events-0-start": "10", "events-0-end": "12", "events-0-involved_storylines": ["main-arc", "sect-war"],
        "events-0-trigger": "宗门大比", "newly_activated": ["sect-war"], "dormant_storylines": ["romance"]}))

    assert response.status_code == 302
    data = schedule(project)
    assert data["active_storylines"] == [
        "main-arc",  # nothing added to it: still the plain id the CLI validates
        {"storyline_id": "sect-war", "volume_role": "secondary", "target_chapters": [5, 12],
         "arc_goal": "星火宗内乱公开"}]
    assert data["volume_theme"] == "雪原上的第一把火"
    assert data["interleaving_pattern"] == {"strategy": "主线为主，支线穿插", "primary_max_consecutive": 3}
    assert data["convergence_events"] == [{"chapter_range": [10, 12], "involved_storylines": ["main-arc", "sect-war"],
                                           "trigger": "宗门大比"}]
    assert data["newly_activated"] == ["sect-war"] and data["dormant_storylines"] == ["romance"]
    assert data["x_planner_note"] == "保留" and data["volume"] == 1

    # the saved schedule reads back into the same form, and removing a row removes it
    page = client.get(url(project))
    assert page.context["active"].initial[1]["arc_goal"] == "星火宗内乱公开"
    response = client.post(url(project), post_data(page, **{"active-1-DELETE": "on", "events-0-DELETE": "on"}))
    assert response.status_code == 302
    assert schedule(project)["active_storylines"] == ["main-arc"]
    assert schedule(project)["convergence_events"] == []


@pytest.mark.parametrize(("changes", "message"), [
    ({"active-0-DELETE": "on"}, "at least one"),
    ({"active-1-storyline_id": "main-arc"}, "only once"),
    ({"events-0-start": "12", "events-0-end": "10", "events-0-involved_storylines": ["main-arc", "sect-war"]},
     "comes after"),
    ({"events-0-start": "3", "events-0-end": "4", "events-0-involved_storylines": ["main-arc"]}, "two storylines"),
    ({"active-1-storyline_id": "no-such-line"}, "valid choice"),
    ({"primary_max_consecutive": "many"}, "whole number"),
    ({"data_json": "[1, 2"}, "JSON"),
    ({"data_json": "[]"}, "object"),
])
def test_bad_input_is_a_form_error_and_nothing_is_saved(project, make_user, changes, message):
    client = editor(project, make_user, language="en")
    before = schedule(project)
    response = client.post(url(project), post_data(client.get(url(project)), **changes), HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    assert message in response.content.decode()
    assert schedule(project) == before


def test_the_json_replaces_the_form_only_when_changed_and_a_stale_save_is_refused(project, make_user):
    client = editor(project, make_user)
    page = client.get(url(project))
    edited = {**schedule(project), "volume_theme": "从 JSON 改的"}
    assert client.post(url(project),
                       post_data(page, data_json=json.dumps(edited, ensure_ascii=False))).status_code == 302
    assert schedule(project)["volume_theme"] == "从 JSON 改的"

    stale = client.post(url(project), post_data(page, volume_theme="旧页面"), follow=True)
    assert schedule(project)["volume_theme"] == "从 JSON 改的"
    assert "没有保存" in stale.content.decode() or "nothing was saved" in stale.content.decode()


def test_an_imported_schedule_with_objects_and_unknown_ids_reads_and_saves_unchanged(project, make_user):
    imported = {"volume": 1, "active_storylines": [{"storyline_id": "lost-line", "volume_role": "primary",
                                                    "x_extra": 1}],
                "interleaving_pattern": {"strategy": "x", "custom": True},
                "convergence_events": [{"chapter_range": [1, 2], "involved_storylines": ["lost-line", "main-arc"],
                                        "stakes": "高"}],
                "dormant_storylines": [{"storyline_id": "romance"}]}
    Volume.objects.filter(project=project, number=1).update(storyline_schedule=imported)
    client = editor(project, make_user)
    page = client.get(url(project))
    assert client.post(url(project), post_data(page)).status_code == 302
    assert schedule(project) == imported


def test_readers_cannot_edit_and_a_missing_volume_is_404(project, make_user):
    assert editor(project, make_user, "viewer").get(url(project)).status_code == 403
    client = editor(project, make_user)
    assert client.get(url(project, 9)).status_code == 404
    chapter_list = client.get(reverse("chapter-list", args=[project.slug]))
    assert url(project) in chapter_list.content.decode()
