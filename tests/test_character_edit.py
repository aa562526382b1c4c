"""Editing a character on the web, as a writer does: fields and one row per contract (no JSON box
unless one wants it), the same validation, version check and history as the admin."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from django.test import Client
from django.urls import reverse

from projects.models import Character
from projects.sample_project import sample_project_create
from tests.conftest import member_client as member

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    return sample_project_create(owner=make_user("owner", staff=False))




def edit_url(project, slug: str = "lin-feng") -> str:
    return reverse("character-edit", args=[project.slug, slug])


def post_data(response, **changes: Any) -> dict[str, str]:
    """What the browser posts for the page as rendered, with ``changes`` typed in (``contracts-0-rule``…)."""
    data: dict[str, str] = {}
    for form in [response.context["form"], response.context["rows"].management_form, *response.context["rows"]]:
        for bound in form:
            if bound.field.disabled:
                continue
            value = bound.value()
            if isinstance(bound.field.widget, forms.CheckboxInput):
                if value:
                    data[bound.html_name] = "on"
                continue
            data[bound.html_name] = "" if value is None else str(value)
    data.update({k: str(v) for k, v in changes.items()})
    return data


def test_an_editor_changes_a_contract_adds_one_and_the_rest_is_kept(project, make_user):
    Character.objects.filter(project=project, slug="lin-feng").update(contracts=[
        {"id": "C-LIN-FENG-001", "type": "personality", "rule": "遇事先怀疑", "valid_from_chapter": 1,
         "valid_until": None, "exceptions": [], "update_requires": {"kind": "event"}, "note": "作者备注"}])
    character = Character.objects.get(project=project, slug="lin-feng")
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    assert page.status_code == 200
    assert "C-LIN-FENG-001" in page.content.decode()

    response = client.post(edit_url(project), post_data(
        page, display_name="林枫", **{"contracts-0-rule": "遇事先怀疑，再行动",
                                      "contracts-0-exceptions": "醉酒时\n重伤时",
                                      "contracts-1-id": "C-LIN-FENG-002", "contracts-1-type": "speech",
                                      "contracts-1-rule": "说话简短", "contracts-1-valid_from_chapter": "3"}))

    assert response.status_code == 302
    after = Character.objects.get(pk=character.pk)
    assert after.contracts == [
        {"id": "C-LIN-FENG-001", "type": "personality", "rule": "遇事先怀疑，再行动", "valid_from_chapter": 1,
         "valid_until": None, "exceptions": ["醉酒时", "重伤时"], "update_requires": {"kind": "event"},
         "note": "作者备注"},
        {"id": "C-LIN-FENG-002", "type": "speech", "rule": "说话简短", "valid_from_chapter": 3}]
    assert after.version == character.version + 1
    assert after.history.first().history_user.username == "editor"
    assert "遇事先怀疑，再行动" in client.get(response.url).content.decode()  # shown on the character's page


def test_a_contract_is_removed_with_its_box(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    client.post(edit_url(project), post_data(page, **{"contracts-0-DELETE": "on"}))
    assert Character.objects.get(project=project, slug="lin-feng").contracts == []


def test_a_malformed_contract_id_is_a_form_error_and_nothing_is_saved(project, make_user):
    before = Character.objects.get(project=project, slug="lin-feng")
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    response = client.post(edit_url(project), post_data(page, **{"contracts-0-id": "not an id"}))
    assert response.status_code == 200
    assert "C-LIN-FENG-001" in response.content.decode() or "capitals" in response.content.decode()
    assert response.context["rows"][0].errors
    assert Character.objects.get(pk=before.pk).contracts == before.contracts


def test_a_save_over_someone_elses_is_refused(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    first = client.post(edit_url(project), post_data(page, display_name="甲"))
    assert first.status_code == 302
    second = client.post(edit_url(project), post_data(page, display_name="乙"), follow=True)
    assert "nothing was saved" in second.content.decode() or "没有保存" in second.content.decode()
    assert Character.objects.get(project=project, slug="lin-feng").display_name == "甲"


def test_the_advanced_json_replaces_the_rows_only_when_changed(project, make_user):
    client = member(project, make_user, "editor")
    page = client.get(edit_url(project))
    stored = Character.objects.get(project=project, slug="lin-feng").contracts
    # unchanged JSON (as a browser sends it, CRLF) and an edited row: the row wins
    data = post_data(page, **{"contracts-0-rule": "新规则"})
    data["contracts_json"] = json.dumps(stored, ensure_ascii=False, indent=2).replace("\n", "\r\n")
    client.post(edit_url(project), data)
    assert Character.objects.get(project=project, slug="lin-feng").contracts[0]["rule"] == "新规则"

    page = client.get(edit_url(project))
    replaced = [{"id": "C-LIN-FENG-009", "type": "capability", "rule": "会游泳"}]
    client.post(edit_url(project), post_data(page, contracts_json=json.dumps(replaced, ensure_ascii=False)))
    assert Character.objects.get(project=project, slug="lin-feng").contracts == replaced

    page = client.get(edit_url(project))
    bad = client.post(edit_url(project), post_data(page, contracts_json='[{"id": "x"'))
    assert bad.status_code == 200 and "JSON" in bad.content.decode()
    assert Character.objects.get(project=project, slug="lin-feng").contracts == replaced


def test_a_new_character_is_created_and_a_taken_id_refused(project, make_user):
    client = member(project, make_user, "editor")
    url = reverse("character-new", args=[project.slug])
    page = client.get(url)
    response = client.post(url, post_data(page, slug="su-wan", display_name="苏婉", profile="渡口少女。",
                                          **{"contracts-0-id": "C-SU-WAN-001", "contracts-0-type": "speech",
                                             "contracts-0-rule": "说话轻声"}))
    assert response.status_code == 302
    created = Character.objects.get(project=project, slug="su-wan")
    assert (created.display_name, created.version, created.contracts) == (
        "苏婉", 1, [{"id": "C-SU-WAN-001", "type": "speech", "rule": "说话轻声"}])

    again = client.post(url, post_data(client.get(url), slug="su-wan", display_name="另一个"))
    assert again.status_code == 200
    assert Character.objects.filter(project=project, slug="su-wan").count() == 1


@pytest.mark.parametrize(("role", "status"), [("viewer", 403), ("reviewer", 403)])
def test_readers_cannot_edit(project, make_user, role, status):
    client = member(project, make_user, role)
    assert client.get(edit_url(project)).status_code == status
    assert client.post(edit_url(project), {"display_name": "X"}).status_code == status
    assert Character.objects.get(project=project, slug="lin-feng").display_name == "林枫"


def test_strangers_get_a_404(project, make_user):
    client = Client()
    client.force_login(make_user("stranger", staff=False))
    assert client.get(edit_url(project)).status_code == 404
    assert member(project, make_user, "editor").get(edit_url(project, "nobody")).status_code == 404


@pytest.mark.parametrize(("language", "heading"), [(None, "## 秘密"), ("en", "## Secrets")])
def test_a_new_profile_starts_with_the_sections_the_writer_reads(project, make_user, language, heading):
    client = member(project, make_user, language=language)
    page = client.get(reverse("character-new", args=[project.slug]))
    assert page.status_code == 200
    assert heading in page.context["form"]["profile"].value()
    assert page.context["form"].fields["profile"].help_text  # how sections reach the writer
