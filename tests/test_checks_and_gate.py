"""pipeline.chapter.quality_gate, pipeline.chapter.prejudge_checks and pipeline.chapter.style_drift: pure
functions, no database."""
from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.chapter import prejudge_checks as checks
from pipeline.chapter import style_drift
from pipeline.chapter import quality_gate as gate
from pipeline.chapter.quality_gate import GateSettings, ScoreError, decide, recompute_overall
from projects.json_validation import json_issues
from projects.text_stats import count_chars
from projects.schemas import DEFAULT_SCORE_WEIGHTS, SCORE_DIMENSIONS

# --- helpers -------------------------------------------------------------------------------------------


def scores(value: float = 4.0, **overrides: float) -> dict:
    out = {dim: {"score": value, "weight": 0.5, "reason": f"{dim} 的理由"} for dim in SCORE_DIMENSIONS}
    for dim, score in overrides.items():
        out[dim] = {"score": score, "reason": f"{dim} 的理由"}
    return out


def evaluation(value: float = 4.0, *, l1=(), l2=(), l3=(), ls=(), fixes=(), overall=None, **extra) -> dict:
    return {
        "chapter": 7,
        "contract_verification": {"l1_checks": list(l1), "l2_checks": list(l2), "l3_checks": list(l3),
                                  "ls_checks": list(ls), "has_violations": bool(l1 or l2 or l3 or ls)},
        "scores": scores(value),
        "overall": value if overall is None else overall,
        "recommendation": "pass",
        "required_fixes": list(fixes),
        **extra,
    }


def violation(rule_id="W-001", confidence="high", status="violation", **extra) -> dict:
    return {"rule_id": rule_id, "status": status, "confidence": confidence, "detail": f"{rule_id} 被违反", **extra}


# --- gate: the decision table ------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "revisions", "expected"), [
    (4.0, 0, "pass"),
    (4.6, 2, "pass"),
    (3.7, 0, "polish"),
    (3.5, 1, "polish"),
    (3.7, 2, "force_passed"),  # polish with the budget spent
    (3.2, 0, "revise"),
    (3.0, 1, "revise"),
    (3.2, 2, "force_passed"),  # revise with the budget spent
    (2.5, 0, "pause_for_user"),
    (2.0, 2, "pause_for_user"),
    (1.5, 0, "pause_for_user_force_rewrite"),
    (1.0, 2, "pause_for_user_force_rewrite"),
])
def test_score_bands(value, revisions, expected) -> None:
    result = decide(evaluation(value), revision_count=revisions, settings=GateSettings())
    assert result.decision == expected
    assert result.overall == value
    assert result.force_passed is (expected == "force_passed")
    assert (result.required_fixes == []) is (expected in ("pass", "force_passed"))
    assert result.reasons


def test_high_violation_forces_revise_then_pause() -> None:
    ev = evaluation(4.8, l1=[violation("W-001")])
    first = decide(ev, revision_count=0)
    assert first.decision == "revise" and not first.force_passed
    assert first.required_fixes == ["[W-001] W-001 被违反"]
    assert any("W-001" in r for r in first.reasons)
    assert decide(ev, revision_count=2).decision == "pause_for_user"


@pytest.mark.parametrize("level", ["l1", "l2", "l3"])
def test_each_contract_level_counts(level) -> None:
    ev = evaluation(4.5, **{level: [violation("C-X-001")]})
    assert decide(ev, revision_count=0).decision == "revise"
    assert gate.high_confidence_violations(ev)[0]["level"] == level


def test_soft_ls_violation_only_warns() -> None:
    ev = evaluation(4.2, ls=[violation("LS-002", constraint_type="soft")])
    result = decide(ev, revision_count=0)
    assert result.decision == "pass"
    assert gate.high_confidence_violations(ev) == []
    assert any("LS-002" in r and r.startswith("warning") for r in result.reasons)


@pytest.mark.parametrize("extra", [{"constraint_type": "hard"}, {}, {"constraint_type": None}])
def test_hard_or_missing_constraint_type_ls_violation_counts(extra) -> None:
    ev = evaluation(4.2, ls=[violation("LS-001", **extra)])
    assert decide(ev, revision_count=0).decision == "revise"


@pytest.mark.parametrize("item", [violation(confidence="medium"), violation(confidence="low"),
                                  violation(status="violation_suspected")])
def test_lower_confidence_or_suspected_only_warns(item) -> None:
    result = decide(evaluation(4.1, l2=[item]), revision_count=0)
    assert result.decision == "pass"
    assert any(r.startswith("warning") for r in result.reasons)


def test_high_violation_wins_over_a_low_score_and_force_pass_wins_over_all() -> None:
    ev = evaluation(1.2, l1=[violation()])
    assert decide(ev, revision_count=0).decision == "revise"
    forced = decide(ev, revision_count=5, force_pass=True)
    assert forced.decision == "force_passed" and forced.force_passed


def test_golden_chapter_failure_counts_like_a_violation() -> None:
    failing = evaluation(4.5, golden_chapter_gates={"activated": True, "passed": False, "failed_gate_ids": ["G1"]})
    assert decide(failing, revision_count=0).decision == "revise"
    inactive = evaluation(4.5, golden_chapter_gates={"activated": False, "passed": False})
    assert decide(inactive, revision_count=0).decision == "pass"


@pytest.mark.parametrize("bad", [math.nan, math.inf, "4", None, 0, 6])
def test_unusable_score_forces_rewrite(bad) -> None:
    ev = evaluation(4.5)
    ev["scores"]["pacing"]["score"] = bad
    result = decide(ev, revision_count=0)
    assert result.decision == "pause_for_user_force_rewrite"
    assert result.overall is None


def test_missing_dimension_forces_rewrite_and_recompute_raises() -> None:
    ev = evaluation(4.5)
    del ev["scores"]["immersion"]
    assert decide(ev, revision_count=0).decision == "pause_for_user_force_rewrite"
    with pytest.raises(ScoreError, match="immersion"):
        recompute_overall(ev["scores"], DEFAULT_SCORE_WEIGHTS)


def test_models_overall_is_ignored() -> None:
    # seed 000 §9.2's example: the model wrote 3.78, the weighted sum is 3.82
    seed = {"plot_logic": 4, "character": 4, "immersion": 4, "foreshadowing": 3, "pacing": 4,
            "style_naturalness": 4, "emotional_impact": 3, "storyline_coherence": 4}
    assert recompute_overall({d: {"score": s} for d, s in seed.items()}) == 3.82
    assert recompute_overall(seed) == 3.82  # bare numbers too
    claims_pass = evaluation(3.2, overall=4.9)
    result = decide(claims_pass, revision_count=0)
    assert (result.decision, result.overall) == ("revise", 3.2)


def test_recompute_normalises_weights_and_handles_optional_hook() -> None:
    doubled = {dim: w * 2 for dim, w in DEFAULT_SCORE_WEIGHTS.items()}
    s = scores(3.0, plot_logic=5.0)
    assert recompute_overall(s, doubled) == recompute_overall(s, DEFAULT_SCORE_WEIGHTS) == 3.36
    with_hook = {**DEFAULT_SCORE_WEIGHTS, "hook_strength": 0.2}
    assert recompute_overall(s, with_hook) == 3.36  # weighted but unscored: dropped, the rest renormalised
    assert recompute_overall({**s, "hook_strength": {"score": 1}}, with_hook) == 2.97
    assert recompute_overall({**s, "hook_strength": {"score": 1}}) == 3.36  # default weight 0: ignored
    with pytest.raises(ScoreError):
        recompute_overall(s, {"plot_logic": -1})
    with pytest.raises(ScoreError):
        recompute_overall(s, {"plot_logic": 0})


def test_wrapped_evaluation_uses_eval_used() -> None:
    inner = evaluation(3.7)
    wrapped = {"chapter": 7, "eval_used": inner, "metadata": {"gate": {"decision": "pass"}}}
    assert decide(wrapped, revision_count=0).decision == "polish"
    assert recompute_overall(wrapped) == recompute_overall(inner) == 3.7
    with_violation = {"eval_used": evaluation(4.5, l3=[violation("OBJ-1")])}
    assert decide(with_violation, revision_count=0).decision == "revise"
    # the dual judge's system overall_final (min of both judges) is respected when lower
    dual = {"eval_used": {**evaluation(4.2), "overall_final": 3.6}}
    assert (decide(dual, revision_count=0).decision, decide(dual, revision_count=0).overall) == ("polish", 3.6)


def test_custom_thresholds_and_weights() -> None:
    settings = GateSettings.from_project_settings({
        "pass_threshold": 4.5, "polish_threshold": 4.0, "revise_threshold": 3.5, "pause_threshold": 2.5,
        "max_revisions": 0, "scoring_weights": {"plot_logic": 1.0}})
    assert settings.scoring_weights["character"] == DEFAULT_SCORE_WEIGHTS["character"]  # merged over defaults
    assert decide(evaluation(4.2), revision_count=0, settings=settings).decision == "force_passed"  # polish, max 0
    assert decide(evaluation(2.2), revision_count=0, settings=settings).decision == "pause_for_user_force_rewrite"
    only_plot = GateSettings(scoring_weights={"plot_logic": 1.0})
    ev = evaluation(2.0)
    ev["scores"]["plot_logic"]["score"] = 4.5
    assert decide(ev, revision_count=0, settings=only_plot).decision == "pass"
    assert GateSettings.from_project_settings(None) == GateSettings()
    assert GateSettings.from_project_settings({}).max_revisions == 2


def test_deterministic_violation_forces_revise() -> None:
    result = decide(evaluation(4.8), revision_count=0, deterministic_violations=["已退场角色「老王」出现"])
    assert result.decision == "revise"
    assert result.required_fixes == ["已退场角色「老王」出现"]
    assert decide(evaluation(4.8), revision_count=2, deterministic_violations=["x"]).decision == "pause_for_user"


def test_required_fixes_come_first_and_deterministic_ones_are_kept() -> None:
    fixes = [{"target": "第 3 段", "instruction": "补充动机"}, "删去重复的比喻", {"instruction": ""}, "删去重复的比喻"]
    result = decide(evaluation(3.2, fixes=fixes, l1=[violation()]), revision_count=0,
                    deterministic_violations=["伏笔 F-001 缺少操作"])
    assert result.required_fixes == ["第 3 段：补充动机", "删去重复的比喻", "伏笔 F-001 缺少操作"]


def test_fixes_fall_back_to_high_violations_at_most_five() -> None:
    items = [violation(f"W-00{i}") for i in range(1, 8)]
    result = decide(evaluation(4.0, l1=items), revision_count=0)
    assert result.required_fixes == [f"[W-00{i}] W-00{i} 被违反" for i in range(1, 6)]


def test_fixes_fall_back_to_the_two_lowest_dimensions() -> None:
    ev = evaluation(3.6)
    ev["scores"]["pacing"] = {"score": 2, "reason": "节奏拖沓"}
    ev["scores"]["immersion"] = {"score": 2.5, "reason": "代入感弱"}
    ev["scores"]["character"] = {"score": 2.5, "reason": "人物单薄"}  # ties: dimension order decides
    result = decide(ev, revision_count=0)
    assert result.decision == "revise"
    assert result.required_fixes == ["pacing（2 分）：节奏拖沓", "character（2.5 分）：人物单薄"]


def test_gate_result_as_dict_is_json() -> None:
    result = decide(evaluation(3.7), revision_count=0)
    assert json.loads(json.dumps(result.as_dict()))["decision"] == "polish"


# --- checks: blacklist ------------------------------------------------------------------------------------


def test_blacklist_longest_first_masks_shorter_words() -> None:
    bl = {"words": ["微微", "嘴角微微上扬"]}
    report = checks.blacklist_hits("他嘴角微微上扬，眼睛微微眯起。", bl)
    assert report.hits == [{"word": "嘴角微微上扬", "count": 1}, {"word": "微微", "count": 1}]
    assert report.total_hits == 2
    assert checks.blacklist_hits("风很大。", bl).total_hits == 0


@pytest.mark.parametrize("whitelist", [["微微"], {"words": ["微微"]}])
def test_blacklist_whitelist_excludes(whitelist) -> None:
    bl = {"words": ["微微", "嘴角微微上扬"], "whitelist": whitelist}
    report = checks.blacklist_hits("他嘴角微微上扬，眼睛微微眯起。", bl)
    assert report.hits == [{"word": "嘴角微微上扬", "count": 1}]


def test_whitelisted_phrase_masks_a_shorter_blacklisted_word() -> None:
    report = checks.blacklist_hits("她微笑着，又笑了。", {"words": ["笑"], "whitelist": ["微笑"]})
    assert report.hits == [{"word": "笑", "count": 1}]


def test_narration_only_is_skipped_inside_quotes() -> None:
    bl = {"categories": {"narration_connector": [{"word": "与此同时", "context": "narration_only"}]}}
    text = "“与此同时，我们走吧。”他说。「与此同时」也行。与此同时，雪停了。"
    report = checks.blacklist_hits(text, bl)
    assert report.hits == [{"word": "与此同时", "count": 1}]
    assert report.narration_connector_count == 1
    assert checks.blacklist_hits("“与此同时。”", bl).total_hits == 0
    plain = {"categories": {"summary_word": [{"word": "与此同时"}]}}
    assert checks.blacklist_hits(text, plain).total_hits == 3  # without the context: everywhere


def test_per_chapter_max_overruns_are_listed() -> None:
    bl = {"words": ["不禁"], "categories": {"emotion_cliche": [{"word": "不禁", "per_chapter_max": 1},
                                                              {"word": "心头一震", "per_chapter_max": 2}]}}
    report = checks.blacklist_hits("他不禁一愣，又不禁笑了，心头一震。", bl)
    assert report.per_chapter_limit_hits == [{"word": "不禁", "count": 2, "per_chapter_max": 1}]
    assert checks.blacklist_hits("他不禁一愣。", bl).per_chapter_limit_hits == []


def test_blacklist_rate_counts_non_whitespace_and_rounds() -> None:
    text = "不禁" + "字" * 2998 + " \n\t  "
    report = checks.blacklist_hits(text, {"words": ["不禁"]})
    assert (report.chars, report.total_hits, report.hits_per_kchars) == (3000, 1, 0.333)
    assert checks.blacklist_hits("不禁不禁字字 字", {"words": ["不禁"]}).hits_per_kchars == 285.714
    empty = checks.blacklist_hits("", {"words": ["不禁"]})
    assert (empty.chars, empty.hits_per_kchars) == (0, 0.0)
    assert checks.blacklist_hits("不禁", None).total_hits == 0


def test_quoted_mask_stops_at_line_break() -> None:
    mask = checks.quoted_mask("“啊\n哦”")
    assert mask == [False, True, False, False, False]


def _quoted_mask_by_character(text: str) -> list[bool]:
    """The rule of ``checks.quoted_mask``, one character at a time (how it was first written)."""
    mask, stack = [False] * len(text), []
    for i, ch in enumerate(text):
        if ch == "\n":
            stack.clear()
        elif ch in checks.OPEN_QUOTES:
            stack.append(checks.OPEN_QUOTES[ch])
        elif ch in checks.CLOSE_QUOTES and stack:
            while stack and stack.pop() != ch:
                pass
        elif stack:
            mask[i] = True
    return mask


@given(st.text(alphabet="“”「」『』\n 　a字。", max_size=60))
@settings(max_examples=400, deadline=None)
def test_quoted_mask_and_character_count_match_their_per_character_rules(text) -> None:
    """The fast versions (regular expressions, ``str.split``) agree with the plain definitions:
    nested, mismatched, unclosed and stray marks, line breaks, full-width spaces."""
    assert checks.quoted_mask(text) == _quoted_mask_by_character(text)
    assert count_chars(text) == sum(1 for ch in text if not ch.isspace())


# --- checks: length, characters, foreshadowing, hard rules ------------------------------------------


def test_length_check() -> None:
    assert checks.length_check("字" * 1000, 1000).status == "ok"
    short = checks.length_check("字" * 700 + "  ", 1000)
    assert (short.status, short.chars, short.min_chars, short.max_chars) == ("too_short", 700, 750, 1250)
    assert checks.length_check("字" * 1300, 1000).status == "too_long"
    assert checks.length_check("字" * 1100, 1000, tolerance=0.05).status == "too_long"
    assert checks.length_check("字", None).status == "ok"


CHARACTERS = [
    {"slug": "lin-feng", "display_name": "林枫", "status": "active"},
    {"slug": "lao-wang", "display_name": "老王", "status": "retired"},
    {"slug": "chen-lao", "display_name": "陈老", "status": "active"},
]


def test_character_check() -> None:
    bad = checks.character_check("林枫看见老王站在门口。", CHARACTERS, ["lin-feng", "chen-lao"])
    assert bad.retired_present == [{"slug": "lao-wang", "display_name": "老王"}]
    assert bad.missing_contract == [{"slug": "chen-lao", "display_name": "陈老"}]
    good = checks.character_check("林枫和陈老对坐。", CHARACTERS, ["lin-feng", "chen-lao"])
    assert (good.retired_present, good.missing_contract) == ([], [])
    unknown = checks.character_check("无人。", CHARACTERS, ["ghost"])
    assert unknown.missing_contract == [{"slug": "ghost", "display_name": "ghost"}]


def test_foreshadowing_check() -> None:
    ops = [{"op": "foreshadow", "path": "F-001", "value": "planted"},
           {"op": "foreshadow", "path": "F-002", "value": "planted"},
           {"op": "set", "path": "characters.lin-feng.location", "value": "F-003"}]
    objectives = [{"id": "OBJ-1", "type": "foreshadowing", "required": True, "target": "F-003"},
                  {"id": "OBJ-2", "type": "foreshadowing", "required": True, "target": "F-001"},
                  {"id": "OBJ-3", "type": "foreshadowing", "required": False, "target": "F-009"},
                  {"id": "OBJ-4", "type": "plot", "required": True, "target": "F-008"}]
    report = checks.foreshadowing_check({"F-001": "planted", "F-002": "advanced", "F-004": "resolved"}, ops, objectives)
    assert report.missing_updates == [{"id": "F-004", "expected": "resolved"}]
    assert report.status_mismatches == [{"id": "F-002", "expected": "advanced", "actual": "planted"}]
    assert report.missing_objectives == [{"objective_id": "OBJ-1", "target": "F-003"}]
    clean = checks.foreshadowing_check({"F-001": "planted"}, ops, objectives[1:])
    assert (clean.missing_updates, clean.status_mismatches, clean.missing_objectives) == ([], [], [])


RULES = [
    {"id": "W-001", "rule": "每日吸纳星火不得超过三次", "constraint_type": "hard", "canon_status": "established",
     "keywords": ["第四次吸纳", "第五次吸纳"]},
    {"id": "W-002", "rule": "森林夜间无法辨向", "constraint_type": "soft", "keywords": ["夜里辨明方向"]},
    {"id": "W-003", "rule": "尚未确立", "constraint_type": "hard", "canon_status": "planned", "keywords": ["飞升"]},
    {"id": "W-004", "rule": "不可复活", "constraint_type": "hard", "keywords": ["复活"]},  # canon_status missing
]


def test_hard_rule_check() -> None:
    text = "他第五次吸纳星火，夜里辨明方向，准备飞升，让师父复活。"
    assert checks.hard_rule_check(text, RULES) == [
        {"rule_id": "W-001", "keyword": "第五次吸纳", "rule": "每日吸纳星火不得超过三次"},
        {"rule_id": "W-004", "keyword": "复活", "rule": "不可复活"},
    ]
    assert checks.hard_rule_check("他第三次吸纳星火。", RULES) == []


def test_run_checks_combines_and_feeds_the_gate() -> None:
    text = "林枫第四次吸纳星火，老王不禁叹气。“与此同时”"
    report = checks.run_checks(
        text, blacklist={"words": ["不禁"]}, target_chars=3000, characters=CHARACTERS,
        contract_slugs=["lin-feng", "chen-lao"], contract_updates={"F-001": "planted"}, delta_ops=[],
        objectives=[{"id": "OBJ-1", "type": "foreshadowing", "target": "F-002"}], rules=RULES)
    assert len(report.violations) == 4
    assert any("老王" in v for v in report.violations) and any("W-001" in v for v in report.violations)
    assert any("F-001" in v for v in report.violations) and any("OBJ-1" in v for v in report.violations)
    assert any("陈老" in w for w in report.warnings) and any("字数" in w for w in report.warnings)
    data = json.loads(json.dumps(report.as_dict(), ensure_ascii=False))
    assert data["blacklist"]["total_hits"] == 1 and data["length"]["status"] == "too_short"
    assert data["blacklist"]["statistical_profile"]["blacklist_hit_rate"] == report.blacklist.hits_per_kchars
    assert decide(evaluation(4.5), revision_count=0, deterministic_violations=report.violations).decision == "revise"
    clean = checks.run_checks("林枫静坐。", characters=CHARACTERS, contract_slugs=["lin-feng"], rules=RULES)
    assert (clean.violations, clean.warnings) == ([], [])


# --- style drift --------------------------------------------------------------------------------------------

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


def test_chapter_metrics_on_a_known_text() -> None:
    text = "# 第一章 雪夜\n他走了。她笑了！“你好吗？”他问。\n天黑了"
    # sentences 他走了 / 她笑了 / 你好吗 / 他问 / 天黑了 = 14 chars / 5; quoted 你好吗？ = 4 of 20 chars
    assert style_drift.chapter_metrics(text) == {"avg_sentence_length": 2.8, "dialogue_ratio": 0.2}
    assert style_drift.chapter_metrics("他走了……真的？！走了") == {"avg_sentence_length": 2.33, "dialogue_ratio": 0.0}
    assert style_drift.chapter_metrics("") == {"avg_sentence_length": 0.0, "dialogue_ratio": 0.0}


def sentences(length: int, count: int = 5) -> str:
    return ("字" * length + "。") * count


def chapters(text: str, first: int = 16, n: int = 5) -> list[tuple[int, str]]:
    return [(first + i, text) for i in range(n)]


def assert_valid(drift: dict) -> None:
    assert json_issues("STYLE_DRIFT", drift) == []


def test_sentence_length_drift() -> None:
    drift = style_drift.detect(chapters=chapters(sentences(15)), profile={"avg_sentence_length": 10},
                               current=None, as_of=20, now=NOW)
    assert drift == {
        "active": True, "detected_chapter": 20, "window": [16, 20],
        "drifts": [{"metric": "avg_sentence_length", "baseline": 10.0, "current": 15.0,
                    "directive": "句子偏长，平均每句控制在 10 字左右"}],
        "injected_to": ["ChapterWriter", "StyleRefiner"], "created_at": "2026-03-15T12:00:00+00:00",
        "cleared_at": None, "cleared_reason": None,
    }
    assert_valid(drift)
    assert style_drift.directives(drift) == ["句子偏长，平均每句控制在 10 字左右"]
    short = style_drift.detect(chapters=chapters(sentences(7)), profile={"avg_sentence_length": 10},
                               current=None, as_of=20)
    assert short["drifts"][0]["directive"].startswith("句子偏短")


def test_dialogue_drift_and_both_dimensions() -> None:
    text = "“" + "甲" * 9 + "。”" + sentences(10, 3)
    m = style_drift.chapter_metrics(text)
    few = style_drift.detect(chapters=chapters(text), current=None, as_of=20,
                             profile={"avg_sentence_length": m["avg_sentence_length"],
                                      "dialogue_ratio": m["dialogue_ratio"] * 1.5})
    assert [d["metric"] for d in few["drifts"]] == ["dialogue_ratio"]
    assert few["drifts"][0]["directive"].startswith("对话偏少")
    assert_valid(few)
    both = style_drift.detect(chapters=chapters(text), current=None, as_of=20,
                              profile={"avg_sentence_length": m["avg_sentence_length"] * 2,
                                       "dialogue_ratio": m["dialogue_ratio"] / 2})
    assert [d["metric"] for d in both["drifts"]] == ["dialogue_ratio", "avg_sentence_length"]  # largest first
    assert both["drifts"][0]["directive"].startswith("对话偏多")
    assert len(style_drift.directives(both)) == 2
    assert_valid(both)


def test_no_drift_at_or_under_the_thresholds() -> None:
    assert style_drift.detect(chapters=chapters(sentences(12)), profile={"avg_sentence_length": 10},
                              current=None, as_of=20) is None  # deviation exactly 0.20 is not > 0.20
    inactive = {"active": False, "cleared_reason": "metrics_recovered"}
    assert style_drift.detect(chapters=chapters(sentences(10)), profile={"avg_sentence_length": 10},
                              current=inactive, as_of=20) is inactive
    assert style_drift.detect(chapters=[], profile={"avg_sentence_length": 1}, current=None, as_of=20) is None


def test_inactive_current_is_replaced_by_a_new_drift() -> None:
    old = {"active": False, "detected_chapter": 1, "cleared_reason": "stale_timeout"}
    drift = style_drift.detect(chapters=chapters(sentences(20)), profile={"avg_sentence_length": 10},
                               current=old, as_of=30)
    assert drift["active"] and drift["detected_chapter"] == 30


def active(detected: int = 10) -> dict:
    return {"active": True, "detected_chapter": detected, "window": [detected - 4, detected],
            "drifts": [{"metric": "avg_sentence_length", "baseline": 10, "current": 15, "directive": "句子偏长"}],
            "injected_to": ["ChapterWriter", "StyleRefiner"], "created_at": "2026-03-01T00:00:00+00:00",
            "cleared_at": None, "cleared_reason": None}


def test_recovery_clears_an_active_drift() -> None:
    current = active()
    recovered = style_drift.detect(chapters=chapters(sentences(10)), profile={"avg_sentence_length": 10.5},
                                   current=current, as_of=15, now=NOW)
    assert recovered == {**current, "active": False, "cleared_reason": "metrics_recovered",
                         "cleared_at": "2026-03-15T12:00:00+00:00"}
    assert current["active"] is True  # the input is not mutated
    assert_valid(recovered)
    assert style_drift.directives(recovered) == []


def test_active_drift_in_between_or_still_drifting_is_unchanged() -> None:
    current = active()
    for length in (11, 15):  # deviation 0.10 (not recovered) and 0.5 (still drifting)
        assert style_drift.detect(chapters=chapters(sentences(length)), profile={"avg_sentence_length": 10},
                                  current=current, as_of=25) is current


def test_stale_timeout() -> None:
    current = active(detected=10)
    stale = style_drift.detect(chapters=chapters(sentences(15)), profile={"avg_sentence_length": 10},
                               current=current, as_of=26, now=NOW)
    assert (stale["active"], stale["cleared_reason"], stale["cleared_at"]) == (False, "stale_timeout", NOW.isoformat())
    assert_valid(stale)
    assert style_drift.detect(chapters=chapters(sentences(15)), profile={"avg_sentence_length": 10},
                              current=current, as_of=25) is current


@pytest.mark.parametrize("profile", [{"avg_sentence_length": 0, "dialogue_ratio": 0},
                                     {"avg_sentence_length": None}, {}, None])
def test_zero_or_missing_baseline_is_skipped(profile) -> None:
    text = "“" + "话" * 30 + "”" + sentences(40)
    assert style_drift.detect(chapters=chapters(text), profile=profile, current=None, as_of=20) is None
    current = active()  # nothing measurable: neither recovered nor new
    assert style_drift.detect(chapters=chapters(text), profile=profile, current=current, as_of=20) is current


def test_one_skipped_dimension_does_not_block_the_other() -> None:
    drift = style_drift.detect(chapters=chapters(sentences(15)), current=None, as_of=20,
                               profile={"avg_sentence_length": 10, "dialogue_ratio": 0})
    assert [d["metric"] for d in drift["drifts"]] == ["avg_sentence_length"]


def test_directives_at_most_three_and_only_while_active() -> None:
    many = {"active": True, "drifts": [{"metric": f"m{i}", "direction": "up", "delta": 0.3, "directive": f"指令{i}"}
                                       for i in range(5)]}
    assert style_drift.directives(many) == ["指令0", "指令1", "指令2"]
    assert style_drift.directives({**many, "active": False}) == []
    assert style_drift.directives(None) == []
    drift = style_drift.detect(chapters=chapters(sentences(30)), current=None, as_of=20,
                               profile={"avg_sentence_length": 10, "dialogue_ratio": 0.4})
    assert len(drift["drifts"]) <= style_drift.MAX_DRIFTS
    assert_valid(drift)
