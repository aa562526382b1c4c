"""Shared set-up of the API tests: the sample project with one member per role, a token per user,
one committed chapter with its evaluation and log, and a run in error.

A pytest plugin (``pytest_plugins`` in tests/conftest.py), so every test module sees its fixtures
without importing them; ``World``, ``ROLES`` and ``committed_chapter`` are imported as usual.
``fresh_throttle_cache`` is not autouse: the modules that want it say so with
``pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")``."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from projects.models import Chapter, ChapterLog, Evaluation, Membership, Project, Role

ROLES = ("owner", "editor", "reviewer", "viewer")


@dataclass
class World:
    project: Project
    users: dict  # role or "outsider" -> User
    tokens: dict  # same keys -> token key

    def client(self, who: str) -> APIClient:
        client = APIClient()
        if who != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {self.tokens[who]}")
        return client


def committed_chapter(project: Project, number: int = 1, *, text: str = "第一章。林枫走进雪原。") -> Chapter:
    volume = project.volumes.get(number=1)
    chapter = Chapter.objects.create(project=project, volume=volume, number=number, title=f"第{number}章", text=text)
    Evaluation.objects.create(project=project, chapter=chapter, data={"overall": 4.2}, overall="4.20")
    ChapterLog.objects.create(project=project, chapter=chapter, data={"chapter": number, "stages": []})
    Project.objects.filter(pk=project.pk).update(last_completed_chapter=number)
    return chapter


@pytest.fixture
def fresh_throttle_cache():
    cache.clear()  # throttle counters live in the cache; user ids repeat between tests
    yield
    cache.clear()


@pytest.fixture
def no_llm_work(monkeypatch):
    """Runs are created and queued, but no stage task is sent: the API tests test the API."""
    monkeypatch.setattr("pipeline.runtime.queueing._send", lambda run_id, stage: None)


@pytest.fixture
def world(db, make_user, no_llm_work) -> World:
    from projects.sample_project import sample_project_create

    users = {role: make_user(role, staff=False) for role in (*ROLES, "outsider")}
    project = sample_project_create(owner=users["owner"])
    for role in ROLES[1:]:
        Membership.objects.create(project=project, user=users[role], role=Role(role))
    committed_chapter(project)
    project.refresh_from_db()
    tokens = {who: Token.objects.create(user=user).key for who, user in users.items()}
    return World(project, users, tokens)
