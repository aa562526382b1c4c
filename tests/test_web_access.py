"""Role × action matrix over every web page and form post: anonymous people are sent to log in,
non-members get 404 (the project's existence is not revealed), members whose role does not allow
the action get 403, and nobody gets a 200 they should not."""
from __future__ import annotations

import pytest
from django.urls import reverse

from pipeline.models import GateQuestion, PipelineRun, RunKind, RunStatus
from projects.models import Foreshadowing, WorldDoc
from projects.permissions import Action, role_allows
from projects.services.projects import membership_set_role, project_create
from tests.factories import ChapterFactory, CharacterFactory, VolumeFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("eager_offline")]

ROLES = ["owner", "editor", "reviewer", "viewer", "outsider", "anonymous"]
SPEC = {"version": 1, "topic": "t", "questions": [{"id": "q", "header": "h", "question": "?", "kind": "free_text",
                                                   "required": True}]}

# (method, url name, extra args, action needed, status when allowed)
PAGES = [
    ("get", "dashboard", [], Action.READ, 200),
    ("get", "progress", [], Action.READ, 200),
    ("get", "chapter-list", [], Action.READ, 200),
    ("get", "chapter-read", [1], Action.READ, 200),
    ("get", "chapter-history", [1], Action.READ, 200),
    ("get", "chapter-edit", [1], Action.EDIT, 200),
    ("post", "chapter-edit", [1], Action.EDIT, 200),  # empty form: shown again with errors
    ("get", "world", [], Action.READ, 200),
    ("get", "world-doc", ["geography"], Action.READ, 200),
    ("get", "world-character", ["lin-feng"], Action.READ, 200),
    ("get", "state", [], Action.READ, 200),
    ("get", "gates", [], Action.READ, 200),
    ("post", "gate-answer-web", ["QUESTION"], Action.DECIDE, 302),  # invalid answer: back to the gates
    ("get", "plan", [], Action.READ, 200),
    ("get", "trial", [], Action.READ, 200),
    ("post", "plan-decide", [], Action.DECIDE, 404),  # no plan waits: nothing to decide
    ("post", "plan-edit", [], Action.EDIT, 404),  # no plan waits: nothing to edit
    ("post", "chapter-rewrite", [1], Action.EDIT, 302),  # refused (the book is not writing): back to the dashboard
    ("get", "runs", [], Action.READ, 200),
    ("get", "run", ["RUN"], Action.READ, 200),
    ("get", "members", [], Action.READ, 200),
    ("post", "members", [], Action.MANAGE, 200),  # empty form: shown again with errors
    ("get", "settings", [], Action.MANAGE, 200),
    ("post", "settings", [], Action.MANAGE, 200),
    ("post", "advance", [], Action.EDIT, 302),
    ("post", "write", [], Action.EDIT, 302),
    ("post", "pause", [], Action.EDIT, 302),
    ("post", "retry", [], Action.EDIT, 302),
    ("get", "promotions", [], Action.READ, 200),
    ("post", "promotions", [], Action.EDIT, 200),  # empty form: refused, the list again with the reason
    ("get", "promotion", ["PROMO"], Action.READ, 200),
    ("post", "promotion-regenerate", ["PROMO"], Action.EDIT, 302),  # no step named: refused, back to the post
    ("get", "download", ["epub"], Action.READ, 200),
    ("get", "download", ["txt"], Action.READ, 200),
    ("get", "download", ["zip"], Action.READ, 200),
    ("get", "character-new", [], Action.EDIT, 200),
    ("post", "character-new", [], Action.EDIT, 200),  # empty form: shown again with errors
    ("get", "character-edit", ["lin-feng"], Action.EDIT, 200),
    ("post", "character-edit", ["lin-feng"], Action.EDIT, 200),
    ("get", "contract-list", [], Action.READ, 200),
    ("get", "story-new", ["docs"], Action.EDIT, 200),
    ("post", "story-new", ["rules"], Action.EDIT, 200),
    ("get", "story-edit", ["docs", "geography"], Action.EDIT, 200),
    ("post", "story-edit", ["docs", "geography"], Action.EDIT, 200),
    ("get", "relationships-edit", [], Action.EDIT, 200),
    ("post", "relationships-edit", [], Action.EDIT, 200),  # empty form: shown again with errors
    ("get", "foreshadowing-new", [], Action.EDIT, 200),
    ("post", "foreshadowing-new", [], Action.EDIT, 200),  # empty form: shown again with errors
    ("get", "foreshadowing-edit", ["F-001"], Action.EDIT, 200),
    ("post", "foreshadowing-edit", ["F-001"], Action.EDIT, 200),
    ("get", "fact-list", [], Action.READ, 200),
    ("get", "fact-new", [], Action.EDIT, 200),
    ("post", "fact-new", [], Action.EDIT, 200),  # empty form: shown again with errors
    ("get", "schedule-edit", [1], Action.EDIT, 200),
    ("post", "schedule-edit", [1], Action.EDIT, 200),  # empty form: shown again with errors
]


@pytest.fixture
def world(make_user):
    owner = make_user("owner")
    project = project_create(owner=owner, slug="snow", title="雪原长夜", brief="少年南下。")
    users = {"owner": owner}
    for role in ("editor", "reviewer", "viewer"):
        users[role] = make_user(role)
        membership_set_role(project=project, user=users[role], role=role)
    users["outsider"] = make_user("outsider")
    project_create(owner=users["outsider"], slug="other", title="别的书")  # a member elsewhere
    ChapterFactory(project=project, number=1, volume=VolumeFactory(project=project, number=1))
    WorldDoc.objects.create(project=project, name="geography", content="# 北境")
    CharacterFactory(project=project, slug="lin-feng")
    Foreshadowing.objects.create(project=project, fid="F-001", description="玉佩")
    run = PipelineRun.objects.create(project=project, kind=RunKind.QUICKSTART, status=RunStatus.WAITING,
                                     stage="quickstart:world")
    question = GateQuestion.objects.create(project=project, run=run, step="quickstart:world", topic="t", spec=SPEC,
                                           answer_path="x.json")
    promo = PipelineRun.objects.create(project=project, kind=RunKind.PROMOTION, status=RunStatus.DONE,
                                       stage="promote:platforms")
    return project, users, {"QUESTION": question.pk, "RUN": run.pk, "PROMO": promo.pk}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "name", "args", "action", "allowed_status"), PAGES,
                         ids=[f"{m}-{n}" for m, n, *_ in PAGES])
def test_every_page_answers_each_role_as_the_table_says(client, world, role, method, name, args, action,
                                                        allowed_status):
    project, users, ids = world
    url = reverse(name, args=[project.slug, *[ids.get(a, a) for a in args]])
    if role != "anonymous":
        client.force_login(users[role])
    response = getattr(client, method)(url)
    if role == "anonymous":
        assert response.status_code == 302 and response.url.startswith(reverse("login")), response.status_code
    elif role == "outsider":
        assert response.status_code == 404
    elif not role_allows(role, action):
        assert response.status_code == 403
    else:
        assert response.status_code == allowed_status


@pytest.mark.parametrize("name", ["chapter-read", "chapter-edit", "chapter-history"])
def test_a_chapter_of_another_project_is_not_found(client, world, name):
    project, users, _ids = world
    client.force_login(users["outsider"])  # owner of "other", which has no chapter 1
    assert client.get(reverse(name, args=["other", 1])).status_code == 404


def test_the_project_list_shows_only_my_projects(client, world):
    project, users, _ids = world
    client.force_login(users["outsider"])
    body = client.get(reverse("projects-home")).content.decode()
    assert "别的书" in body and "雪原长夜" not in body


def test_a_run_of_another_project_is_not_found(client, world):
    project, users, ids = world
    client.force_login(users["outsider"])
    assert client.get(reverse("run", args=["other", ids["RUN"]])).status_code == 404


@pytest.mark.parametrize(("method", "name"), [("get", "projects-home"), ("get", "project-create-web"),
                                              ("post", "project-create-web"), ("post", "project-import-web")])
def test_anonymous_people_cannot_list_create_or_import(client, method, name):
    response = getattr(client, method)(reverse(name))
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_a_member_asking_for_a_missing_project_gets_404(client, world):
    _project, users, _ids = world
    client.force_login(users["owner"])
    assert client.get(reverse("dashboard", args=["no-such-book"])).status_code == 404
