"""The admin asks for the same role as the API, field by field, and shows nothing of other projects:
the project's settings are its owner's (an editor may still change its style), and the list
filters offer only the user's projects and their rows."""
from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.admin.filters import RelatedFieldListFilter

from projects.models import Project
from projects.services.projects import PROJECT_SETTINGS_FIELDS as SETTINGS_FIELDS
from tests.admin_fixtures import ADMIN_MODELS, login_client
from tests.test_admin import admin_url, change_url, fresh, valid_change_data

# A new value for each owner-only field of the project form, as a browser posts it.
NEW_SETTINGS: dict[str, Any] = {
    "title": "改过的书名",
    "slug": "renamed",
    "brief": "改过的简介",
    "genre": "wuxia",
    "target_platform": "fanqie",
    "genre_drive_type": "suspense",
    "autopilot_enabled": True,
    "autopilot_chapters_per_night": 50,
    "autopilot_cost_cap_usd": Decimal("999999.00"),
    "manual_cost_cap_usd": Decimal("999999.00"),
    "gate_settings": {"pass_threshold": 1.0},
    "lint_settings": {"lints": {"em_dash_max": 5}},
    "stage_models": {"draft": "very-expensive-model"},
}


PROJECT_SETTINGS_FIELDS = sorted({"slug", *SETTINGS_FIELDS})


def test_every_owner_only_field_has_a_case():
    assert set(NEW_SETTINGS) == set(PROJECT_SETTINGS_FIELDS)


def _project_post(owner_client, project: Project, field: str, value: Any) -> dict[str, str]:
    data = valid_change_data(owner_client, project)
    if field == "autopilot_enabled":
        data[field] = "on"
    else:
        data.update(valid_change_data(owner_client, project, **{field: value}))
    return data


@pytest.mark.parametrize("field", PROJECT_SETTINGS_FIELDS)
@pytest.mark.parametrize("role", ["owner", "editor"])
def test_project_settings_change_in_the_admin_only_for_the_owner(novels, owner_client, field, role):
    project = fresh(novels.a[Project])
    data = _project_post(owner_client, project, field, NEW_SETTINGS[field])

    response = login_client(novels.users[role]).post(change_url(project), data)

    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    after = fresh(project)
    if role == "owner":
        assert getattr(after, field) == NEW_SETTINGS[field]
    else:
        assert getattr(after, field) == getattr(project, field)


def test_editor_sees_the_settings_read_only_and_may_change_the_style(novels, owner_client):
    project = fresh(novels.a[Project])
    editor = login_client(novels.users["editor"])
    page = editor.get(change_url(project))
    form_fields = set(page.context["adminform"].form.fields)
    assert form_fields.isdisjoint(PROJECT_SETTINGS_FIELDS)
    assert {"style_profile", "ai_blacklist", "storyline_spec"} <= form_fields

    profile = {**project.style_profile, "dialogue_ratio": 0.5}
    response = editor.post(change_url(project), valid_change_data(editor, project, style_profile=profile))

    assert response.status_code == 302
    assert fresh(project).style_profile == profile


def _filter_choices(response) -> list[tuple[str, str]]:
    """(parameter, label) of every choice of every list filter on a changelist."""
    choices = []
    for spec in response.context["cl"].filter_specs:
        for choice in spec.choices(response.context["cl"]):
            choices.append((choice.get("query_string", ""), str(choice.get("display", ""))))
    return choices


@pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m._meta.label)
def test_list_filters_offer_only_the_users_own_projects_and_rows(novels, owner_client, model):
    response = owner_client.get(admin_url(model, "changelist"))

    assert response.status_code == 200
    b = novels.b[Project]
    b_volume_pk = b.volumes.get(number=1).pk
    for query, label in _filter_choices(response):
        assert "beta" not in label
        assert f"project__id__exact={b.pk}" not in query and f"project__exact={b.pk}" not in query
        assert f"volume__id__exact={b_volume_pk}" not in query
    assert b.slug not in response.content.decode().replace("alphabet", "")


def test_every_relation_filter_is_scoped():
    for model in ADMIN_MODELS:
        for entry in admin.site._registry[model].get_list_filter(request=None):
            if isinstance(entry, str) and model._meta.get_field(entry).is_relation:
                pytest.fail(f"{model.__name__}.{entry} lists every project's rows")
            if isinstance(entry, tuple):
                assert entry[1] is not RelatedFieldListFilter
