"""The platform at the gate (issue #17 §1): the genre weight profile gives ``overall``, the judge's
hook verdict is validated and the hook policy applied (a missing or weak hook sends the chapter
back with a Chinese fix), the golden-chapter gates of chapters 1–3 are checked, the offline judge
answers within the policy, and the draft's length comes from the profile."""
from __future__ import annotations

import json
import random

import pytest
from django.urls import reverse

from pipeline.chapter.quality_gate import GateSettings, decide, recompute_overall
from pipeline.llm.offline.writers import WRITERS
from pipeline.models import RunStatus
from pipeline.chapter.platform_rules import (
    gate_settings_for,
    golden_gates_evaluate,
    hook_failures,
    hook_field_problems,
    platform_review,
)
from pipeline.runtime.runs import chapter_run_start
from projects.filetree.export import tree_files
from projects.models import Evaluation, Project
from projects.platforms.limits import scoring_weights
from projects.schemas import SCORE_DIMENSIONS
from projects.services.platforms import project_platform_update
from projects.services.projects import project_create
from tests.conftest import member_client
from tests.test_pipeline import project_with_contracts
from tests.test_platform_tree import init_qidian_tree
from tests.test_filetree import import_files

HOOK = {"present": True, "type": "question", "evidence": "他回头时，雪地里多了一行脚印。", "reason": "悬念",
        "strength": 4}
POLICY = {"required": True, "min_strength": 3, "allowed_types": ["question", "twist_reveal"],
          "fix_strategy": "hook-fix"}


def evaluation(score: float = 4.5, **extra) -> dict:
    return {"chapter": 5, "overall": score, "recommendation": "pass",
            "scores": {dim: {"score": score} for dim in SCORE_DIMENSIONS}, **extra}


# --- the hook fields and the hook policy -------------------------------------------------------------


def test_a_complete_hook_verdict_is_valid_in_both_evaluation_shapes():
    assert hook_field_problems(evaluation(hook=HOOK)) == []
    assert hook_field_problems({"eval_used": evaluation(hook=HOOK), "metadata": {}}) == []
    no_strength = {k: v for k, v in HOOK.items() if k != "strength"}  # the score may carry the strength
    assert hook_field_problems(evaluation(hook=no_strength, scores={"hook_strength": {"score": 4}})) == []


@pytest.mark.parametrize("hook, problem", [
    (None, "hook: must be an object"),
    ("有钩子", "hook: must be an object"),
    ({**HOOK, "present": "yes"}, "hook.present"),
    ({**HOOK, "type": ""}, "hook.type"),
    ({**HOOK, "evidence": "字" * 121}, "at most 120 characters"),
    ({**HOOK, "strength": 9}, "hook.strength"),
    ({**HOOK, "strength": True}, "hook.strength"),
    ({**HOOK, "reason": 3}, "hook.reason"),
])
def test_malformed_hook_fields_are_named(hook, problem):
    assert any(problem in p for p in hook_field_problems(evaluation(hook=hook)))


@pytest.mark.parametrize("hook, words", [
    ({**HOOK, "present": False, "type": "", "evidence": ""}, "章末钩子缺失"),
    ({**HOOK, "strength": 2}, "章末钩子太弱（2 分，本平台至少 3 分）"),
    ({**HOOK, "type": "emotional_cliff"}, "章末钩子类型「情绪悬崖」不适合本平台"),
    (None, "评审未给出有效的钩子判断"),
])
def test_a_failing_hook_gives_a_chinese_fix_naming_the_allowed_types(hook, words):
    fixes = hook_failures(evaluation(hook=hook), POLICY)
    assert len(fixes) == 1 and words in fixes[0] and "悬念提问、反转揭示" in fixes[0]


def test_no_hook_is_needed_where_the_platform_does_not_require_one():
    assert hook_failures(evaluation(), {**POLICY, "required": False}) == []
    assert hook_failures(evaluation(hook=HOOK), POLICY) == []


def test_a_hook_failure_sends_a_good_chapter_back_with_the_fix_then_pauses_when_revisions_are_spent():
    weak = evaluation(hook={**HOOK, "strength": 1})
    fixes = hook_failures(weak, POLICY)
    result = decide(weak, revision_count=0, policy_failures=fixes)
    assert result.decision == "revise" and fixes[0] in result.required_fixes
    assert decide(weak, revision_count=2, policy_failures=fixes).decision == "pause_for_user"
    assert decide(evaluation(hook=HOOK), revision_count=0).decision == "pass"


# --- golden-chapter gates ---------------------------------------------------------------------------------

GATES = [{"id": "immersion_min_score", "requirement": "代入感不低于 3.5",
          "threshold": {"metric": "scores.immersion.score", "operator": ">=", "value": 3.5}},
         {"id": "world_hook", "requirement": "立住独特设定"},
         {"id": "goal_clear", "requirement": "主角目标清楚"}]


def test_golden_gates_take_the_judges_checks_but_score_thresholds_from_the_scores():
    judged = evaluation(4.0, golden_chapter_gates={"checks": [
        {"id": "immersion_min_score", "status": "pass"},  # contradicted by its own score below
        {"id": "world_hook", "status": "fail", "detail": "设定不清"}]})
    judged["scores"]["immersion"] = {"score": 3}
    golden = golden_gates_evaluate(judged, GATES, platform="qidian", genre="xuanhuan", chapter=1)
    assert golden["activated"] is True and golden["passed"] is False
    assert golden["failed_gate_ids"] == ["immersion_min_score", "world_hook"]
    assert golden["warnings"] == ["the judge did not report golden gate goal_clear"]
    statuses = {c["id"]: c["status"] for c in golden["checks"]}
    assert statuses == {"immersion_min_score": "fail", "world_hook": "fail", "goal_clear": "pass"}


# --- the project's platform at the gate ---------------------------------------------------------------------


@pytest.mark.django_db
def test_the_genre_weight_profile_decides_overall():
    project = project_create(owner=None, slug="w", title="书", target_platform="jinjiang", genre_drive_type="character")
    settings = gate_settings_for(project)
    assert settings.scoring_weights == scoring_weights(project)
    scores = {dim: {"score": 5 if dim == "character" else 3} for dim in SCORE_DIMENSIONS}
    # character weighs more on a character-driven jinjiang book than in the facts' default weights
    assert recompute_overall(scores, settings.scoring_weights) > recompute_overall(scores)


@pytest.mark.django_db
def test_the_projects_own_gate_settings_win_over_the_platform():
    project = project_create(owner=None, slug="w", title="书", target_platform="qidian")
    project_platform_update(project=project, editor=None)
    profile = {**project.platform_profile, "scoring": {**project.platform_profile["scoring"], "max_revisions": 4}}
    Project.objects.filter(pk=project.pk).update(platform_profile=profile,
                                                 gate_settings={"scoring_weights": {"pacing": 0.5}})
    project.refresh_from_db()
    settings = gate_settings_for(project)
    assert settings.max_revisions == 4  # facts §11: platform-profile.scoring.max_revisions
    assert settings.scoring_weights["pacing"] == 0.5
    Project.objects.filter(pk=project.pk).update(gate_settings={"max_revisions": 1})
    project.refresh_from_db()
    assert gate_settings_for(project).max_revisions == 1
    assert GateSettings.from_project_settings({}).scoring_weights == GateSettings().scoring_weights


@pytest.mark.django_db
def test_a_tree_made_by_novel_init_platform_qidian_has_its_hook_policy_applied():
    project = import_files(init_qidian_tree(), slug="wucheng").project
    twist = evaluation(hook={**HOOK, "type": "emotional_cliff"})  # not in this tree's allowed_types
    fixes = platform_review(twist, project, chapter=7)
    assert decide(twist, revision_count=0, settings=gate_settings_for(project),
                  policy_failures=fixes).decision == "revise"
    assert "情绪悬崖" in fixes[0]
    opening = evaluation(hook=HOOK)
    opening["scores"]["immersion"] = {"score": 3}
    fixes = platform_review(opening, project, chapter=1)  # the tree's own golden gate for chapter 1
    assert opening["golden_chapter_gates"]["failed_gate_ids"] == ["immersion_min_score"]
    assert any("黄金三章要求未达到：代入感不低于 3.5" in fix for fix in fixes)


# --- the offline judge and the pipeline ---------------------------------------------------------------------


@pytest.fixture
def eager(settings):
    """The pipeline in-process, as tests/test_pipeline.py drives it."""
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.mark.parametrize("mode", ["normal", "revise", "low"])
def test_the_offline_judge_answers_within_the_policy_and_its_own_golden_verdicts(mode):
    slice_ = {"chapter": 2, "objectives": [], "score_mode": mode, "hook_policy": {**POLICY, "min_strength": 4},
              "chapter_ending": "门外传来第三声敲门。", "golden_gates": GATES, "platform": "qidian"}
    result = json.loads(WRITERS["judge"](slice_, random.Random(7))["evaluation"])
    assert hook_field_problems(result) == [] and hook_failures(result, slice_["hook_policy"]) == []
    assert result["hook"]["type"] in POLICY["allowed_types"] and result["hook"]["evidence"] == "门外传来第三声敲门。"
    golden = golden_gates_evaluate(result, GATES, platform="qidian", genre="", chapter=2)
    assert golden["passed"] is True
    overall = recompute_overall(result["scores"])
    assert {"normal": 4.0 <= overall, "revise": 3.0 <= overall < 3.5, "low": 2.0 <= overall < 3.0}[mode]


@pytest.mark.django_db(transaction=True)
def test_a_chapter_without_a_hook_goes_back_to_the_writer_with_the_hook_fix(monkeypatch, backend_calls, eager,
                                                                             make_user):
    real_judge = WRITERS["judge"]
    judged = []

    def judge_without_hook_first(slice_, rng):
        result = json.loads(real_judge(slice_, rng)["evaluation"])
        if not judged:  # the first verdict: a flat ending
            result["hook"] = {"present": False, "type": "", "evidence": "", "reason": "平铺收尾", "strength": 1}
        judged.append(slice_)
        return {"evaluation": json.dumps(result, ensure_ascii=False)}

    monkeypatch.setitem(WRITERS, "judge", judge_without_hook_first)
    project = project_with_contracts(3)  # the demo novel: qidian
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    drafts = [s for stage, s in backend_calls if stage == "draft"]
    assert len(drafts) == 2 and any("章末钩子缺失" in fix for fix in drafts[1]["required_fixes"])
    assert drafts[0]["target_chars"] == 3000  # qidian: the middle of 2500–3500
    assert drafts[0]["hook_types"][0] == "悬念提问"
    assert judged[0]["hook_policy"]["required"] is True and judged[0]["golden_gates"]
    stored = Evaluation.objects.get(project=project, chapter__number=1).data
    used = stored.get("eval_used", stored)
    assert used["hook"]["present"] is True and used["golden_chapter_gates"]["passed"] is True
    assert used["platform"] == "qidian" and abs(sum(used["scoring_weights"].values()) - 1) < 1e-3
    # the exported tree carries what the original tool's validate and commit check (facts §7.1, §10.11)
    tree = dict(tree_files(Project.objects.get(pk=project.pk)))
    exported = json.loads(tree["evaluations/chapter-001-eval.json"])
    assert json.loads(tree["platform-profile.json"])["hook_policy"]["required"] is True
    policy = json.loads(tree["platform-profile.json"])["hook_policy"]
    assert hook_field_problems(exported) == [] and hook_failures(exported, policy) == []
    assert len(exported.get("eval_used", exported)["hook"]["evidence"]) <= 120
    # the reader sees the hook and the golden gates in words
    page = member_client(project, make_user, "viewer").get(
        reverse("chapter-read", args=[project.slug, 1])).content.decode()
    assert "章末钩子" in page and "黄金三章门槛" in page and "代入感评分不低于 3.5" in page
    assert any(word in page for word in ("悬念提问", "威胁揭示", "反转揭示", "情绪悬崖", "下一目标"))


@pytest.mark.django_db(transaction=True)
def test_the_draft_length_follows_an_edited_profile(backend_calls, eager):
    project = project_with_contracts(3)
    project_platform_update(project=project, editor=None, platform="fanqie")
    project_platform_update(project=project, editor=None, numbers={"word_target_min": 2000, "word_target_max": 2400})
    chapter_run_start(project_id=project.pk)
    drafts = [s for stage, s in backend_calls if stage == "draft"]
    assert drafts[0]["target_chars"] == 2200
