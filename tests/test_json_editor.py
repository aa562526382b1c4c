"""The admin's JSON editors (django-jsonform): every schema they draw is one the editor accepts, a
save that changed nothing stores exactly what was there, and empty or odd posts are form errors,
never a 500. The same forms in a real browser: tests/test_admin_browser.py."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from projects.json_editor import editor_schema, fits_editor, merge_editor_output
from projects.json_fields import SchemaFormField, SchemaJSONField
from projects.models import Character, ChapterContract, Project, Volume
from projects.sample_project import sample_project_create

FORM_EDITED = sorted(
    {(f.model.__name__, f.name, f.schema_name) for m in apps.get_models() for f in m._meta.fields
     if isinstance(f, SchemaJSONField) and f.editor == "form" and not m.__name__.startswith("Historical")}
)


# --- What react-json-form accepts (its schema check, react-json-form.js `validateSchema`) ---------


def _kind(node: dict[str, Any]) -> str:
    if "const" in node:
        return type(node["const"]).__name__
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    kind = {"list": "array", "dict": "object"}.get(kind, kind)
    if kind:
        return kind
    for key, name in (("properties", "object"), ("keys", "object"), ("items", "array"), ("allOf", "allOf"),
                      ("oneOf", "oneOf"), ("anyOf", "anyOf")):
        if key in node:
            return name
    return "string"


def _object_problem(node: dict[str, Any]) -> str | None:
    if not any(k in node for k in ("keys", "properties", "oneOf", "anyOf", "allOf")):
        return "object without properties"
    for name, sub in (node.get("properties") or node.get("keys") or {}).items():
        if not isinstance(sub, dict):
            return f"{name}: not an object"
        kind = sub.get("type")
        if kind:
            problem = _problem(sub) if _kind(sub) in ("object", "array") else None
        elif any(k in sub for k in ("$ref", "oneOf", "anyOf", "allOf", "const")):
            problem = _branches_problem(sub)
        else:
            problem = f"{name}: no type"
        if problem:
            return f"{name}: {problem}"
    extra = node.get("additionalProperties")
    if extra is not None and not isinstance(extra, (bool, dict)):
        return "additionalProperties must be a boolean or an object"
    if isinstance(extra, dict) and _kind(extra) in ("object", "array"):
        return _problem(extra)
    return _branches_problem(node)


def _array_problem(node: dict[str, Any]) -> str | None:
    items = node.get("items")
    if not isinstance(items, dict):
        return "array without items"
    if items.get("type"):
        return _problem(items) if _kind(items) in ("object", "array") else None
    if not any(k in items for k in ("$ref", "oneOf", "anyOf", "const")):
        return "array items without a type"
    return _branches_problem(items)


def _branches_problem(node: dict[str, Any]) -> str | None:
    for key in ("oneOf", "anyOf", "allOf"):
        if key not in node:
            continue
        if not isinstance(node[key], list) or not node[key]:
            return f"{key} must be a non-empty list"
        for branch in node[key]:
            if _kind(branch) == "null":
                return f"{key} has a null branch"
            if _kind(branch) in ("object", "array") and (problem := _problem(branch)):
                return problem
    return None


def _problem(node: dict[str, Any]) -> str | None:
    kind = _kind(node)
    if kind == "object":
        return _object_problem(node)
    if kind == "array":
        return _array_problem(node)
    if kind in ("oneOf", "anyOf", "allOf"):
        return _branches_problem(node)
    return "the outermost schema must be an array, an object or a choice"


@pytest.mark.parametrize(("model", "field", "schema_name"), FORM_EDITED, ids=lambda v: str(v))
def test_every_form_edited_schema_is_one_the_editor_accepts(model, field, schema_name):
    assert _problem(editor_schema(schema_name)) is None


def test_the_check_itself_refuses_what_the_editor_refused():
    # the three errors users met: an array without items, an object without properties, a key without type
    assert _problem({"type": "array"}) == "array without items"
    assert _problem({"type": "object"}) == "object without properties"
    assert "no type" in _problem({"type": "object", "properties": {"frequency": {}}})


# --- What a save stores ---------------------------------------------------------------------------


def test_placeholders_the_editor_adds_are_not_stored():
    initial = [{"id": "C-LIN-001", "type": "personality", "rule": "遇事先怀疑"}]
    posted = [{"id": "C-LIN-001", "type": "personality", "rule": "遇事先怀疑", "valid_from_chapter": None,
               "valid_until": None, "exceptions": [], "update_requires": ""}]
    assert merge_editor_output("CHARACTER_CONTRACTS", posted, initial) == initial


def test_null_values_keep_their_spelling_and_cleared_numbers_are_null():
    initial = {"source_type": "original", "reference_author": None, "dialogue_ratio": 0.3,
               "emotional_volatility": None}
    posted = {"source_type": "original", "reference_author": "", "dialogue_ratio": "",
              "emotional_volatility": "", "forbidden_words": [], "paragraph_style": {}}
    assert merge_editor_output("STYLE_PROFILE", posted, initial) == {
        "source_type": "original", "reference_author": None, "dialogue_ratio": None, "emotional_volatility": None}


def test_what_a_person_typed_is_kept():
    initial = [{"id": "C-LIN-001", "type": "personality", "rule": "遇事先怀疑"}]
    posted = [{"id": "C-LIN-001", "type": "personality", "rule": "遇事先怀疑", "valid_until": 12,
               "exceptions": ["醉酒时"]},
              {"id": "C-LIN-002", "type": "speech", "rule": "说话简短", "valid_until": None, "exceptions": [""]}]
    assert merge_editor_output("CHARACTER_CONTRACTS", posted, initial) == [
        {"id": "C-LIN-001", "type": "personality", "rule": "遇事先怀疑", "valid_until": 12, "exceptions": ["醉酒时"]},
        {"id": "C-LIN-002", "type": "speech", "rule": "说话简短"}]


def test_required_keys_stay_even_when_blank_so_the_error_names_them():
    merged = merge_editor_output("CHARACTER_CONTRACTS", [{"id": "C-LIN-9", "type": "", "rule": ""}], [])
    assert merged == [{"id": "C-LIN-9", "type": None, "rule": ""}]


def test_an_item_added_and_left_blank_is_nothing():
    assert merge_editor_output("CHARACTER_CONTRACTS", [{"id": "", "type": "", "rule": ""}], []) == []


def test_a_blank_nullable_field_that_was_empty_stays_empty():
    posted = {"active": None, "detected_chapter": None, "window": [None, None], "drifts": []}
    assert merge_editor_output("STYLE_DRIFT", posted, None) is None


def test_values_the_form_cannot_show_are_edited_as_json():
    assert fits_editor("CHARACTER_CONTRACTS", [{"id": "C-A-1", "type": "speech", "rule": "r",
                                                "update_requires": "剧情"}])
    # a free-form value holding a list, and a free-form object holding an object: shown as JSON text
    assert not fits_editor("CHARACTER_CONTRACTS", [{"id": "C-A-1", "type": "speech", "rule": "r",
                                                    "update_requires": ["剧情", "作者"]}])
    assert not fits_editor("STYLE_PROFILE", {"paragraph_style": {"nested": {"a": 1}}})
    assert fits_editor("STYLE_PROFILE", {"_comment": {"kept": "but not drawn"}})  # undeclared keys are kept


# --- Through the admin, as a browser posts ---------------------------------------------------------


@pytest.fixture
def owner(make_user):
    return make_user("alice")


@pytest.fixture
def project(owner):
    return sample_project_create(owner=owner, slug="alpha")


@pytest.fixture
def client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def _change_url(obj) -> str:
    return reverse(f"admin:projects_{obj._meta.model_name}_change", args=[obj.pk])


def _post_data(response, **overrides: Any) -> dict[str, str]:
    from tests.test_admin import form_post_data

    return form_post_data(response, **overrides)


@pytest.mark.django_db
@pytest.mark.parametrize("posted", ["", "   ", "null"])
def test_an_empty_contracts_post_stores_no_contracts_and_is_no_500(client, project, posted):
    character = project.characters.get(slug="lin-feng")
    data = _post_data(client.get(_change_url(character)))
    data["contracts"] = posted

    response = client.post(_change_url(character), data)

    assert response.status_code == 302
    character.refresh_from_db()
    assert character.contracts == []


@pytest.mark.django_db
def test_an_empty_contract_is_a_form_error(client, project):
    contract = project.chapter_contracts.first()
    data = _post_data(client.get(_change_url(contract)))
    data["data"] = ""

    response = client.post(_change_url(contract), data)

    assert response.status_code == 200
    assert "data" in response.context["adminform"].form.errors
    assert ChapterContract.objects.get(pk=contract.pk).data == contract.data


@pytest.mark.django_db
@pytest.mark.parametrize("posted", ["{", '"text"', "[1, 2", "[" * 100_000 + "]" * 100_000, "\x00"])
def test_malformed_json_is_a_form_error(client, project, posted):
    character = project.characters.get(slug="lin-feng")
    data = _post_data(client.get(_change_url(character)))
    data["contracts"] = posted

    response = client.post(_change_url(character), data)

    assert response.status_code == 200
    assert "contracts" in response.context["adminform"].form.errors
    character.refresh_from_db()
    assert character.contracts == project.characters.get(slug="lin-feng").contracts


@pytest.mark.django_db
def test_saving_the_project_untouched_changes_none_of_its_json(client, project):
    before = Project.objects.get(pk=project.pk)
    response = client.get(_change_url(project))
    data = _post_data(response)
    # what the editor posts for a style drift that was null and a profile it filled with placeholders
    data["style_drift"] = json.dumps({"active": None, "detected_chapter": None, "window": [None, None],
                                      "drifts": [], "injected_to": [], "created_at": ""})
    placeholders = {"reference_author": "", "forbidden_words": [], "dialogue_ratio": None, "paragraph_style": {},
                    "emotional_volatility": "", "style_exemplars": []}
    absent = {k: v for k, v in placeholders.items() if k not in before.style_profile}
    assert absent
    data["style_profile"] = json.dumps({**before.style_profile, **absent})

    response = client.post(_change_url(project), data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    after = Project.objects.get(pk=project.pk)
    for name in ("style_profile", "ai_blacklist", "style_drift", "storyline_spec", "storylines_meta",
                 "gate_settings", "stage_models"):
        assert getattr(after, name) == getattr(before, name), name


@pytest.mark.django_db
def test_a_value_the_editor_cannot_show_is_a_json_textarea_and_saves(client, project):
    volume = project.volumes.get(number=1)
    odd = {**volume.storyline_schedule, "interleaving_pattern": {"strategy": {"kind": "alternate"}}}
    Volume.objects.filter(pk=volume.pk).update(storyline_schedule=odd)

    response = client.get(_change_url(volume))

    field = response.context["adminform"].form.fields["storyline_schedule"]
    assert isinstance(field, SchemaFormField) and field.raw
    assert isinstance(field.widget, forms.Textarea)
    assert "form editor cannot show" in response.content.decode()
    response = client.post(_change_url(volume), _post_data(response))
    assert response.status_code == 302
    assert Volume.objects.get(pk=volume.pk).storyline_schedule == odd


@pytest.mark.django_db
def test_schema_errors_are_placed_next_to_the_editor_field(client, project):
    character = project.characters.get(slug="lin-feng")
    data = _post_data(client.get(_change_url(character)))
    data["contracts"] = json.dumps([{"id": "C-LIN-FENG-001", "type": "personality", "rule": ""}])

    response = client.post(_change_url(character), data)

    assert response.status_code == 200
    widget = response.context["adminform"].form.fields["contracts"].widget
    assert "0§rule" in widget.error_map
    assert Character.objects.get(pk=character.pk).contracts == character.contracts


def test_every_admin_form_with_a_json_editor_starts_from_its_value():
    from projects.json_fields import SchemaJSONFormMixin

    for model, model_admin in admin.site._registry.items():
        if any(isinstance(f, SchemaJSONField) and f.editor == "form" for f in model._meta.fields):
            assert issubclass(model_admin.form, SchemaJSONFormMixin), model.__name__
