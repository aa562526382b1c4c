"""The admin through real HTTP requests: role scoping, read-only pipeline records, versioned edits,
JSON validation and history.

Project A ("alpha") and project B ("beta") are both the demo novel plus one row of every other
model; the user under test belongs to A only (the ``novels`` fixture, tests/admin_fixtures.py). Roles
decide everything (``projects.permissions``): no test user has a Django model permission.
"""
from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from django import forms
from django.contrib import admin
from django.db import models
from django.test import Client
from django.urls import reverse

from pipeline.models import GateAnswer, GateQuestion, LLMCall, PipelineRun, PromptTemplate, StageRun
from projects.models import (
    ArchivedSummary,
    Chapter,
    ChapterContract,
    ChapterLog,
    ChapterSummary,
    Character,
    Evaluation,
    ExtraFile,
    Foreshadowing,
    ForeshadowingEvent,
    Membership,
    Project,
    ResearchNote,
    Role,
    StateChange,
    StoryFact,
    StoryState,
    Storyline,
    Volume,
    VolumeStateSnapshot,
    WorldDoc,
    WorldRule,
)
from projects.sample_project import sample_project_create
from projects.services.editing import story_object_create, story_object_update
from tests.admin_fixtures import ADMIN_MODELS, login_client, valid_row

# --- What the admin should offer ------------------------------------------------------------------

# Written by the pipeline: people read them in the admin but never add, change or delete them.
PIPELINE_OWNED = {
    ChapterSummary, ArchivedSummary, Evaluation, ChapterLog, StoryState, StateChange, VolumeStateSnapshot,
    PipelineRun, StageRun, LLMCall, GateQuestion, GateAnswer,
}
# Edited by people.
PEOPLE_EDITED = {
    Project, Membership, ResearchNote, WorldDoc, WorldRule, Character, Storyline, Volume, ChapterContract,
    Chapter, Foreshadowing, ExtraFile, PromptTemplate, StoryFact,
}

by_model = pytest.mark.parametrize("model", ADMIN_MODELS, ids=lambda m: m._meta.label)


def admin_url(model: type[models.Model], view: str, *args: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def change_url(obj: models.Model) -> str:
    return admin_url(type(obj), "change", obj.pk)


# --- Turning an admin page into the POST a browser would send -------------------------------------


def _as_post_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def _add_form_fields(data: dict[str, str], form: forms.BaseForm) -> None:
    for bound in form:
        value = bound.value()
        if isinstance(bound.field.widget, forms.MultiWidget):  # split date and time
            for index, part in enumerate(bound.field.widget.decompress(value)):
                data[f"{bound.html_name}_{index}"] = _as_post_value(part)
        elif isinstance(bound.field, forms.BooleanField):
            if value:
                data[bound.html_name] = "on"
        else:
            data[bound.html_name] = _as_post_value(value)


def form_post_data(response, **overrides: Any) -> dict[str, str]:
    """The POST data of an admin add/change page as rendered (main form, inline management forms and
    inline rows), with ``overrides`` applied (dicts and lists become JSON strings)."""
    assert response.status_code == 200, response.status_code
    data: dict[str, str] = {}
    _add_form_fields(data, response.context["adminform"].form)
    inlines = response.context["inline_admin_formsets"] if "inline_admin_formsets" in response.context else []
    for inline in inlines:
        _add_form_fields(data, inline.formset.management_form)
        for form in inline.formset.forms:
            _add_form_fields(data, form)
    data.update({name: _as_post_value(value) for name, value in overrides.items()})
    return data


def has_save_button(response) -> bool:
    return b'name="_save"' in response.content


def assert_redirects_to_admin_index(response) -> None:
    assert response.status_code == 302
    assert response.url == reverse("admin:index")


def assert_redirects_to_login(response) -> None:
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))


def fresh(obj: models.Model) -> models.Model:
    return type(obj)._default_manager.get(pk=obj.pk)


def test_every_admin_model_is_classified_and_has_rows(novels):
    assert set(ADMIN_MODELS) == PIPELINE_OWNED | PEOPLE_EDITED
    assert set(novels.a) == set(ADMIN_MODELS)
    assert all(novels.b_pks[model] for model in ADMIN_MODELS), "project B needs a row of every model"


# --- 1. The owner of A can open every page of every model -----------------------------------------


@by_model
def test_owner_opens_changelist(owner_client, model):
    assert owner_client.get(admin_url(model, "changelist")).status_code == 200


@by_model
def test_owner_opens_change_page_of_own_row(owner_client, novels, model):
    response = owner_client.get(change_url(novels.a[model]))
    assert response.status_code == 200
    assert has_save_button(response) == (model in PEOPLE_EDITED)


@by_model
def test_owner_may_add_people_edited_models_only(owner_client, model):
    response = owner_client.get(admin_url(model, "add"))
    assert response.status_code == (403 if model in PIPELINE_OWNED else 200)


@pytest.mark.parametrize(("model", "inline_model"), [
    (Volume, ChapterContract), (Foreshadowing, ForeshadowingEvent), (PipelineRun, StageRun),
], ids=lambda m: m.__name__)
def test_owner_sees_read_only_inline_rows(owner_client, novels, model, inline_model):
    response = owner_client.get(change_url(novels.a[model]))
    formsets = {inline.formset.model: inline.formset for inline in response.context["inline_admin_formsets"]}
    assert inline_model in formsets, f"{inline_model.__name__} rows are missing from the {model.__name__} page"
    assert len(formsets[inline_model].forms) >= 1


# --- 2. Project B is invisible to A's owner -------------------------------------------------------


@by_model
def test_changelist_hides_other_projects_rows(owner_client, novels, model):
    response = owner_client.get(admin_url(model, "changelist"))
    listed = set(response.context["cl"].queryset.values_list("pk", flat=True))
    shown = {obj.pk for obj in response.context["cl"].result_list}
    assert novels.a[model].pk in listed and novels.a[model].pk in shown
    assert not listed & novels.b_pks[model]
    assert not shown & novels.b_pks[model]


@by_model
def test_change_page_of_other_projects_row_redirects(owner_client, novels, model):
    obj = novels.b[model]
    response = owner_client.get(change_url(obj))
    assert_redirects_to_admin_index(response)
    page = owner_client.get(response.url).content.decode()
    assert str(obj) not in page
    assert "beta" not in page


# --- 3. Roles on project A ------------------------------------------------------------------------

ROLES = ["owner", "editor", "reviewer", "viewer", "other_member", "outsider", "non_staff"]
EDITED_FIELD = {Character: ("display_name", "林枫·改"), Chapter: ("title", "雪原来客·改")}
by_story_model = pytest.mark.parametrize("model", [Character, Chapter], ids=lambda m: m.__name__)
by_role = pytest.mark.parametrize("role", ROLES)


def assert_refused(response, role: str) -> None:
    """How the admin turns away someone outside project A."""
    if role == "other_member":  # may use the admin, but A's rows are not in their queryset
        assert_redirects_to_admin_index(response)
    elif role == "outsider":  # member of no project: no access to the model at all
        assert response.status_code == 403
    else:  # not staff: the admin sends them to log in
        assert_redirects_to_login(response)


def valid_change_data(owner_client: Client, obj: models.Model, **overrides: Any) -> dict[str, str]:
    """What the owner's browser would post for ``obj`` with ``overrides`` typed in."""
    return form_post_data(owner_client.get(change_url(obj)), **overrides)


@by_story_model
@by_role
def test_change_page_by_role(novels, model, role):
    response = login_client(novels.users[role]).get(change_url(novels.a[model]))
    if role in ("owner", "editor"):
        assert response.status_code == 200 and has_save_button(response)
    elif role in ("reviewer", "viewer"):
        assert response.status_code == 200 and not has_save_button(response)
    else:
        assert_refused(response, role)


@by_story_model
@by_role
def test_change_post_by_role(novels, owner_client, model, role):
    obj = fresh(novels.a[model])
    field, new_value = EDITED_FIELD[model]
    data = valid_change_data(owner_client, obj, **{field: new_value})
    assert data["base_version"] == str(obj.version)

    response = login_client(novels.users[role]).post(change_url(obj), data)

    after = fresh(obj)
    if role in ("owner", "editor"):
        assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
        assert getattr(after, field) == new_value
        assert after.version == obj.version + 1
        return
    if role in ("reviewer", "viewer"):
        assert response.status_code == 403
    else:
        assert_refused(response, role)
    assert getattr(after, field) == getattr(obj, field)
    assert after.version == obj.version


def test_reviewer_cannot_add_character(novels):
    client = login_client(novels.users["reviewer"])
    assert client.get(admin_url(Character, "add")).status_code == 403
    data = {"project": novels.a[Project].pk, "slug": "new-one", "display_name": "新人", "status": "active",
            "canon_status": "established", "contracts": "[]", "extra": "{}"}
    assert client.post(admin_url(Character, "add"), data).status_code == 403
    assert not Character.objects.filter(slug="new-one").exists()


def test_viewer_cannot_delete_character(novels):
    client = login_client(novels.users["viewer"])
    character = novels.a[Character]
    url = admin_url(Character, "delete", character.pk)
    assert client.get(url).status_code == 403
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert Character.objects.filter(pk=character.pk).exists()


def test_editor_deletes_character(novels):
    character = novels.a[Character]
    response = login_client(novels.users["editor"]).post(admin_url(Character, "delete", character.pk),
                                                         {"post": "yes"})
    assert response.status_code == 302
    assert not Character.objects.filter(pk=character.pk).exists()


# --- 4. Projects: anyone on the staff may start one, only the owner deletes it --------------------


def add_project_through_admin(client: Client, slug: str) -> Project:
    page = client.get(admin_url(Project, "add"))
    json_fields = {name: "{}" for name in ("style_profile", "ai_blacklist", "storyline_spec", "storylines_meta",
                                           "relationships", "gate_settings", "stage_models")}
    data = form_post_data(page, title="新书", slug=slug, **json_fields)
    response = client.post(admin_url(Project, "add"), data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    return Project.objects.get(slug=slug)


def test_staff_member_adds_project_and_becomes_owner(novels):
    user = novels.users["outsider"]
    project = add_project_through_admin(login_client(user), "new-book")
    assert project.title == "新书"
    assert Membership.objects.get(project=project, user=user).role == Role.OWNER
    assert StoryState.objects.filter(project=project).exists()


def test_editor_cannot_delete_project(novels):
    project = novels.a[Project]
    client = login_client(novels.users["editor"])
    url = admin_url(Project, "delete", project.pk)
    assert client.get(url).status_code == 403
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert Project.objects.filter(pk=project.pk).exists()


def test_owner_deletes_new_project(novels):
    client = login_client(novels.users["outsider"])
    project = add_project_through_admin(client, "short-lived")
    response = client.post(admin_url(Project, "delete", project.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Project.objects.filter(pk=project.pk).exists()


def test_owner_deletes_project_with_pipeline_records(novels):
    """The project's read-only pipeline rows (state, changelog, runs …) go with it."""
    user = novels.users["outsider"]
    project = sample_project_create(owner=user, slug="gamma")
    run = valid_row(PipelineRun, project=project, kind="plan", volume_number=2, status="done")
    valid_row(StageRun, run=run, stage="plan", status="succeeded")
    client = login_client(user)
    url = admin_url(Project, "delete", project.pk)

    confirm = client.get(url)
    assert confirm.status_code == 200 and not confirm.context["perms_lacking"]
    assert client.post(url, {"post": "yes"}).status_code == 302

    assert not Project.objects.filter(pk=project.pk).exists()
    assert not StoryState.objects.filter(project_id=project.pk).exists()
    assert not PipelineRun.objects.filter(pk=run.pk).exists()
    assert Project.objects.filter(pk=novels.a[Project].pk).exists()


# --- 5. and 6. Refused saves: a conflicting edit, invalid JSON ------------------------------------


def test_save_over_someone_elses_edit_is_refused(novels, owner_client):
    character = fresh(novels.a[Character])
    data = valid_change_data(owner_client, character, display_name="我的版本")
    opened = int(data["base_version"])
    story_object_update(obj=character, editor=novels.users["editor"], base_version=opened, display_name="X")

    response = owner_client.post(change_url(character), data)

    assert response.status_code == 200
    assert "Someone else saved" in response.content.decode()
    after = fresh(character)
    assert after.display_name == "X"
    assert after.version == opened + 1


def test_invalid_contracts_json_is_refused_with_its_path(novels, owner_client):
    character = fresh(novels.a[Character])
    bad = [{"id": "bad", "type": "nope", "rule": ""}]
    response = owner_client.post(change_url(character), valid_change_data(owner_client, character, contracts=bad))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "contracts" in errors
    assert "$[0]" in response.content.decode()
    after = fresh(character)
    assert after.contracts == character.contracts
    assert after.version == character.version


# --- 7. and 8. History ----------------------------------------------------------------------------


def history_form_url(obj: models.Model, record) -> str:
    return admin_url(type(obj), "simple_history", obj.pk, record.history_id)


def test_admin_save_is_recorded_with_its_user(novels):
    editor = novels.users["editor"]
    character = fresh(novels.a[Character])
    client = login_client(editor)
    client.post(change_url(character), valid_change_data(login_client(novels.users["owner"]), character,
                                                         display_name="林枫二"))
    record = fresh(character).history.first()
    assert record.display_name == "林枫二"
    assert record.history_user == editor


def test_owner_reads_history_and_reverts_to_an_older_version(novels, owner_client):
    character = fresh(novels.a[Character])
    original_name = character.display_name
    owner_client.post(change_url(character), valid_change_data(owner_client, character, display_name="林枫二"))
    changed = fresh(character)
    assert changed.display_name == "林枫二"

    history_page = owner_client.get(admin_url(Character, "history", character.pk))
    assert history_page.status_code == 200
    assert "林枫二" in history_page.content.decode()

    oldest = changed.history.earliest("history_date")
    form_page = owner_client.get(history_form_url(character, oldest))
    assert form_page.status_code == 200
    response = owner_client.post(history_form_url(character, oldest), form_post_data(form_page))

    assert response.status_code == 302
    reverted = fresh(character)
    assert reverted.display_name == original_name
    assert reverted.version == changed.version + 1
    assert reverted.history.first().history_user == novels.users["owner"]


@pytest.mark.parametrize("role", ["reviewer", "viewer"])
def test_read_only_role_cannot_revert_through_history(novels, owner_client, role):
    character = fresh(novels.a[Character])
    oldest = character.history.earliest("history_date")
    data = form_post_data(owner_client.get(history_form_url(character, oldest)), display_name="偷改")
    client = login_client(novels.users[role])
    assert client.get(admin_url(Character, "history", character.pk)).status_code == 200

    response = client.post(history_form_url(character, oldest), data)

    assert response.status_code == 403
    after = fresh(character)
    assert after.display_name == character.display_name
    assert after.version == character.version


def test_viewer_who_edits_elsewhere_cannot_move_a_row_through_history(novels, owner_client):
    """The revert form offers the projects the user may edit; a viewer of A who owns B must not be
    able to post A's character into B."""
    bob = novels.users["other_member"]
    Membership.objects.create(project=novels.a[Project], user=bob, role=Role.VIEWER)
    character = fresh(novels.a[Character])
    oldest = character.history.earliest("history_date")
    data = form_post_data(owner_client.get(history_form_url(character, oldest)),
                          project=novels.b[Project].pk, slug="stolen", display_name="偷改")

    response = login_client(bob).post(history_form_url(character, oldest), data)

    assert response.status_code == 403
    after = fresh(character)
    assert (after.project_id, after.slug, after.version) == (character.project_id, character.slug, character.version)


@pytest.mark.parametrize(("model", "view"), [
    *((m, v) for m in (Character, Chapter, WorldDoc) for v in ("history", "simple_history")),
    (Project, "history"),  # Django's own history page; projects keep no simple_history versions
], ids=lambda value: getattr(value, "__name__", value))
def test_history_of_another_projects_object_looks_like_a_missing_id(novels, owner_client, model, view):
    """#15 item 8: another project's history page was a 403 where a missing id redirects, which told
    a stranger that the id exists. Both are now the admin's "does not exist" redirect."""
    theirs = novels.b[model]
    missing_pk = 999_999_999
    if view == "history":
        urls = [admin_url(model, view, theirs.pk), admin_url(model, view, missing_pk)]
    else:
        version = theirs.history.first().history_id
        urls = [admin_url(model, view, theirs.pk, version), admin_url(model, view, missing_pk, version)]
    responses = [owner_client.get(url, follow=True) for url in urls]
    for response in responses:
        assert response.redirect_chain == [(reverse("admin:index"), 302)]
        assert str(theirs) not in response.content.decode() and "beta" not in response.content.decode()
    messages = [[str(m).replace(str(theirs.pk), "ID") for m in r.context["messages"]] for r in responses]
    assert messages[0] == [m.replace(str(missing_pk), "ID") for m in messages[1]]


def test_history_of_your_own_object_is_still_shown(novels, owner_client):
    character = novels.a[Character]
    assert owner_client.get(admin_url(Character, "history", character.pk)).status_code == 200


# --- Form classes do not share state between requests ---------------------------------------------


def test_base_version_of_one_form_is_not_changed_by_building_another(novels, rf):
    """Two requests interleaved: the form built for a row at version 7 still carries 7 after the
    admin built a form for another row (as a concurrent request would)."""
    request = rf.get("/")
    request.user = novels.users["owner"]
    character = novels.a[Character]
    Character.objects.filter(pk=character.pk).update(version=7)
    character_form = admin.site._registry[Character].get_form(request, fresh(character), change=True)
    admin.site._registry[Volume].get_form(request, fresh(novels.a[Volume]), change=True)

    assert character_form(instance=fresh(character))["base_version"].value() == 7


# --- Members: a project always keeps an owner --------------------------------------------------------


def test_owner_cannot_demote_the_last_owner_in_admin(novels, owner_client):
    membership = Membership.objects.get(project=novels.a[Project], user=novels.users["owner"])
    page = owner_client.get(change_url(membership))
    response = owner_client.post(change_url(membership), form_post_data(page, role="viewer"))
    assert response.status_code == 200
    assert "last owner" in response.content.decode()
    assert fresh(membership).role == Role.OWNER


def test_owner_cannot_delete_the_last_owner_in_admin(novels, owner_client):
    membership = Membership.objects.get(project=novels.a[Project], user=novels.users["owner"])
    url = admin_url(Membership, "delete", membership.pk)
    confirm = owner_client.get(url)
    assert confirm.status_code == 200 and confirm.context["protected"]
    owner_client.post(url, {"post": "yes"})
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_project_inline_refuses_to_remove_every_owner(novels, owner_client):
    project = novels.a[Project]
    page = owner_client.get(change_url(project))
    data = form_post_data(page)
    prefix = page.context["inline_admin_formsets"][0].formset.prefix
    for index in range(int(data[f"{prefix}-TOTAL_FORMS"])):
        if data.get(f"{prefix}-{index}-role") == Role.OWNER:
            data[f"{prefix}-{index}-role"] = Role.VIEWER
    response = owner_client.post(change_url(project), data)
    assert response.status_code == 200
    assert "at least one owner" in response.content.decode()
    assert project.memberships.filter(role=Role.OWNER).count() == 1


def test_owner_promotes_a_member_then_steps_down(novels, owner_client):
    project = novels.a[Project]
    editor = Membership.objects.get(project=project, user=novels.users["editor"])
    page = owner_client.get(change_url(editor))
    assert owner_client.post(change_url(editor), form_post_data(page, role="owner")).status_code == 302
    mine = Membership.objects.get(project=project, user=novels.users["owner"])
    page = owner_client.get(change_url(mine))
    assert owner_client.post(change_url(mine), form_post_data(page, role="editor")).status_code == 302
    assert fresh(mine).role == Role.EDITOR and fresh(editor).role == Role.OWNER


def test_editor_cannot_manage_members(novels):
    client = login_client(novels.users["editor"])
    membership = Membership.objects.get(project=novels.a[Project], user=novels.users["viewer"])
    page = client.get(change_url(membership))
    assert page.status_code == 200 and not has_save_button(page)
    assert client.post(change_url(membership), {"role": "owner"}).status_code == 403
    assert fresh(membership).role == Role.VIEWER


def test_owner_deletes_project_with_chapters(novels):
    user = novels.users["outsider"]
    project = sample_project_create(owner=user, slug="with-chapters")
    volume = project.volumes.get(number=1)
    story_object_create(instance=Chapter(project=project, volume=volume, number=1, text="雪。"), editor=user)
    client = login_client(user)
    assert client.post(admin_url(Project, "delete", project.pk), {"post": "yes"}).status_code == 302
    assert not Chapter.objects.filter(project_id=project.pk).exists()
