"""Writes through the API: what is accepted, and malformed or hostile payloads refused with a clear
400/404/409 in the one error shape, with nothing written."""
from __future__ import annotations

import pytest

from pipeline.models import PipelineRun
from projects.models import Chapter, Membership, Project

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")


def _snapshot(project: Project) -> tuple:
    chapter = Chapter.objects.get(project=project, number=1)
    fresh = Project.objects.get(pk=project.pk)
    return (chapter.text, chapter.title, chapter.version, fresh.title, fresh.brief, fresh.gate_settings,
            fresh.autopilot_chapters_per_night, Project.objects.count(), Membership.objects.count(),
            PipelineRun.objects.count())


def _error(response, status: int, code: str) -> dict:
    body = response.json()
    assert response.status_code == status, body
    assert set(body) == {"code", "message", "extra"} and body["code"] == code, body
    return body


# --- accepted --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_create_project_from_a_brief_makes_you_its_owner(world):
    client = world.client("outsider")
    response = client.post("/api/projects", {"slug": "new-novel", "title": "新书", "brief": "少年出山。",
                                             "genre": "xuanhuan", "target_platform": "qidian"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["role"] == "owner" and response.json()["orchestrator_state"] == "INIT"
    assert client.get("/api/projects/new-novel").status_code == 200


@pytest.mark.django_db
def test_owner_changes_settings_validated_by_the_json_schemas(world):
    client, url = world.client("owner"), f"/api/projects/{world.project.slug}"
    response = client.patch(url, {"autopilot_enabled": True, "autopilot_chapters_per_night": 5,
                                  "autopilot_cost_cap_usd": "2.50"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["autopilot_chapters_per_night"] == 5
    before = _snapshot(world.project)
    body = _error(client.patch(url, {"gate_settings": {"pass_threshold": "high"}}, format="json"), 400, "invalid")
    assert "gate_settings" in body["extra"]["fields"]
    assert _snapshot(world.project) == before


@pytest.mark.django_db
def test_chapter_edit_with_base_version_and_conflict(world):
    url = f"/api/projects/{world.project.slug}/chapters/1"
    editor, owner = world.client("editor"), world.client("owner")
    assert editor.get(url).json()["version"] == 1
    response = editor.patch(url, {"text": "新的正文。", "base_version": 1}, format="json")
    assert response.status_code == 200 and response.json()["version"] == 2
    before = _snapshot(world.project)
    body = _error(owner.patch(url, {"text": "旧版本上的修改", "base_version": 1}, format="json"), 409,
                  "version_conflict")
    assert body["extra"]["current_version"] == 2
    assert _snapshot(world.project) == before
    assert Chapter.objects.get(project=world.project, number=1).history.first().history_user == world.users["editor"]


@pytest.mark.django_db
def test_state_at_a_chapter_replays_the_changelog(world):
    base = f"/api/projects/{world.project.slug}/state"
    client = world.client("viewer")
    now = client.get(base).json()
    at_one = client.get(base + "/at/1").json()
    assert at_one["data"]["characters"] == now["data"]["characters"]
    assert at_one["state_version"] == now["state_version"]
    _error(client.get(base + "/at/7"), 404, "not_found")


@pytest.mark.django_db
def test_write_n_chapters_starts_one_run_with_the_rest_as_a_batch(world):
    Chapter.objects.filter(project=world.project).delete()  # the sample's chapter 1 is to be written
    Project.objects.filter(pk=world.project.pk).update(last_completed_chapter=0)
    response = world.client("editor").post(f"/api/projects/{world.project.slug}/write", {"chapters": 3},
                                           format="json")
    assert response.status_code == 202, response.json()
    run = PipelineRun.objects.get(pk=response.json()["id"])
    assert (run.chapter, run.blackboard["meta"]["batch_remaining"]) == (1, 2)
    _error(world.client("owner").post(f"/api/projects/{world.project.slug}/write", {}, format="json"), 409,
           "pipeline_busy")
    assert world.client("editor").post(f"/api/projects/{world.project.slug}/pause").json()["status"] == "cancelled"


# --- refused, nothing written ----------------------------------------------------------------------------

HOSTILE = [
    ("patch", "/chapters/1", {"text": 12345, "base_version": "one"}, 400, "invalid"),
    ("patch", "/chapters/1", {"text": "x" * 200_001, "base_version": 1}, 400, "invalid"),
    ("patch", "/chapters/1", {"text": "x", "base_version": 1, "version": 99}, 400, "invalid"),
    ("patch", "/chapters/1", {"text": "x", "base_version": 10**30}, 400, "invalid"),
    ("patch", "/chapters/1", {"text": "x", "base_version": 7}, 409, "version_conflict"),
    ("patch", "/chapters/1", {"base_version": 1}, 400, "invalid"),
    ("patch", "/chapters/1", ["text", "x"], 400, "invalid"),
    ("patch", "", {"title": "x" * 201}, 400, "invalid"),
    ("patch", "", {"orchestrator_state": "WRITING"}, 400, "invalid"),
    ("patch", "", {"last_completed_chapter": 99}, 400, "invalid"),
    ("patch", "", {"brief": "字" * 1001}, 400, "invalid"),
    ("patch", "", {"autopilot_chapters_per_night": -1}, 400, "invalid"),
    ("patch", "", {"autopilot_cost_cap_usd": "NaN"}, 400, "invalid"),
    ("patch", "", {"stage_models": "claude"}, 400, "invalid"),
    ("patch", "", {"stage_models": {"draft": "nosuch-provider:some-model"}}, 400, "invalid"),  # not offered (#19)
    ("post", "/members", {"username": "nobody-at-all", "role": "viewer"}, 400, "invalid"),
    ("post", "/members", {"username": "outsider", "role": "superuser"}, 400, "invalid"),
    ("patch", "/members/owner", {"role": "viewer"}, 400, "invalid"),
    ("post", "/write", {"chapters": 0}, 400, "invalid"),
    ("post", "/write", {"chapters": 10_000}, 400, "invalid"),
    ("post", "/write", {"chapters": "all"}, 400, "invalid"),
    ("post", "/chapters/1/rewrite", {"notes": ""}, 400, "invalid"),
    ("post", "/chapters/1/rewrite", {"notes": "x" * 5000}, 400, "invalid"),
    ("post", "/chapters/99/rewrite", {"notes": "改"}, 400, "invalid"),
    ("post", "/gates/1/answer", {"answers": {"decision": "approve"}}, 404, "not_found"),
    ("post", "/runs/999999999/retry", None, 404, "not_found"),
    ("get", "/chapters/999999999", None, 404, "not_found"),
    ("get", "/chapters?volume=1%27%20OR%201%3D1", None, 404, "not_found"),
    ("get", "/chapters?cursor=bz1hYmM%3D", None, 404, "not_found"),
    ("get", "/world-docs/..%5C..%5Cetc%5Cpasswd", None, 404, "not_found"),
    ("get", "/characters/%3Cscript%3E", None, 404, "not_found"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "suffix", "payload", "status", "code"), HOSTILE,
                         ids=[f"{m} {s} {str(p)[:30]}" for m, s, p, _st, _c in HOSTILE])
def test_hostile_payloads_are_refused_and_change_nothing(world, method, suffix, payload, status, code):
    client = world.client("owner")
    before = _snapshot(world.project)
    url = f"/api/projects/{world.project.slug}{suffix}"
    response = getattr(client, method)(url, payload, format="json") if payload is not None else \
        getattr(client, method)(url)
    _error(response, status, code)
    assert _snapshot(world.project) == before


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["../demo", "demo/../../admin", "import", "x" * 61, "demo", "", "新书"])
def test_project_create_refuses_bad_and_taken_slugs(world, slug):
    before = Project.objects.count()
    response = world.client("outsider").post("/api/projects", {"slug": slug, "title": "t"}, format="json")
    _error(response, 400, "invalid")
    assert Project.objects.count() == before


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/projects/..%2Fdemo", "/api/projects/demo%2F..%2F..%2Fadmin",
                                  "/api/projects/demo/chapters/-1", "/api/projects/demo/chapters/1e3",
                                  "/api/projects/demo/chapters/99999999999999999999",
                                  "/api/projects/demo/members/..%2F..%2Fadmin",
                                  "/api/projects/demo/world-docs/..%2F..%2Fetc%2Fpasswd"])
def test_traversal_and_out_of_range_paths_are_not_found(world, path):
    assert world.client("owner").get(path).status_code == 404


@pytest.mark.django_db
def test_body_that_is_not_json_is_a_400(world):
    response = world.client("owner").generic("PATCH", f"/api/projects/{world.project.slug}/chapters/1",
                                              "{not json", content_type="application/json")
    _error(response, 400, "parse_error")


@pytest.mark.django_db
def test_a_body_over_the_upload_limit_is_a_413_in_the_error_shape(world):
    import json

    before = _snapshot(world.project)
    body = json.dumps({"text": "字" * 1_000_000, "base_version": 1})  # 3 MB of UTF-8, over Django's 2.5 MB
    response = world.client("owner").generic("PATCH", f"/api/projects/{world.project.slug}/chapters/1", body,
                                              content_type="application/json")
    _error(response, 413, "too_large")
    assert _snapshot(world.project) == before


# --- throttling ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_actions_that_start_llm_work_are_throttled(world, settings):
    settings.NOVELSITE_SPENDING = {**settings.NOVELSITE_SPENDING, "user_rate": "2/minute", "max_active_runs": 10}
    client, url = world.client("editor"), f"/api/projects/{world.project.slug}/write"
    assert [client.post(url, {}, format="json").status_code for _ in range(2)] == [202, 409]  # started; busy
    throttled = client.post(url, {}, format="json")
    assert _error(throttled, 429, "throttled")["message"]
    assert int(throttled["Retry-After"]) > 0
    # reads are not throttled, and another person has their own allowance
    assert client.get(f"/api/projects/{world.project.slug}/chapters").status_code == 200
    assert world.client("owner").post(url, {}, format="json").status_code == 409
