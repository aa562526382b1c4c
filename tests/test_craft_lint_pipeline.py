"""The craft lints in the chapter pipeline (issue #17 §2): refine gets the findings as targets and
the offline refiner fixes the hard ones; a hard finding left after refine gets one more refine,
then a revision, then a person; the judge reads the findings as Chinese text and the evaluation
carries the ``anti_ai`` section; a chapter with a hard finding never commits unless a person accepts it."""
from __future__ import annotations

import json

import pytest

from pipeline.chapter.pause import chapter_pause_resolve
from pipeline.chapter.craft.lints import lint_text
from pipeline.llm.offline.writers import WRITERS
from pipeline.models import GateQuestion, RunStatus
from pipeline.runtime.runs import chapter_run_start
from projects.models import Chapter, Evaluation, PipelineStage
from tests.test_pipeline import LLM_STAGES, NO_ROWS, content, project_with_contracts, stages_of, story_rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("eager_offline")]


@pytest.fixture
def requests(monkeypatch) -> list[tuple[str, dict, str]]:
    """(stage, slice, prompt text) of every request the offline backend answered."""
    from pipeline.llm.offline import OfflineBackend

    seen: list[tuple[str, dict, str]] = []
    real = OfflineBackend.complete

    def complete(self, request, on_text=None):
        prompt = "".join(b.text for b in request.system) + "".join(m.text for m in request.messages)
        seen.append((request.stage, dict(request.slice), prompt))
        return real(self, request, on_text=on_text)

    monkeypatch.setattr(OfflineBackend, "complete", complete)
    return seen


def _draft_with_marks(monkeypatch, *, times: int = 1):
    """The first ``times`` drafts carry an em dash, a Markdown separator and corner quotes."""
    real = WRITERS["draft"]
    calls = {"n": 0}

    def draft(slice_, rng):
        out = real(slice_, rng)
        calls["n"] += 1
        if calls["n"] <= times:
            head, _, rest = out["chapter"].partition("\n\n")
            out["chapter"] = head + "\n\n" + "他停了一下——又走了。\n\n---\n\n「走吧。」她说。\n\n" + rest
        return out

    monkeypatch.setitem(WRITERS, "draft", draft)


def _refiner_that_never_fixes(monkeypatch):
    """The refiner leaves the injected marks alone (and works as usual on any other text)."""
    real = WRITERS["refine"]
    monkeypatch.setitem(WRITERS, "refine", lambda slice_, rng: {"edits": "[]"} if "他停了一下——" in slice_[
        "chapter_text"] else real(slice_, rng))


def test_the_offline_refiner_fixes_the_hard_findings_it_is_given(monkeypatch, requests):
    _draft_with_marks(monkeypatch)
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and stages_of(run) == [*LLM_STAGES, "commit"]

    stage, slice_, prompt = next(r for r in requests if r[0] == "refine")
    rules = {t["rule"]: t for t in slice_["lint_targets"]}
    assert {"em_dash", "md_separator", "quote_format"} <= set(rules)
    dash = rules["em_dash"]["evidence"][0]
    assert slice_["chapter_text"][dash["start"]:dash["end"]] == "——"  # offsets into the text it edits
    assert "破折号" in prompt and "必须修改" in prompt  # the prompt reads them in Chinese

    text = Chapter.objects.get(project=project, number=1).text
    assert "——" not in text and "---" not in text and "「" not in text
    assert lint_text(text, expect_heading=False).hard == []


def test_a_hard_finding_left_after_refine_gets_one_more_refine_then_a_revision(monkeypatch, requests):
    _draft_with_marks(monkeypatch, times=1)  # the revision's draft is clean
    _refiner_that_never_fixes(monkeypatch)
    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()

    assert run.status == RunStatus.DONE
    assert stages_of(run) == ["draft", "summarize", "refine", "refine", *LLM_STAGES, "commit"]
    drafts = [s for stage, s, _ in requests if stage == "draft"]
    assert any("破折号" in fix for fix in drafts[1]["required_fixes"])  # the revision names what to fix
    chapter = Chapter.objects.get(project=project, number=1)
    assert "——" not in chapter.text
    assert chapter.evaluation.data["gate"]["revisions"] == 1
    project.refresh_from_db()
    assert (project.revision_count, project.pipeline_stage) == (0, PipelineStage.COMMITTED)


def test_a_chapter_with_a_hard_finding_does_not_commit_until_a_person_accepts_it(monkeypatch, settings, make_user):
    _draft_with_marks(monkeypatch, times=99)  # every draft has them
    _refiner_that_never_fixes(monkeypatch)
    project = project_with_contracts(3)
    project.gate_settings = {"max_revisions": 1}
    project.save(update_fields=["gate_settings"])
    run = chapter_run_start(project_id=project.pk)
    run.refresh_from_db()

    assert (run.status, run.stage) == (RunStatus.WAITING, "gate")
    assert stages_of(run) == ["draft", "summarize", "refine", "refine"] * 2  # never judged, never committed
    assert story_rows(project, 1) == NO_ROWS
    question = GateQuestion.objects.get(run=run)
    assert question.topic == "chapter.001.judge_pause" and "破折号" in question.spec["questions"][0]["question"]
    assert content(run, "gate", "result")["decision"] == "pause_for_user"

    chapter_pause_resolve(question_id=question.pk, choice="accept", user=make_user("editor"))
    run.refresh_from_db()
    assert run.status == RunStatus.DONE
    chapter = Chapter.objects.get(project=project, number=1)
    assert "——" in chapter.text  # a person accepted it as it is
    assert chapter.evaluation.force_passed is True


def test_the_judge_reads_readable_findings_and_the_evaluation_carries_anti_ai(monkeypatch, requests):
    real = WRITERS["draft"]

    def draft_with_soft_findings(slice_, rng):
        out = real(slice_, rng)
        head, _, rest = out["chapter"].partition("\n\n")
        out["chapter"] = head + "\n\n此外，他感到一阵愤怒。事实上，她看似平静，实则心乱如麻。\n\n" + rest
        return out

    monkeypatch.setitem(WRITERS, "draft", draft_with_soft_findings)
    project = project_with_contracts(3)
    chapter_run_start(project_id=project.pk)

    _, slice_, prompt = next(r for r in requests if r[0] == "judge")
    assert "narration_connector" in slice_["lint_rules"] and "sentence_pattern" in slice_["lint_rules"]
    assert "叙述连接词" in prompt and "AI 句式" in prompt and "疑似问题" in prompt
    assert "\\u53d9" not in prompt  # 叙 as an escape would be unreadable
    assert "\\u" not in prompt  # the checks and the evidence are readable too

    anti_ai = Evaluation.objects.get(project=project, chapter__number=1).data["anti_ai"]
    assert anti_ai["indicator_mode"] == "13-indicator" and len(anti_ai["indicator_breakdown"]) == 13
    assert anti_ai["statistical_profile"]["narration_connector_count"] >= 2
    patterns = {p["pattern_id"]: p for p in anti_ai["sentence_pattern_violations"]}
    assert patterns["SP-01"]["count"] >= 1 and patterns["SP-02"]["evidence"][0].startswith("看似")
    assert {"blacklist_hits", "punctuation_overuse", "structural_rule_violations",
            "detected_humanize_techniques", "blacklist_update_suggestions"} <= set(anti_ai)
    json.dumps(anti_ai)


def test_offline_drafts_pass_the_hard_lints():
    import random

    slice_ = {"chapter": 7, "title": "雪夜", "characters": [{"slug": "lin-feng", "display_name": "林枫"},
                                                           {"slug": "su-wan", "display_name": "苏婉"}],
              "objectives": ["完成「雪夜」的主要冲突", "找到钥匙"], "place": "雪原", "blacklist": ["不禁"]}
    for seed in range(20):
        chapter = WRITERS["draft"](slice_, random.Random(seed))["chapter"]
        assert lint_text(chapter, chapter=7).hard == [], seed


def test_commit_refuses_a_staged_chapter_with_a_hard_finding(wakeups):
    """Whatever route a staged text took (here: changed after the judge), commit lints it again."""
    from pipeline.runtime.blackboard import Blackboard
    from pipeline.models import PipelineRun

    project = project_with_contracts(3)
    run = chapter_run_start(project_id=project.pk)
    assert wakeups.run_until("commit") == LLM_STAGES
    run = PipelineRun.objects.get(pk=run.pk)
    board = Blackboard(run.blackboard)
    text = board.as_("skill").read_content("chapter", "refined")
    board.as_("skill").write_content("chapter", "refined", text.replace("。", "——", 1))
    run.blackboard = board.to_dict()
    run.save(update_fields=["blackboard"])

    assert wakeups.step() == "commit"
    run.refresh_from_db()
    assert (run.status, run.stage) == (RunStatus.QUEUED, "refine")
    assert story_rows(project, 1) == NO_ROWS
    errors = run.blackboard["control"]["errors"]
    assert errors[-1]["error_type"] == "hard_lint_findings" and "em_dash" in errors[-1]["message"]

    assert wakeups.drain() == ["refine", "judge", "commit"]  # the refiner fixes it, then it commits
    assert "——" not in Chapter.objects.get(project=project, number=1).text
