"""The role × action matrix of the REST API: every endpoint and method, for the owner, editor,
reviewer and viewer of a project, a signed-in non-member and an anonymous caller.

Denied members get 403; non-members get exactly what a project that does not exist gets (404,
the same body); anonymous callers get 401. An allowed role is never refused for its role (it may
still get a 409 or a 400 for the state of the project or the payload), and nothing is a 5xx.
"""
from __future__ import annotations

import pytest
from django.urls import Resolver404, resolve

from pipeline.models import PipelineRun, RunKind, RunStatus
from projects.permissions import ALLOWED, Action
from tests.api_fixtures import ROLES, World

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")

S = "/api/projects/{slug}"

# (method, path, the action it needs, payload). Members-only endpoints first; the destructive
# ones (member removal, pause, cancel) come after the ones that read what they change.
ENDPOINTS = [
    ("get", S, Action.READ, None),
    ("patch", S, Action.MANAGE, {"autopilot_chapters_per_night": 2}),
    ("get", S + "/members", Action.READ, None),
    ("post", S + "/members", Action.MANAGE, {"username": "outsider", "role": "viewer"}),
    ("post", S + "/new-members", Action.MANAGE,
     {"username": "newbie", "email": "newbie@example.com", "role": "viewer"}),
    ("patch", S + "/members/viewer", Action.MANAGE, {"role": "viewer"}),
    ("get", S + "/volumes", Action.READ, None),
    ("get", S + "/volumes/1", Action.READ, None),
    ("get", S + "/chapters", Action.READ, None),
    ("get", S + "/chapters?volume=1", Action.READ, None),
    ("get", S + "/chapters/1", Action.READ, None),
    ("patch", S + "/chapters/1", Action.EDIT, {"title": "新标题", "base_version": 1}),
    ("get", S + "/chapters/1/evaluation", Action.READ, None),
    ("get", S + "/chapters/1/log", Action.READ, None),
    ("get", S + "/chapters/1/receipts", Action.READ, None),
    ("post", S + "/chapters/1/rewrite", Action.EDIT, {"notes": "节奏更紧凑"}),
    ("get", S + "/characters", Action.READ, None),
    ("get", S + "/characters/lin-feng", Action.READ, None),
    ("get", S + "/storylines", Action.READ, None),
    ("get", S + "/storylines/main-arc", Action.READ, None),
    ("get", S + "/world-rules", Action.READ, None),
    ("get", S + "/world-docs", Action.READ, None),
    ("get", S + "/world-docs/rules", Action.READ, None),
    ("get", S + "/foreshadowing", Action.READ, None),
    ("get", S + "/facts", Action.READ, None),
    ("get", S + "/state", Action.READ, None),
    ("get", S + "/state/at/1", Action.READ, None),
    ("get", S + "/next", Action.READ, None),
    ("get", S + "/gates", Action.READ, None),
    ("post", S + "/gates/999999/answer", Action.DECIDE, {"answers": {"decision": "approve"}}),
    ("get", S + "/plan", Action.READ, None),
    ("patch", S + "/plan", Action.EDIT, {"outline": "x"}),
    ("post", S + "/plan/approve", Action.DECIDE, None),
    ("get", S + "/runs", Action.READ, None),
    ("get", S + "/runs/{run}", Action.READ, None),
    ("post", S + "/runs/{run}/retry", Action.EDIT, None),
    ("post", S + "/write", Action.EDIT, {"chapters": 2}),
    ("post", S + "/advance", Action.EDIT, {}),
    ("post", S + "/pause", Action.EDIT, None),
    ("post", S + "/runs/{run}/cancel", Action.EDIT, None),
    ("get", S + "/export.zip", Action.READ, None),
    ("get", S + "/promotions", Action.READ, None),
    ("post", S + "/promotions", Action.EDIT, {"chapter": 1}),
    ("get", S + "/promotions/999999", Action.READ, None),
    ("post", S + "/promotions/999999/regenerate", Action.EDIT, {}),
    ("delete", S + "/members/viewer", Action.MANAGE, None),
]
# Least privilege first, so that an allowed role's change never hides a denial from a lower one.
CALLERS = ("anonymous", "outsider", "viewer", "reviewer", "editor", "owner")


@pytest.fixture
def matrix_world(world: World) -> tuple[World, int]:
    run = PipelineRun.objects.create(project=world.project, kind=RunKind.CHAPTER, chapter=2, volume_number=1,
                                     status=RunStatus.ERROR, stage="draft", error="LLM overloaded")
    return world, run.pk


def _call(world: World, who: str, method: str, path: str, payload):
    client = world.client(who)
    return getattr(client, method)(path, payload, format="json") if payload is not None else \
        getattr(client, method)(path)


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "action", "payload"), ENDPOINTS,
                         ids=[f"{m.upper()} {p.replace(S, '')}" for m, p, _a, _d in ENDPOINTS])
def test_role_matrix(matrix_world, method, path, action, payload):
    world, run_id = matrix_world
    url = path.format(slug=world.project.slug, run=run_id)
    try:
        resolve(url.split("?")[0])
    except Resolver404:  # e.g. promotions, when that app's API is not installed
        pytest.skip(f"{path} is not routed")
    missing = path.format(slug="no-such-novel", run=run_id)
    for who in CALLERS:
        response = _call(world, who, method, url, payload)
        body = response.json() if response.get("Content-Type", "").startswith("application/json") else None
        assert response.status_code < 500, (who, response.status_code, body)
        if who == "anonymous":
            assert response.status_code == 401, (who, response.status_code, body)
            assert body["code"] == "not_authenticated"
        elif who == "outsider":
            twin = _call(world, who, method, missing, payload)
            assert (response.status_code, body) == (404, twin.json()), "a non-member learns the project exists"
            assert body["code"] == "not_found"
        elif action not in ALLOWED[who]:
            assert response.status_code == 403, (who, response.status_code, body)
            assert body["code"] == "permission_denied"
        else:
            assert response.status_code not in (401, 403), (who, response.status_code, body)
            assert not (response.status_code == 404 and body and body["message"] == "No such project."), who


ANY_USER_ENDPOINTS = [("get", "/api/projects"), ("post", "/api/projects"), ("post", "/api/projects/import")]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path"), ANY_USER_ENDPOINTS)
def test_endpoints_outside_a_project_need_a_signed_in_user(world, method, path):
    response = getattr(world.client("anonymous"), method)(path, {}, format="json")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    response = getattr(world.client("outsider"), method)(path, {}, format="json")
    assert response.status_code in (200, 400, 415)  # 415: the import takes a multipart upload


@pytest.mark.django_db
def test_project_list_shows_only_your_memberships(world, make_user):
    from tests.factories import ProjectFactory

    ProjectFactory(slug="someone-elses")
    for who in ROLES:
        slugs = [p["slug"] for p in world.client(who).get("/api/projects").json()["results"]]
        assert slugs == [world.project.slug], who
    assert world.client("outsider").get("/api/projects").json()["results"] == []


@pytest.mark.django_db
def test_session_authentication_works_and_keeps_csrf(world):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world.users["editor"])
    assert client.get(f"/api/projects/{world.project.slug}/chapters").status_code == 200
    response = client.patch(f"/api/projects/{world.project.slug}/chapters/1", {"title": "x", "base_version": 1},
                            format="json")
    assert response.status_code == 403  # a session without the CSRF token cannot write
    assert "CSRF" in response.json()["message"]


@pytest.mark.django_db
def test_role_changes_take_effect_at_once(world):
    owner, slug = world.client("owner"), world.project.slug
    assert owner.patch(f"/api/projects/{slug}/members/viewer", {"role": "editor"}, format="json").status_code == 200
    response = world.client("viewer").patch(f"/api/projects/{slug}/chapters/1", {"title": "y", "base_version": 1},
                                            format="json")
    assert response.status_code == 200
    assert owner.delete(f"/api/projects/{slug}/members/viewer").status_code == 204
    assert world.client("viewer").get(f"/api/projects/{slug}").status_code == 404


@pytest.mark.django_db
def test_the_last_owner_cannot_leave_or_be_demoted(world):
    owner, slug = world.client("owner"), world.project.slug
    response = owner.patch(f"/api/projects/{slug}/members/owner", {"role": "viewer"}, format="json")
    assert (response.status_code, response.json()["code"]) == (400, "invalid")
    assert owner.delete(f"/api/projects/{slug}/members/owner").status_code == 400
    assert world.project.memberships.get(user=world.users["owner"]).role == "owner"


@pytest.mark.django_db
def test_the_matrix_covers_every_operation_of_the_schema(client):
    """A new endpoint must join ENDPOINTS (or ANY_USER_ENDPOINTS) before it can ship."""
    import re

    schema = client.get("/api/schema/?format=json").json()
    covered = [(m, p.format(slug="demo", run=1).split("?")[0]) for m, p, _a, _d in ENDPOINTS] + ANY_USER_ENDPOINTS
    missing = []
    for path, operations in schema["paths"].items():
        if not path.startswith("/api/projects"):
            continue
        pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$")
        for method in operations:
            if not any(m == method and pattern.match(p) for m, p in covered):
                missing.append(f"{method.upper()} {path}")
            assert {} not in operations[method].get("security", []), f"{method} {path} allows anonymous callers"
    assert missing == []
