"""A book from its brief to a written chapter through the REST API alone, with the offline LLM
backend and eager tasks: create, quick start (answer its question), plan (approve it), write, read
the chapter, its evaluation, log, receipts and the state replayed to it."""
from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache", "eager_offline")

BRIEF = "北境少年林枫在雪原上救下一位神秘老人，卷入星火宗覆灭的旧案，一路南下追查预言的真相。"


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _ok(response, status: int = 200) -> dict:
    assert response.status_code == status, response.content[:500]
    return response.json()


@pytest.mark.django_db(transaction=True)  # stages run when the request's transaction commits
def test_from_brief_to_a_written_chapter_over_the_api(make_user):
    owner, reviewer = _client(make_user("owner")), _client(make_user("reviewer"))
    _ok(owner.post("/api/projects", {"slug": "snow", "title": "雪原长夜", "brief": BRIEF}, format="json"), 201)
    _ok(owner.post("/api/projects/snow/members", {"username": "reviewer", "role": "reviewer"}, format="json"), 201)
    P = "/api/projects/snow"

    _ok(owner.post(f"{P}/advance", {}, format="json"), 202)  # quick start asks for platform and genre
    question = _ok(reviewer.get(f"{P}/gates"))[0]
    _ok(reviewer.post(f"{P}/gates/{question['id']}/answer",
                      {"answers": {"platform": "qidian", "genre": "xuanhuan"}}, format="json"))
    _ok(owner.post(f"{P}/advance", {}, format="json"), 202)  # plans volume 1; waits for approval
    assert _ok(reviewer.get(f"{P}/plan"))["validation"]["errors"] == []
    _ok(reviewer.post(f"{P}/plan/approve"))
    assert _ok(owner.get(P))["orchestrator_state"] == "WRITING"

    run = _ok(owner.post(f"{P}/write", {"chapters": 1}, format="json"), 202)
    assert _ok(owner.get(f"{P}/runs/{run['id']}"))["status"] == "done"
    chapters = _ok(reviewer.get(f"{P}/chapters?volume=1"))["results"]
    assert [c["number"] for c in chapters] == [1] and chapters[0]["overall"] is not None
    chapter = _ok(reviewer.get(f"{P}/chapters/1"))
    assert chapter["word_count"] > 0 and chapter["text"]
    assert _ok(reviewer.get(f"{P}/chapters/1/evaluation"))["overall"]
    assert _ok(reviewer.get(f"{P}/chapters/1/log"))["data"]["chapter"] == 1
    receipts = _ok(reviewer.get(f"{P}/chapters/1/receipts"))["results"]
    assert {r["stage"] for r in receipts} >= {"draft", "summarize", "judge"}
    assert all(r["receipt"].get("blocks") for r in receipts if r["stage"] == "draft")
    assert all((r["currency"], r["cost_known"]) == ("USD", True) for r in receipts)  # the offline backend's
    now, at_one = _ok(reviewer.get(f"{P}/state")), _ok(reviewer.get(f"{P}/state/at/1"))
    assert at_one["data"] == now["data"]
    before_first = _ok(reviewer.get(f"{P}/state/at/0"))
    assert before_first["state_version"] < now["state_version"]
    assert _ok(reviewer.get(f"{P}/runs"))["results"][0]["id"] == run["id"]


@pytest.mark.django_db(transaction=True)
def test_pausing_a_plan_that_waits_for_approval_cancels_its_question(make_user):
    owner, reviewer = _client(make_user("owner")), _client(make_user("reviewer"))
    _ok(owner.post("/api/projects", {"slug": "snow", "title": "雪原长夜", "brief": BRIEF}, format="json"), 201)
    _ok(owner.post("/api/projects/snow/members", {"username": "reviewer", "role": "reviewer"}, format="json"), 201)
    P = "/api/projects/snow"
    _ok(owner.post(f"{P}/advance", {}, format="json"), 202)
    question = _ok(reviewer.get(f"{P}/gates"))[0]
    _ok(reviewer.post(f"{P}/gates/{question['id']}/answer",
                      {"answers": {"platform": "qidian", "genre": "xuanhuan"}}, format="json"))
    plan = _ok(owner.post(f"{P}/advance", {}, format="json"), 202)  # the plan waits for its approval
    [approval] = _ok(reviewer.get(f"{P}/gates"))
    assert approval["topic"] == "volume.01.plan_approval"

    assert _ok(owner.post(f"{P}/pause"))["status"] == "cancelled"

    assert _ok(reviewer.get(f"{P}/gates")) == []  # the cancelled plan's question is gone with it
    refused = reviewer.post(f"{P}/gates/{approval['id']}/answer", {"answers": {"decision": "approve"}},
                            format="json")
    assert refused.status_code == 409
    assert refused.json()["code"] == "pipeline_not_ready" and "cancelled" in refused.json()["message"]
    assert _ok(owner.get(P))["orchestrator_state"] == "VOL_PLANNING"
    # planning again asks again, and that question can be answered
    again = _ok(owner.post(f"{P}/advance", {}, format="json"), 202)
    assert again["run_id"] != plan["run_id"]
    [fresh] = _ok(reviewer.get(f"{P}/gates"))
    assert fresh["id"] != approval["id"]
    _ok(reviewer.post(f"{P}/gates/{fresh['id']}/answer", {"answers": {"decision": "approve"}}, format="json"))
    assert _ok(owner.get(P))["orchestrator_state"] == "WRITING"


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_waiting_run_by_id_cancels_its_question(make_user):
    owner = _client(make_user("owner"))
    _ok(owner.post("/api/projects", {"slug": "snow", "title": "雪原长夜", "brief": BRIEF}, format="json"), 201)
    P = "/api/projects/snow"
    run_id = _ok(owner.post(f"{P}/advance", {}, format="json"), 202)["run_id"]  # the quick start asks first
    [question] = _ok(owner.get(f"{P}/gates"))

    assert _ok(owner.post(f"{P}/runs/{run_id}/cancel"))["status"] == "cancelled"

    assert _ok(owner.get(f"{P}/gates")) == []
    refused = owner.post(f"{P}/gates/{question['id']}/answer",
                         {"answers": {"platform": "qidian", "genre": "xuanhuan"}}, format="json")
    assert refused.status_code == 409
