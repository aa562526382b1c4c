"""The pipeline's own path (#18): a contradiction injected into a staged chapter before the judge is
caught by the checks and sends the chapter back to draft with the evidence, before commit; a chapter
that only remembers the retired character is not blocked; the judge's request carries the evidence."""
from __future__ import annotations

import json

import pytest

from pipeline.runtime.blackboard import Blackboard
from pipeline.models import PipelineRun
from pipeline.runtime.runs import chapter_run_start
from projects.models import Chapter, Character
from projects.sample_project import sample_project_create
from tests.test_pipeline import content

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]

ACTS = "夜深了，老先生推门走了进来，沉声道：“跟我走。”林枫愣住了，握紧了拳头。"
REMEMBERS = "林枫想起老先生当年的教诲，握紧了拳头。“老先生若在，定会笑我。”他低声说。"


def _judge_with_text(wakeups, text: str) -> PipelineRun:
    project = sample_project_create()
    Character.objects.filter(project=project, slug="chen-lao").update(status="retired", aliases=["老先生"])
    run = chapter_run_start(project_id=project.pk, batch_remaining=0)
    wakeups.run_until("judge")
    run.refresh_from_db()
    board = Blackboard(run.blackboard)
    board.as_("worker").write_content("chapter", "refined", text)  # the injected chapter
    PipelineRun.objects.filter(pk=run.pk).update(blackboard=board.to_dict())
    assert wakeups.step() == "judge"
    return run


def test_an_injected_contradiction_sends_the_chapter_back_before_commit(wakeups, backend_calls):
    run = _judge_with_text(wakeups, ACTS)
    gate = content(run, "gate", "result")
    assert gate["decision"] == "revise"
    assert any("老先生" in fix and "陈老" in fix for fix in gate["required_fixes"])
    assert wakeups.next_stage() == "draft"
    assert not Chapter.objects.filter(project=run.project, number=1).exists()
    [(_stage, judge_slice)] = [(s, sl) for s, sl in backend_calls if s == "judge"]
    evidence = judge_slice["evidence"]
    assert "陈老（又称：老先生）【已退场】" in evidence["roster"]
    assert any(c["name"] == "林枫" and c["location"] for c in evidence["cast_state"])
    assert any("老先生" in v for v in evidence["violations"])


def test_a_chapter_that_only_remembers_is_not_blocked_by_the_checks(wakeups):
    run = _judge_with_text(wakeups, REMEMBERS)
    checks = content(run, "evaluation", "checks")
    assert checks["violations"] == []
    assert any("陈老" in s for s in checks["suspicions"])
    assert not any("deterministic" in r for r in content(run, "gate", "result")["reasons"])


def test_unknown_names_under_the_platform_limit_reach_the_log_at_commit(wakeups):
    from projects.models import ExtraFile
    from projects.services.unknown_entities import UNKNOWN_ENTITIES_PATH

    project = sample_project_create()
    ExtraFile.objects.create(project=project, path="platform-profile.json", content=json.dumps(
        {"schema_version": 1, "platform": "qidian", "info_load": {"max_unknown_entities_per_chapter": 2}}))
    run = chapter_run_start(project_id=project.pk, batch_remaining=0)
    wakeups.run_until("judge")
    run.refresh_from_db()
    board = Blackboard(run.blackboard)
    text = board.as_("skill").read_content("chapter", "refined") or board.as_("skill").read_content("chapter", "draft")
    board.as_("worker").write_content("chapter", "refined", text + "\n林枫回头，看见王大锤扛着铁锤走上山来。")
    PipelineRun.objects.filter(pk=run.pk).update(blackboard=board.to_dict())
    wakeups.run_until("commit")
    assert wakeups.step() == "commit"
    assert Chapter.objects.filter(project=project, number=1).exists()
    lines = ExtraFile.objects.get(project=project, path=UNKNOWN_ENTITIES_PATH).content.splitlines()
    assert json.loads(lines[0])["chapter"] == 1
    assert [e["mention"] for e in json.loads(lines[0])["unknown_entities"]] == ["王大锤"]
