"""The admin tests' data (tests/test_admin.py, tests/test_admin_authorization.py), a pytest plugin
(``pytest_plugins`` in tests/conftest.py).

Project A ("alpha") and project B ("beta") are both the demo novel plus one row of every other
admin model; the user under test belongs to A only. ``admin_world`` builds them once per test module,
``novels`` hands them to a test inside its own savepoint, ``owner_client`` is A's owner logged in.
"""
from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from django.contrib import admin
from django.db import models
from django.test import Client
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
    StoryFact,
    StoryState,
    Storyline,
    Volume,
    VolumeStateSnapshot,
    WorldDoc,
    WorldRule,
)
from projects.sample_project import sample_project_create
from projects.services.editing import story_object_create

# Every model of ours the admin offers.
ADMIN_MODELS: list[type[models.Model]] = sorted(
    (m for m in admin.site._registry if m._meta.app_label in ("projects", "pipeline")),
    key=lambda m: m._meta.label,
)


def login_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- Data: the demo novel plus one row of every other model ---------------------------------------


def valid_row(model_class: type[models.Model], /, **fields: Any) -> models.Model:
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
    foreshadowing = valid_row(Foreshadowing, project=project, fid="ancient_prophecy", description="远古预言",
                           scope="long", status="planted", planted_chapter=1, planted_storyline="main-arc",
                           last_updated_chapter=1)
    valid_row(ForeshadowingEvent, foreshadowing=foreshadowing, chapter=1, action="planted", detail="密信")
    run = valid_row(PipelineRun, project=project, kind="chapter", chapter=2, status="done", stage="commit",
                 created_by=owner)
    stage_run = valid_row(StageRun, run=run, stage="draft", status="succeeded", backend="anthropic",
                       model="claude-test", input_tokens=1200, output_tokens=3000, cost_usd=Decimal("0.12"),
                       receipt={"blocks": [{"name": "system", "role": "system", "tokens": 800}]})
    question = valid_row(GateQuestion, project=project, run=run, step="chapter:002:judge", topic="节奏",
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
        ChapterSummary: valid_row(ChapterSummary, project=project, chapter=chapter, storyline_slug="main-arc",
                               text="林枫救下陈老，得到密信。"),
        Evaluation: valid_row(Evaluation, project=project, chapter=chapter,
                           data={"chapter": 1, "overall": 4.2, "recommendation": "pass"},
                           overall=Decimal("4.2"), recommendation="pass", gate_decision="pass"),
        ChapterLog: valid_row(ChapterLog, project=project, chapter=chapter,
                           data={"chapter": 1, "stages": [{"name": "draft", "duration_ms": 1200}]},
                           total_duration_ms=1200, total_cost_usd=Decimal("0.12"), gate_decision="pass"),
        ArchivedSummary: valid_row(ArchivedSummary, project=project, level="archive", chapter_start=1, chapter_end=5,
                                volume_number=1, text="第 1-5 章：林枫南下。"),
        StoryState: project.story_state,
        StateChange: project.state_changes.first(),
        VolumeStateSnapshot: valid_row(VolumeStateSnapshot, project=project, volume_number=1,
                                    data=project.story_state.data),
        Foreshadowing: foreshadowing,
        ExtraFile: valid_row(ExtraFile, project=project, path="platform/qidian.md", content="起点要求"),
        StoryFact: story_object_create(
            instance=StoryFact(project=project, fact_id="fact-001", kind="promise", text="林枫答应护送陈老南下",
                               chapter=1, characters=["lin-feng", "chen-lao"], storyline="main-arc"),
            editor=owner),
        PipelineRun: run,
        StageRun: stage_run,
        LLMCall: valid_row(LLMCall, run=run, stage_run=stage_run, call_key=f"{run.pk}:draft:1:1", backend="anthropic",
                        model="claude-test", request_sha256="0" * 64, output_text="林枫走进雪原。",
                        usage={"input_tokens": 1200, "output_tokens": 3000}),
        GateQuestion: question,
        GateAnswer: valid_row(GateAnswer, question=question, answered_by=owner, answered_at=timezone.now(),
                           answer={"version": 1, "topic": "节奏", "answers": {"q1": "是"},
                                   "answered_at": "2026-11-02T08:00:00Z", "answered_by": owner.username}),
        PromptTemplate: template,
    }


def _pks_by_model() -> dict[type[models.Model], set[Any]]:
    return {model: set(model._default_manager.values_list("pk", flat=True)) for model in ADMIN_MODELS}


@dataclass
class World:
    a: dict[type[models.Model], models.Model]  # one row per model of project A
    b: dict[type[models.Model], models.Model]  # one row per model of project B
    b_pks: dict[type[models.Model], set[Any]]  # every row created for B, per model
    # A's "owner", "editor", "reviewer", "viewer"; "other_member" (owner of B only), "outsider" (staff,
    # member of nothing), "non_staff" (an editor of A without staff status)
    users: dict[str, Any]


@pytest.fixture(scope="module")
def admin_world(django_db_setup, django_db_blocker):
    """Built once for the module inside a transaction that is rolled back at the end; every test runs
    in its own savepoint (the ``db`` fixture), so tests may change data freely."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    def user(username: str, staff: bool = True):
        return get_user_model().objects.create_user(username=username, password="pw-" + username, is_staff=staff)

    with django_db_blocker.unblock(), transaction.atomic():
        users = {"owner": user("alice")}
        rows_a = build_novel(users["owner"], "alpha")
        before = _pks_by_model()
        users["other_member"] = user("bob")
        rows_b = build_novel(users["other_member"], "beta")
        b_pks = {model: pks - before[model] for model, pks in _pks_by_model().items()}
        for role in (Role.EDITOR, Role.REVIEWER, Role.VIEWER):
            users[role.value] = user(role.value)
            Membership.objects.create(project=rows_a[Project], user=users[role.value], role=role)
        users["outsider"] = user("outsider")
        users["non_staff"] = user("non-staff", staff=False)
        Membership.objects.create(project=rows_a[Project], user=users["non_staff"], role=Role.EDITOR)
        yield World(a=rows_a, b=rows_b, b_pks=b_pks, users=users)
        transaction.set_rollback(True)


@pytest.fixture
def novels(admin_world, db) -> World:
    """``admin_world`` with the ``db`` fixture's savepoint around the test."""
    return admin_world


@pytest.fixture
def owner_client(novels) -> Client:
    return login_client(novels.users["owner"])
