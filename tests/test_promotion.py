"""Promotion posts (seed 001): a full offline run fills every zone as the seed's schema says, the
zone access table holds, the sensitive filter catches and fixes listed words, no summary after the
promoted chapter reaches any prompt, platform limits hold, and posts leave and re-enter a project
with its tree. Eager Celery: the steps run inside the call that starts them."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from pipeline.runtime.blackboard import Blackboard, BlackboardAccessError
from pipeline.llm.offline import OfflineBackend
from pipeline.llm.offline import writers
from pipeline.models import PipelineRun, RunKind, RunStatus, SensitiveWordList
from pipeline.promotion.platforms import LIMITS, PLATFORMS, version_errors
from pipeline.promotion.run import STEPS, promotion_start, promotion_step_regenerate
from pipeline.promotion.snapshot import seed_snapshot, seed_snapshot_errors
from pipeline.runtime.runs import chapter_run_start
from projects.errors import InvalidData
from projects.filetree.errors import TreeError
from projects.filetree.export import export_to_path
from projects.filetree.importer import tree_import
from projects.filetree.source import read_tree
from projects.models import ChapterSummary, OrchestratorState, Project

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]


@pytest.fixture
def book(sample_project) -> Project:
    chapter_run_start(project_id=sample_project.pk, batch_remaining=2)
    sample_project.refresh_from_db()
    assert sample_project.last_completed_chapter == 3
    return sample_project


@pytest.fixture
def prompts(monkeypatch) -> list[tuple[str, str]]:
    """(stage, everything the request carried: prompt text and slice) of every LLM request."""
    seen: list[tuple[str, str]] = []
    real = OfflineBackend.complete

    def complete(self, request, on_text=None):
        text = "".join(b.text for b in request.system) + "".join(m.text for m in request.messages)
        seen.append((request.stage, text + json.dumps(dict(request.slice), ensure_ascii=False)))
        return real(self, request, on_text=on_text)

    monkeypatch.setattr(OfflineBackend, "complete", complete)
    return seen


def finished(run: PipelineRun) -> PipelineRun:
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, (run.status, run.error)
    return run


def test_a_full_run_fills_every_zone_as_the_seed_schema_says(book):
    run = finished(promotion_start(project_id=book.pk, target={"chapter": 2}, platform="wechat", style="humorous",
                                   constraints={"word_count": {"min": 10, "max": 600}, "tone": "轻松",
                                                "must_include": ["星火"], "must_avoid": ["剧透"]}))
    snapshot = seed_snapshot(run.blackboard)
    assert seed_snapshot_errors(snapshot) == []
    meta, content, control = snapshot["meta_zone"], snapshot["content_zone"], snapshot["control_zone"]
    assert (meta["platform"], meta["style"], meta["constraints"]["tone"]) == ("wechat", "humorous", "轻松")
    assert meta["intent"] and meta["topic"].startswith("《星火长夜》第2章") and meta["reference_summary"]
    assert set(content["hook"]) == {"variants", "selected", "title", "opening"}
    assert content["hook"]["selected"] == max(content["hook"]["variants"], key=lambda v: v["score"])["content"]
    assert set(content["body"]) == {"content", "sections", "key_points", "quotes"}
    assert content["cta"]["type"] in ("follow", "share", "comment", "save", "click") and content["cta"]["primary"]
    assert content["hashtags"] and all(not tag.startswith("#") for tag in content["hashtags"])
    assert set(content["platform_versions"]) == set(PLATFORMS)
    assert set(control["quality_scores"]) == {"virality", "hook_strength", "emotional_resonance", "platform_fit"}
    assert control["step_status"] == {step: "completed" for step in STEPS}
    assert (control["iteration_count"], control["current_stage"]) == (len(STEPS), "done")
    assert set(control["sensitive_filter"]) == {"passed", "findings", "fixes_applied"}
    # seed 001's lifecycle: complete() cleaned the temporary keys (the body worker's raw output)
    assert "staged_files" not in content and not any(key.startswith("_tmp") for zone in content.values()
                                                     if isinstance(zone, dict) for key in zone)
    book.refresh_from_db()
    assert book.orchestrator_state == OrchestratorState.WRITING  # a post runs beside the book


def test_each_step_keeps_to_the_zone_access_table():
    board = Blackboard()
    board.as_("orchestrator").initialise(meta={"intent": "x"}, steps=STEPS)
    worker, skill = board.as_("worker"), board.as_("skill")
    worker.write_content("hook", "variants", [])
    for forbidden in (lambda: worker.write_control("quality_scores.virality", 1), lambda: worker.write_meta("x", 1),
                      lambda: worker.read_content("hook", "variants"), lambda: worker.get_slice(["content.hook"]),
                      lambda: skill.write_control("step_status", {}), lambda: skill.snapshot(),
                      lambda: board.as_("middleware").update_step_status("promote:body", "completed")):
        with pytest.raises(BlackboardAccessError):
            forbidden()


def test_the_sensitive_filter_catches_and_fixes_listed_words(book):
    # one word in each kind of hook the title worker offers, so the best one carries one of them
    words = {"雪夜": "冬夜", "密信": "", "那一刀": "那一剑", "细节": "看点"}
    SensitiveWordList.objects.create(project=book, words=words)
    run = finished(promotion_start(project_id=book.pk, target={"chapters": [1, 2]}))
    content, control = run.blackboard["content"], run.blackboard["control"]
    texts = json.dumps([content["hook"]["selected"], content["platform_versions"], content["cta"]], ensure_ascii=False)
    assert not [word for word in words if word in texts]
    report = control["sensitive_filter"]
    assert report["passed"] is False
    found = {finding["word"] for finding in report["findings"] if finding["field"] == "hook.selected"}
    assert found and found <= set(words)
    for word in found:
        fix = f"hook.selected: 「{word}」→「{words[word]}」" if words[word] else f"hook.selected: 删去「{word}」"
        assert fix in report["fixes_applied"]


def test_no_summary_after_the_promoted_chapter_reaches_any_prompt(book, prompts):
    later = ChapterSummary.objects.get(project=book, chapter__number=3).text
    earlier = ChapterSummary.objects.get(project=book, chapter__number=2).text
    finished(promotion_start(project_id=book.pk, target={"chapter": 2}))
    assert {stage for stage, _ in prompts} == set(STEPS)
    distinctive = [line for line in later.splitlines() if line.strip() and line not in earlier][:5]
    assert distinctive
    for stage, text in prompts:
        for line in distinctive:
            assert line not in text, (stage, line)
    assert any(earlier.splitlines()[0] in text for _stage, text in prompts)


def test_platform_versions_are_held_to_their_limits(book, monkeypatch):
    def too_long(slice_, rng):
        version = {"title": "标" * 120, "body": "很长的正文。" * 600, "hashtags": [f"t{i}" for i in range(30)],
                   "word_count": 1, "emoji_density": "low"}
        return {"platform_versions": json.dumps({p: version for p in PLATFORMS}), "scores": '{"platform_fit": 0.5}'}

    monkeypatch.setitem(writers.WRITERS, "promote:platforms", too_long)
    run = finished(promotion_start(project_id=book.pk, target={"chapter": 1}, platform="twitter"))
    versions = run.blackboard["content"]["platform_versions"]
    for platform in PLATFORMS:
        assert version_errors(platform, versions[platform]) == [], platform
        assert len(versions[platform]["body"]) <= LIMITS[platform][1]
    assert versions["twitter"]["title"] == "" and len(versions["twitter"]["body"]) <= 280
    assert any("xiaohongshu: 标题截到 20 字" in fix for fix in run.blackboard["control"]["platform_fixes"])


def test_bad_requests_start_nothing(book):
    for kwargs in ({"target": {"chapter": 9}}, {"target": {}}, {"target": {"chapter": 1}, "platform": "weibo"},
                   {"target": {"chapter": 1}, "style": "angry"}, {"target": {"chapters": [3, 1]}},
                   {"target": {"chapter": 1}, "constraints": {"word_count": {"min": 900, "max": 10}}},
                   {"target": {"chapter": 1}, "constraints": {"must_include": "星火"}},
                   {"target": {"volume": 7}}, {"target": {"chapter": 1}, "intent": "x" * 301}):
        with pytest.raises(InvalidData):
            promotion_start(project_id=book.pk, **kwargs)
    assert not PipelineRun.objects.filter(project=book, kind=RunKind.PROMOTION).exists()


def test_a_failing_post_does_not_stop_the_book_and_a_step_can_be_regenerated(book, settings):
    settings.NOVELSITE_OFFLINE = {"faults": {"promote:cta": {"kind": "server_error", "rate": 1.0}}}
    run = promotion_start(project_id=book.pk, target={"chapter": 3})
    run.refresh_from_db()
    assert run.status == RunStatus.ERROR and run.blackboard["control"]["errors"]
    book.refresh_from_db()
    assert book.orchestrator_state == OrchestratorState.WRITING
    settings.NOVELSITE_OFFLINE = {}
    run = finished(promotion_step_regenerate(run_id=run.pk, step="promote:cta"))
    first_cta = run.blackboard["content"]["cta"]
    run = finished(promotion_step_regenerate(run_id=run.pk, step="promote:cta"))
    assert run.blackboard["history"]["cta.primary"][-1]["value"] == first_cta["primary"]
    assert run.blackboard["control"]["step_status"]["promote:platforms"] == "completed"


def test_posts_leave_with_the_tree_and_come_back(book, tmp_path):
    run = finished(promotion_start(project_id=book.pk, target={"volume": 1}))
    export_to_path(book, tmp_path / "tree")
    path = tmp_path / "tree" / "promotions" / f"{run.pk}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert seed_snapshot_errors(document["blackboard"]) == []
    report = tree_import(read_tree(tmp_path / "tree"), slug="copy")
    copy = PipelineRun.objects.get(project=report.project, kind=RunKind.PROMOTION)
    assert seed_snapshot(copy.blackboard) == seed_snapshot(run.blackboard)
    assert not report.project.extra_files.filter(path__startswith="promotions/").exists()

    document["blackboard"]["content_zone"]["cta"]["type"] = "subscribe"  # not in the seed's enum
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(TreeError, match=f"promotions/{run.pk}.json"):
        tree_import(read_tree(tmp_path / "tree"), slug="copy2")
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(TreeError, match=f"promotions/{run.pk}.json: invalid JSON"):
        tree_import(read_tree(tmp_path / "tree"), slug="copy3")
    assert not Project.objects.filter(slug__in=["copy2", "copy3"]).exists()


def test_novel_promote_prints_the_platform_versions(book, capsys):
    call_command("novel", "promote", "demo", "--chapter", "2", "--platform", "xiaohongshu")
    out = capsys.readouterr().out
    assert "[xiaohongshu]" in out and "[twitter]" in out and "#" in out
    call_command("novel", "--json", "promote", "demo", "--chapters", "1-2")
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["status"] == "done" and seed_snapshot_errors(data["snapshot"]) == []
    with pytest.raises(SystemExit):
        call_command("novel", "--json", "promote", "demo", "--chapter", "2", "--platform", "myspace")
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "invalid"


def test_promotions_over_the_api(book, make_user):
    from rest_framework.test import APIClient

    from projects.services.projects import membership_set_role

    editor, viewer, stranger = make_user("editor"), make_user("viewer"), make_user("stranger")
    membership_set_role(project=book, user=editor, role="editor")
    membership_set_role(project=book, user=viewer, role="viewer")

    def client(user):
        api = APIClient()
        api.force_authenticate(user)
        return api

    url = "/api/projects/demo/promotions"
    assert client(viewer).post(url, {"chapter": 2}, format="json").status_code == 403
    assert client(stranger).get(url).status_code == 404
    for payload in ({}, {"chapter": 2, "volume": 1}, {"chapter": 0}, {"chapter": 2, "platform": "myspace"},
                    {"chapters": [1]}, {"chapter": 99}, {"chapter": 2, "constraints": {"word_count": "lots"}}):
        response = client(editor).post(url, payload, format="json")
        assert response.status_code == 400, (payload, response.json())
    response = client(editor).post(url, {"chapter": 2, "platform": "twitter", "style": "humorous"}, format="json")
    assert response.status_code == 202 and response.json()["status"] == "done"
    run_id = response.json()["id"]
    detail = client(viewer).get(f"{url}/{run_id}").json()
    assert detail["steps"] == {step: "completed" for step in STEPS}
    assert seed_snapshot_errors(detail["snapshot"]) == []
    assert set(detail["snapshot"]["content_zone"]["platform_versions"]) == set(PLATFORMS)
    assert [row["id"] for row in client(viewer).get(url).json()] == [run_id]
    regenerate = f"{url}/{run_id}/regenerate"
    assert client(viewer).post(regenerate, {"step": "promote:cta"}, format="json").status_code == 403
    assert client(editor).post(regenerate, {"step": "promote:nope"}, format="json").status_code == 400
    assert client(editor).post(regenerate, {"step": "promote:cta"}, format="json").status_code == 202
    assert client(stranger).get(f"{url}/{run_id}").status_code == 404


def test_the_promotion_pages_start_show_and_regenerate_a_post(book, client, make_user):
    from projects.services.projects import membership_set_role

    editor = make_user("editor")
    membership_set_role(project=book, user=editor, role="editor")
    client.force_login(editor)
    response = client.post("/p/demo/promotions/", {"target_kind": "chapters", "target": "1-2", "platform": "wechat",
                                                   "style": "educational"})
    run = PipelineRun.objects.get(project=book, kind=RunKind.PROMOTION)
    assert response.status_code == 302 and response["Location"] == f"/p/demo/promotions/{run.pk}/"
    page = client.get(f"/p/demo/promotions/{run.pk}/").content.decode()
    for platform in PLATFORMS:
        assert f'id="version-{platform}"' in page
    assert 'class="copy"' in page and "promote:cta" in page
    assert client.post(f"/p/demo/promotions/{run.pk}/regenerate/", {"step": "promote:hashtags"}).status_code == 302
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and "hashtags" in run.blackboard["history"]
    for target in ("", "abc", "2-", "99"):  # refused with the reason, nothing started
        response = client.post("/p/demo/promotions/", {"target_kind": "chapter", "target": target}, follow=True)
        assert response.status_code == 200 and "messages" in response.context
    assert PipelineRun.objects.filter(project=book, kind=RunKind.PROMOTION).count() == 1
