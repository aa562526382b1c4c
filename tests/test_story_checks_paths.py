"""The story checks on every path (#18): the judge stage's checks and the evidence its prompt shows,
``novel validate --tree`` and ``novel import-step`` on an exported tree, the foreshadowing ledger
refusing a second resolve (service and tree import), and ``logs/unknown-entities.jsonl``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from pipeline.chapter.evidence import chapter_checks, judge_evidence
from pipeline.chapter.context import chapter_context
from pipeline.jacquard.templates import render_string
from pipeline.prompts import default_source
from pipeline.steps.tree_validate import validate_step
from projects.errors import ForeshadowingAlreadyResolved
from projects.filetree.export import tree_files
from projects.filetree.importer import tree_import
from projects.filetree.source import read_zip
from projects.models import Character, ExtraFile, Foreshadowing, ForeshadowingEvent, StoryState
from projects.services.foreshadowing import foreshadowing_apply_ops
from projects.services.unknown_entities import UNKNOWN_ENTITIES_PATH, unknown_entities_append
from tests.test_filetree import zip_of

pytestmark = pytest.mark.django_db

DEAD_ACTS = "# 第1章 雪夜\n\n夜深了，老先生推门走了进来，沉声道：“跟我走。”林枫愣住了。\n"
DEAD_REMEMBERED = "# 第1章 雪夜\n\n林枫想起老先生当年的教诲，握紧了拳头。“老先生若在，定会笑我。”他低声说。\n"


@pytest.fixture
def project(sample_project):
    """The demo novel with 陈老 retired (called 老先生 too) and 林枫 holding a letter."""
    Character.objects.filter(project=sample_project, slug="chen-lao").update(status="retired", aliases=["老先生"])
    Character.objects.filter(project=sample_project, slug="lin-feng").update(aliases=["林少侠"])
    state = StoryState.objects.get(project=sample_project)
    state.data["characters"]["lin-feng"]["inventory"] = ["密信"]
    state.save(update_fields=["data"])
    Foreshadowing.objects.create(project=sample_project, fid="F-900", description="雪原上的脚印", status="resolved",
                                 last_updated_chapter=0)
    return sample_project


# --- the judge stage ----------------------------------------------------------------------------------

def test_the_judge_stage_checks_catch_a_retired_character_acting_by_alias(project):
    ctx = chapter_context(project, 1)
    report = chapter_checks(ctx, {"ops": []}, DEAD_ACTS)
    assert any("陈老" in v and "老先生" in v for v in report.violations)
    clean = chapter_checks(ctx, {"ops": []}, DEAD_REMEMBERED)
    assert not any("陈老" in v for v in clean.violations)
    assert any("陈老" in s for s in clean.suspicions)


def test_a_second_resolve_in_the_delta_is_caught_before_commit(project):
    ctx = chapter_context(project, 1)
    report = chapter_checks(ctx, {"ops": [{"op": "foreshadow", "path": "F-900", "value": "resolved"}]},
                            "林枫站在雪原上。")
    assert "伏笔 F-900 已经回收过，本章不能再次回收" in report.violations


def test_the_judge_prompt_shows_state_roster_aliases_ledger_and_checks_in_chinese(project):
    ctx = chapter_context(project, 1)
    delta = {"ops": [{"op": "foreshadow", "path": "F-900", "value": "advanced"}]}
    report = chapter_checks(ctx, delta, DEAD_ACTS)
    evidence = judge_evidence(ctx, delta, report)
    from pipeline.chapter.stages.judge import platform_slice
    prompt = render_string(default_source("judge.j2"), {"chapter": 1, "objectives": ctx.objectives,
                                                         "checks": report.as_dict(), "evidence": evidence,
                                                         **platform_slice(project, 1, DEAD_ACTS)})
    assert "林枫：位置 北境雪原；物品 密信" in prompt
    assert "陈老（又称：老先生）【已退场】" in prompt and "林枫（又称：林少侠）" in prompt
    assert "F-900：已回收，雪原上的脚印" in prompt
    assert "已确认的违规" in prompt and "老先生" in prompt
    assert "\\u" not in prompt  # readable Chinese, not escapes


# --- novel validate --tree and novel import-step ------------------------------------------------------

def _tree_with_chapter(project, tmp_path: Path, text: str) -> Path:
    call_command("novel", "export", project.slug, str(tmp_path / "tree"))
    tree = tmp_path / "tree"
    staging = tree / "staging"
    (staging / "chapters").mkdir(parents=True, exist_ok=True)
    (staging / "chapters" / "chapter-001.md").write_text(text, encoding="utf-8")
    (staging / "evaluations").mkdir(parents=True, exist_ok=True)
    (staging / "evaluations" / "chapter-001-eval.json").write_text(json.dumps(
        {"chapter": 1, "overall": 4.5, "recommendation": "pass",  # the demo's platform requires a hook verdict
         "hook": {"present": True, "type": "question", "evidence": "门外是谁？", "reason": "留下悬念", "strength": 4}}),
        encoding="utf-8")
    return tree


def test_validate_tree_blocks_a_judge_step_with_a_violation_and_passes_a_mention(project, tmp_path, capsys):
    tree = _tree_with_chapter(project, tmp_path, DEAD_ACTS)
    check = validate_step(tree, "chapter:001:judge")
    assert not check.ok and any("陈老" in e and "老先生" in e for e in check.errors)
    with pytest.raises(SystemExit):
        call_command("novel", "--json", "validate", "chapter:001:judge", "--tree", str(tree))
    assert "老先生" in capsys.readouterr().out

    (tree / "staging" / "chapters" / "chapter-001.md").write_text(DEAD_REMEMBERED, encoding="utf-8")
    check = validate_step(tree, "chapter:001:judge")
    assert check.ok, check.errors
    assert any("陈老" in w for w in check.warnings)


def test_validate_tree_reads_a_tree_without_aliases(project, tmp_path):
    tree = _tree_with_chapter(project, tmp_path, "# 第1章\n\n陈老推门走了进来。\n")
    body_path = tree / "characters" / "retired" / "chen-lao.json"
    body = json.loads(body_path.read_text(encoding="utf-8"))
    body.pop("aliases")
    body_path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    check = validate_step(tree, "chapter:001:judge")
    assert any("陈老" in e for e in check.errors)


def test_import_step_refuses_a_judge_step_whose_chapter_breaks_the_story(project, tmp_path, capsys):
    tree = _tree_with_chapter(project, tmp_path, DEAD_ACTS)
    capsys.readouterr()
    with pytest.raises(SystemExit):
        call_command("novel", "--json", "import-step", project.slug, str(tree), "chapter:001:judge")
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "step_validation_failed" and "老先生" in error["message"]


# --- the ledger refuses a second resolve --------------------------------------------------------------

def test_the_service_refuses_a_second_resolve_and_records_nothing(project):
    item = Foreshadowing.objects.create(project=project, fid="F-901", description="古剑")
    foreshadowing_apply_ops(project=project, chapter=3, storyline_slug="main-arc",
                            ops=[{"op": "foreshadow", "path": "F-901", "value": "resolved"}])
    foreshadowing_apply_ops(project=project, chapter=3, storyline_slug="main-arc",  # the same fact again: fine
                            ops=[{"op": "foreshadow", "path": "F-901", "value": "resolved"}])
    with pytest.raises(ForeshadowingAlreadyResolved) as caught:
        foreshadowing_apply_ops(project=project, chapter=5, storyline_slug="main-arc",
                                ops=[{"op": "foreshadow", "path": "F-901", "value": "resolved"}])
    assert "F-901 (3)" in caught.value.message
    assert list(ForeshadowingEvent.objects.filter(foreshadowing=item).values_list("chapter", "action")) == [
        (3, "resolved")]
    assert Foreshadowing.objects.get(pk=item.pk).last_updated_chapter == 3


def test_a_tree_that_recorded_a_resolve_twice_is_refused_on_import(project):
    files = dict(tree_files(project))
    files["foreshadowing/global.json"] = json.dumps({"foreshadowing": [
        {"id": "F-1", "description": "d", "scope": "short", "status": "resolved", "planted_chapter": 1,
         "planted_storyline": "main-arc", "target_resolve_range": [1, 5], "last_updated_chapter": 4,
         "history": [{"chapter": 1, "action": "planted"}, {"chapter": 3, "action": "resolved"},
                     {"chapter": 4, "action": "resolved"}]}]}, ensure_ascii=False).encode()
    with pytest.raises(Exception) as caught:
        tree_import(read_zip(zip_of(files)), slug="twice")
    assert "resolved twice" in str(caught.value)


# --- logs/unknown-entities.jsonl ---------------------------------------------------------------------

def test_unknown_names_are_appended_once_per_chapter_and_exported(project):
    entities = [{"mention": "王大锤", "context": "王大锤扛着铁锤", "suggested_type": "character"},
                {"mention": ""}, "junk", {"mention": "李四", "suggested_type": "alien"}]
    assert unknown_entities_append(project=project, chapter=2, entities=entities)
    assert not unknown_entities_append(project=project, chapter=2, entities=entities)  # already logged
    assert not unknown_entities_append(project=project, chapter=3, entities=[])
    lines = ExtraFile.objects.get(project=project, path=UNKNOWN_ENTITIES_PATH).content.splitlines()
    assert [json.loads(line) for line in lines] == [{"chapter": 2, "unknown_entities": [
        {"mention": "王大锤", "context": "王大锤扛着铁锤", "suggested_type": "character"},
        {"mention": "李四", "context": "", "suggested_type": "character"}]}]
    assert UNKNOWN_ENTITIES_PATH in dict(tree_files(project))


def test_the_gate_page_shows_the_suspicions_beside_the_violations():
    from django.template.loader import render_to_string
    from django.utils import translation

    checks = {"violations": ["已退场角色「陈老」在场景中行动或说话：「老先生推门走了进来」"],
              "warnings": [],
              "suspicions": [("已退场角色「陈老」在对话、回忆或闪回中被提及，"
                              "请确认只是提及：「林枫想起老先生」")]}
    with translation.override("zh-hans"):
        html = render_to_string("projects/_checks.html", {"checks": checks})
    assert "交由评审判断" in html and "林枫想起老先生" in html and "老先生推门走了进来" in html
    with translation.override("en"):
        assert "For the judge to weigh" in render_to_string("projects/_checks.html", {"checks": checks})
