"""The admin through real HTTP requests: role scoping, read-only pipeline records, versioned edits,
JSON validation and history.

Project A ("alpha") and project B ("beta") are both the demo novel plus one row of every other
model; the user under test belongs to A only. Roles decide everything (``projects.permissions``):
no test user has a Django model permission.
"""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from django import forms
from django.contrib import admin
from django.db import models
from django.test import Client
from django.urls import reverse
from django.utils import timezone

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
    StoryState,
    Storyline,
    Volume,
    VolumeStateSnapshot,
    WorldDoc,
    WorldRule,
)
from projects.sample_project import sample_project_create
from projects.services.editing import story_object_create, story_object_update

# --- What the admin should offer ------------------------------------------------------------------

ADMIN_MODELS: list[type[models.Model]] = sorted(
    (m for m in admin.site._registry if m._meta.app_label in ("projects", "pipeline")),
    key=lambda m: m._meta.label,
)

# Written by the pipeline: people read them in the admin but never add, change or delete them.
PIPELINE_OWNED = {
    ChapterSummary, ArchivedSummary, Evaluation, ChapterLog, StoryState, StateChange, VolumeStateSnapshot,
    PipelineRun, StageRun, LLMCall, GateQuestion, GateAnswer,
}
# Edited by people.
PEOPLE_EDITED = {
    Project, Membership, ResearchNote, WorldDoc, WorldRule, Character, Storyline, Volume, ChapterContract,
    Chapter, Foreshadowing, ExtraFile, PromptTemplate,
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
    for inline in response.context["inline_admin_formsets"]:
        _add_form_fields(data, inline.formset.management_form)
        for form in inline.formset.forms:
            _add_form_fields(data, form)
    data.update({name: _as_post_value(value) for name, value in overrides.items()})
    return data


def has_save_button(response) -> bool:
    return b'name="_save"' in response.content


def login_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def assert_redirects_to_admin_index(response) -> None:
    assert response.status_code == 302
    assert response.url == reverse("admin:index")


def assert_redirects_to_login(response) -> None:
    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:login"))


# --- Data: the demo novel plus one row of every other model ---------------------------------------


def _valid(model_class: type[models.Model], /, **fields: Any) -> models.Model:
    obj = model_class(**fields)
    obj.full_clean()
    obj.save()
    return obj


def build_novel(owner, slug: str) -> dict[type[models.Model], models.Model]:
    """Project ``slug`` owned by ``owner`` with at least one row of every admin model; returns one
    row per model."""
    project = sample_project_create(owner=owner, slug=slug)
    volume = project.volumes.get(number=1)
    storyline = project.storylines.get(slug="main-arc")
    chapter = story_object_create(
        instance=Chapter(project=project, volume=volume, number=1, storyline=storyline, title="雪原来客",
                         text="林枫走进雪原，风很冷。陈老倒在雪里。"),
        editor=owner,
    )
    note = story_object_create(instance=ResearchNote(project=project, name="star-fire", content="星火宗考据"),
                               editor=owner)
    template = story_object_create(
        instance=PromptTemplate(project=project, name="draft.j2", source="第 {{ chapter }} 章", updated_by=owner),
        editor=owner,
    )
    foreshadowing = _valid(Foreshadowing, project=project, fid="ancient_prophecy", description="远古预言",
                           scope="long", status="planted", planted_chapter=1, planted_storyline="main-arc",
                           last_updated_chapter=1)
    _valid(ForeshadowingEvent, foreshadowing=foreshadowing, chapter=1, action="planted", detail="密信")
    run = _valid(PipelineRun, project=project, kind="chapter", chapter=2, status="done", stage="commit",
                 created_by=owner)
    stage_run = _valid(StageRun, run=run, stage="draft", status="succeeded", backend="anthropic",
                       model="claude-test", input_tokens=1200, output_tokens=3000, cost_usd=Decimal("0.12"),
                       receipt={"blocks": [{"name": "system", "role": "system", "tokens": 800}]})
    question = _valid(GateQuestion, project=project, run=run, step="chapter:002:judge", topic="节奏",
                      spec={"version": 1, "topic": "节奏", "questions": [{"id": "q1", "text": "放慢节奏？"}]},
                      answer_path="answers/chapter-002.json", status="answered")
    return {
        Project: project,
        Membership: project.memberships.get(user=owner),
        ResearchNote: note,
        WorldDoc: project.world_docs.first(),
        WorldRule: project.world_rules.first(),
        Character: project.characters.get(slug="lin-feng"),
        Storyline: storyline,
        Volume: volume,
        ChapterContract: project.chapter_contracts.first(),
        Chapter: chapter,
        ChapterSummary: _valid(ChapterSummary, project=project, chapter=chapter, storyline_slug="main-arc",
                               text="林枫救下陈老，得到密信。"),
        Evaluation: _valid(Evaluation, project=project, chapter=chapter,
                           data={"chapter": 1, "overall": 4.2, "recommendation": "pass"},
                           overall=Decimal("4.2"), recommendation="pass", gate_decision="pass"),
        ChapterLog: _valid(ChapterLog, project=project, chapter=chapter,
                           data={"chapter": 1, "stages": [{"name": "draft", "duration_ms": 1200}]},
                           total_duration_ms=1200, total_cost_usd=Decimal("0.12"), gate_decision="pass"),
        ArchivedSummary: _valid(ArchivedSummary, project=project, level="archive", chapter_start=1, chapter_end=5,
                                volume_number=1, text="第 1-5 章：林枫南下。"),
        StoryState: project.story_state,
        StateChange: project.state_changes.first(),
        VolumeStateSnapshot: _valid(VolumeStateSnapshot, project=project, volume_number=1,
                                    data=project.story_state.data),
        Foreshadowing: foreshadowing,
        ExtraFile: _valid(ExtraFile, project=project, path="platform/qidian.md", content="起点要求"),
        PipelineRun: run,
        StageRun: stage_run,
        LLMCall: _valid(LLMCall, run=run, stage_run=stage_run, call_key=f"{run.pk}:draft:1:1", backend="anthropic",
                        model="claude-test", request_sha256="0" * 64, output_text="林枫走进雪原。",
                        usage={"input_tokens": 1200, "output_tokens": 3000}),
        GateQuestion: question,
        GateAnswer: _valid(GateAnswer, question=question, answered_by=owner, answered_at=timezone.now(),
                           answer={"version": 1, "topic": "节奏", "answers": {"q1": "是"},
                                   "answered_at": "2026-11-02T08:00:00Z", "answered_by": owner.username}),
        PromptTemplate: template,
    }


def _pks_by_model() -> dict[type[models.Model], set[Any]]:
    return {model: set(model._default_manager.values_list("pk", flat=True)) for model in ADMIN_MODELS}


@dataclass
class Novel:
    owner: Any
    project: Project
    rows: dict[type[models.Model], models.Model]


@dataclass
class TwoNovels:
    a: Novel
    b: Novel
    b_pks: dict[type[models.Model], set[Any]]  # every row created for B, per model


@pytest.fixture
def novels(db, make_user) -> TwoNovels:
    owner_a, owner_b = make_user("alice"), make_user("bob")
    rows_a = build_novel(owner_a, "alpha")
    before = _pks_by_model()
    rows_b = build_novel(owner_b, "beta")
    after = _pks_by_model()
    return TwoNovels(
        a=Novel(owner_a, rows_a[Project], rows_a),
        b=Novel(owner_b, rows_b[Project], rows_b),
        b_pks={model: after[model] - before[model] for model in ADMIN_MODELS},
    )


@pytest.fixture
def owner_client(novels) -> Client:
    return login_client(novels.a.owner)


@pytest.fixture
def members(novels, make_user) -> dict[str, Any]:
    """Users of project A by what they are: a role, staff without membership, or a non-staff member."""
    project = novels.a.project
    users = {"owner": novels.a.owner}
    for role in (Role.EDITOR, Role.REVIEWER, Role.VIEWER):
        users[role] = make_user(role)
        Membership.objects.create(project=project, user=users[role], role=role)
    users["outsider"] = make_user("outsider")
    users["non_staff"] = make_user("non-staff", staff=False)
    Membership.objects.create(project=project, user=users["non_staff"], role=Role.EDITOR)
    return users


def test_every_admin_model_is_classified_and_has_rows(novels):
    assert set(ADMIN_MODELS) == PIPELINE_OWNED | PEOPLE_EDITED
    assert set(novels.a.rows) == set(ADMIN_MODELS)
    assert all(novels.b_pks[model] for model in ADMIN_MODELS), "project B needs a row of every model"


# --- 1. The owner of A can open every page of every model -----------------------------------------


@by_model
def test_owner_opens_changelist(owner_client, model):
    assert owner_client.get(admin_url(model, "changelist")).status_code == 200


@by_model
def test_owner_opens_change_page_of_own_row(owner_client, novels, model):
    response = owner_client.get(change_url(novels.a.rows[model]))
    assert response.status_code == 200
    assert has_save_button(response) == (model in PEOPLE_EDITED)


@by_model
def test_owner_may_add_people_edited_models_only(owner_client, model):
    response = owner_client.get(admin_url(model, "add"))
    assert response.status_code == (403 if model in PIPELINE_OWNED else 200)


# --- 2. Project B is invisible to A's owner -------------------------------------------------------


@by_model
def test_changelist_hides_other_projects_rows(owner_client, novels, model):
    response = owner_client.get(admin_url(model, "changelist"))
    listed = set(response.context["cl"].queryset.values_list("pk", flat=True))
    shown = {obj.pk for obj in response.context["cl"].result_list}
    assert novels.a.rows[model].pk in listed and novels.a.rows[model].pk in shown
    assert not listed & novels.b_pks[model]
    assert not shown & novels.b_pks[model]


@by_model
def test_change_page_of_other_projects_row_redirects(owner_client, novels, model):
    obj = novels.b.rows[model]
    response = owner_client.get(change_url(obj))
    assert_redirects_to_admin_index(response)
    page = owner_client.get(response.url).content.decode()
    assert str(obj) not in page
    assert "beta" not in page
