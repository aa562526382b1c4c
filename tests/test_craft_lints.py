"""Craft lints (issue #17 §2): for every rule, passages that must trigger it and passages that must
not (dialogue exemptions, legitimate uses, short texts), with counts and character offsets."""
from __future__ import annotations

import json

import pytest

from pipeline.chapter.craft.catalogue import DEFAULT_THRESHOLDS, RULE_IDS, RULES_BY_ID
from pipeline.chapter.craft.lints import LintSettings, LintSettingsError, lint_text

HEADING = "# 第 1 章 雪夜\n\n"
# Natural prose: varied sentences and paragraphs, dialogue in “”, no marks any rule dislikes.
CLEAN = HEADING + (
    "雪是半夜落下来的。林枫推开门，院子里已经白了一片，他在门槛上站了很久，才想起炉子里的火还没添。\n\n"
    "“你怎么还不睡？”苏婉披着外衣从屋里出来，手里提着一盏灯。\n\n"
    "“睡不着。”他说。\n\n"
    "她没再问，把灯挂在廊下的钉子上，转身去柴房抱了一捆干柴。两个人蹲在炉边，谁也没有开口，"
    "火苗舔着铁壶的底，壶嘴慢慢冒出白气。远处的山脊上亮着一点火光，一闪，又灭了。\n\n"
    "林枫盯着那个方向看了很久。\n\n"
    "天快亮的时候，院门外传来马蹄声，由远及近，停在了篱笆外头。"
)


def findings(text: str, **options) -> dict[str, dict]:
    return {f["rule"]: f for f in lint_text(text, **options).as_dict()["findings"]}


def offsets(finding: dict) -> list[tuple[int, int]]:
    return [(e["start"], e["end"]) for e in finding["evidence"]]


def test_clean_prose_has_no_findings():
    assert findings(CLEAN, chapter=1) == {}


def test_every_finding_has_the_documented_shape_and_evidence_matches_the_text():
    text = HEADING + "他停了一下——然后说：「走。」\n\n***\n\n" + "与此同时，风停了。此外，雪也停了。"
    report = lint_text(text, chapter=1).as_dict()
    assert report["chars"] == sum(len(part) for part in text.split())
    assert report["findings"]
    for finding in report["findings"]:
        assert finding["rule"] in RULE_IDS
        assert finding["severity"] == RULES_BY_ID[finding["rule"]].severity
        assert finding["count"] >= 1
        for item in finding["evidence"]:
            assert text[item["start"]:item["end"]] == item["text"]
    json.dumps(report, ensure_ascii=False)  # plain JSON


# --- em_dash -----------------------------------------------------------------------------------------

def test_em_dash_counts_each_dash_with_offsets_even_in_dialogue():
    text = "他停了一下——然后转身。“我——不去。”"
    f = findings(text, expect_heading=False)["em_dash"]
    assert f["severity"] == "hard" and f["count"] == 2
    assert offsets(f) == [(5, 7), (14, 16)]
    assert f["rate_per_kchars"] == round(2 / (len(text) / 1000), 2)


def test_em_dash_absent_and_hyphens_are_not_dashes():
    assert "em_dash" not in findings("编号 A-12 的房间，门开着。", expect_heading=False)


# --- md_separator -------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["---", "***", "* * *", "  ___  ", "-----"])
def test_markdown_scene_breaks_are_found(line):
    text = f"第一场戏结束了。\n{line}\n第二场戏开始。"
    f = findings(text, expect_heading=False)["md_separator"]
    start = text.index(line.strip())
    assert f["count"] == 1 and offsets(f) == [(start, start + len(line.strip()))]


def test_dashes_inside_a_sentence_are_not_separators():
    assert "md_separator" not in findings("比分是 3--2，他笑着说：“---这是什么？”", expect_heading=False)


# --- quote_format -------------------------------------------------------------------------------------

def test_corner_brackets_and_ascii_quotes_are_wrong():
    text = "「走吧。」他说。她回答：\"好。\""
    f = findings(text, expect_heading=False)["quote_format"]
    assert f["count"] == 4
    assert [e["text"] for e in f["evidence"]] == ["「", "」", '"', '"']
    assert offsets(f)[0] == (0, 1)


def test_single_quotes_as_dialogue_are_wrong_but_nested_ones_are_fine():
    wrong = "‘走吧。’他说。"
    assert findings(wrong, expect_heading=False)["quote_format"]["count"] == 2
    nested = "“他说‘明天再来’，然后就走了。”她说。"
    assert "quote_format" not in findings(nested, expect_heading=False)


def test_apostrophes_in_english_words_are_not_quotes():
    assert "quote_format" not in findings("他在墙上写了 don't panic 和 it’s fine。", expect_heading=False)


# --- chapter_heading ----------------------------------------------------------------------------------

@pytest.mark.parametrize("heading", ["# 第 12 章 归来", "#第12章 归来", "# 第12章：归来"])
def test_good_headings_pass(heading):
    assert "chapter_heading" not in findings(heading + "\n\n他回来了。", chapter=12)


@pytest.mark.parametrize("heading, problem", [
    ("## 第 12 章 归来", "格式"), ("# 第十二章 归来", "格式"), ("# 归来", "格式"),
    ("# 第 13 章 归来", "章节号 13"), ("# 第 12 章", "缺少章名"),
])
def test_bad_headings_are_found(heading, problem):
    text = "\n" + heading + "\n\n他回来了。"
    f = findings(text, chapter=12)["chapter_heading"]
    assert f["severity"] == "hard" and problem in f["message"]
    assert offsets(f) == [(1, 1 + len(heading))]


def test_a_file_without_heading_is_found_but_stored_prose_passes():
    assert findings("他回来了。", chapter=1)["chapter_heading"]["evidence"][0]["text"] == "他回来了。"
    assert "chapter_heading" not in findings("他回来了。", chapter=1, expect_heading=False)


# --- narration_connector ------------------------------------------------------------------------------

def test_connectors_in_narration_are_counted_from_two():
    text = "与此同时，城外起了火。此外，城门也关了。"
    f = findings(text, expect_heading=False)["narration_connector"]
    assert f["count"] == 2 and offsets(f) == [(0, 4), (11, 13)]
    assert "narration_connector" not in findings("与此同时，城外起了火。", expect_heading=False)


def test_connectors_inside_dialogue_are_exempt():
    text = "“与此同时，城外起了火。此外，城门也关了。”他说。"
    assert "narration_connector" not in findings(text, expect_heading=False)


def test_project_connectors_and_whitelist_apply():
    blacklist = {"categories": {"narration_connector": [{"word": "紧接着", "context": "narration_only"}]},
                 "whitelist": ["此外"]}
    text = "紧接着，门开了。紧接着，灯灭了。此外，没人说话。"
    f = findings(text, expect_heading=False, blacklist=blacklist)["narration_connector"]
    assert [e["word"] for e in f["evidence"]] == ["紧接着", "紧接着"]


# --- blacklist ----------------------------------------------------------------------------------------

BLACKLIST = {"words": ["不禁", "嘴角微微上扬", "微微"], "categories": {}, "whitelist": []}


def test_blacklist_hits_longest_first_with_offsets():
    text = "他嘴角微微上扬，不禁笑了。她微微点头。"
    f = findings(text, expect_heading=False, blacklist=BLACKLIST)["blacklist"]
    assert f["count"] == 3
    assert [(e["word"], e["start"]) for e in f["evidence"]] == [("嘴角微微上扬", 1), ("不禁", 8), ("微微", 14)]


def test_no_blacklist_or_whitelisted_word_gives_no_finding():
    assert "blacklist" not in findings("他笑了。", expect_heading=False, blacklist=BLACKLIST)
    assert "blacklist" not in findings("他不禁笑了。", expect_heading=False,
                                       blacklist={**BLACKLIST, "whitelist": ["不禁"]})
    assert "blacklist" not in findings("他不禁笑了。", expect_heading=False)


# --- densities ----------------------------------------------------------------------------------------

def test_simile_density_in_narration():
    text = "他像一头狼，仿佛一阵风，宛如一道光。"
    f = findings(text, expect_heading=False)["simile_density"]
    assert f["count"] == 3 and offsets(f) == [(1, 2), (6, 8), (12, 14)]


def test_similes_in_dialogue_negations_and_compound_words_do_not_count():
    assert "simile_density" not in findings("“他像一头狼，仿佛一阵风，宛如一道光。”她说。", expect_heading=False)
    assert "simile_density" not in findings("图像里的偶像不像他，画像也不像。他很好。", expect_heading=False)


def test_one_simile_in_a_long_chapter_is_fine():
    text = CLEAN + "\n\n他的背影像一棵老树。"
    assert "simile_density" not in findings(text, chapter=1)


def test_ellipsis_density():
    text = "他……不知道。她……也不知道。谁……知道呢……"
    f = findings(text, expect_heading=False)["ellipsis_density"]
    assert f["count"] == 4 and offsets(f)[0] == (1, 3)
    assert "ellipsis_density" not in findings("他……不知道。", expect_heading=False)  # short text, one mark


def test_exclamation_density_counts_runs():
    text = "快走！快！！别回头！？"
    f = findings(text, expect_heading=False)["exclamation_density"]
    assert f["count"] == 3 and offsets(f) == [(2, 3), (4, 6), (9, 11)]
    assert "exclamation_density" not in findings(CLEAN + "\n\n“站住！”", chapter=1)


def test_four_char_idioms_in_narration():
    text = "他一言不发，心里翻江倒海，却依旧面不改色，神色自若。"
    f = findings(text, expect_heading=False)["four_char_idiom_density"]
    assert f["count"] == 4 and offsets(f)[0] == (1, 5)
    dialogue = "“一言不发，翻江倒海，面不改色，神色自若。”他说。"
    assert "four_char_idiom_density" not in findings(dialogue, expect_heading=False)


# --- rhythm -------------------------------------------------------------------------------------------

def test_sentence_length_std_dev_low_and_varied():
    uniform = "".join(f"第{i}个人走进了院子里。" for i in range(1, 10))
    f = findings(uniform, expect_heading=False)["sentence_length_std_dev"]
    assert f["value"] < 6 and f["limit"] == 6
    assert "sentence_length_std_dev" not in findings(CLEAN, chapter=1)
    assert "sentence_length_std_dev" not in findings("他来了。他走了。", expect_heading=False)  # too few


def test_sentence_length_run():
    text = "他推门走了进去。屋里一个人也没有。桌上放着半碗冷茶。雪下了整整一夜，院子里的脚印早就被盖住了。"
    f = findings(text, expect_heading=False)["sentence_length_run"]
    assert f["count"] == 1
    assert offsets(f) == [(0, text.index("雪"))] and f["evidence"][0]["lengths"] == [7, 8, 8]
    varied = "他推门。屋里一个人也没有，只有风从破了的窗纸里钻进来。桌上放着半碗冷茶。"
    assert "sentence_length_run" not in findings(varied, expect_heading=False)


def test_paragraph_length_cv():
    same = "\n\n".join("他在院子里站了很久，看着天。" for _ in range(6))
    f = findings(same, expect_heading=False)["paragraph_length_cv"]
    assert f["value"] == 0.0
    assert "paragraph_length_cv" not in findings(CLEAN, chapter=1)


def test_paragraph_too_long_and_threshold_from_settings():
    long_para = "他走。" * 70  # 210 characters
    text = "短段。\n\n" + long_para
    f = findings(text, expect_heading=False)["paragraph_too_long"]
    assert offsets(f) == [(5, 5 + len(long_para))]
    assert "paragraph_too_long" not in findings(text, expect_heading=False, thresholds={"paragraph_max_chars": 300})


def test_sentence_repetition_same_and_nearly_same():
    text = ("他把那封信又看了一遍。窗外的雨停了。他把那封信又看了一遍。"
            "远处传来钟声。院子里一片寂静。灯芯噼啪响了一声。他把那封旧信又看了一遍。")
    f = findings(text, expect_heading=False)["sentence_repetition"]
    assert f["count"] == 2
    first = text.index("他把那封信")
    second = text.index("他把那封信", first + 1)
    assert f["evidence"][0]["start"] == second and f["evidence"][0]["repeats_start"] == first
    assert f["evidence"][0]["within_window"] is True
    assert f["evidence"][1]["text"] == "他把那封旧信又看了一遍。"


def test_short_replies_and_repeated_dialogue_are_not_repetition():
    text = "“好。”“好。”“好。”他说：“我知道了，我这就去。”她说：“我知道了，我这就去。”"
    assert "sentence_repetition" not in findings(text, expect_heading=False)


def test_vocabulary_diversity():
    repetitive = "他走了。他走了。她走了。他走了。" * 20
    f = findings(repetitive, expect_heading=False)["vocabulary_diversity"]
    assert f["value"] < 0.35
    assert "vocabulary_diversity" not in findings(CLEAN, chapter=1)
    assert "vocabulary_diversity" not in findings("他走了。", expect_heading=False)  # too few words to say
    short = findings("他走了。她走了。" * 10, expect_heading=False)["vocabulary_diversity"]  # 60 words: plain ratio
    assert short["value"] == round(4 / 60, 3)


# --- sentence patterns --------------------------------------------------------------------------------

@pytest.mark.parametrize("sentence, marker, pattern", [
    ("他感到一阵愤怒。", "感到一阵愤怒", "SP-01"),
    ("她心中涌起一股暖意。", "涌起一股暖意", "SP-01"),
    ("他看似平静，实则心乱如麻。", "看似平静，实则", "SP-02"),
    ("他之所以留下，是因为放不下她。", "之所以留下，是因为", "SP-03"),
    ("毕竟他已经老了。", "毕竟", "SP-03"),
    ("正因如此，他没有走。", "正因如此", "SP-03"),
    ("这不是逃避，而是等待。", "不是逃避，而是", "SP-04"),
    ("这一刻，他终于明白了。", "终于明白", "SP-05"),
    ("她眼中闪过一丝犹豫。", "眼中闪过一丝", "SP-06"),
    ("一种难以言喻的感觉。", "难以言喻", "SP-07"),
    ("时间仿佛静止了。", "时间仿佛静止了", "SP-08"),
])
def test_sentence_pattern_markers(sentence, marker, pattern):
    f = findings(sentence, expect_heading=False)["sentence_pattern"]
    start = sentence.index(marker)
    assert f["severity"] == "soft" and f["count"] == 1
    assert f["evidence"][0] | {} == {"start": start, "end": start + len(marker), "text": marker,
                                     "pattern_id": pattern, "pattern_name": f["evidence"][0]["pattern_name"],
                                     "level": f["evidence"][0]["level"]}


def test_sentence_patterns_in_dialogue_are_exempt():
    assert "sentence_pattern" not in findings("“我感到很愤怒，毕竟他骗了我。”她说。", expect_heading=False)


def test_sentence_pattern_legitimate_words_do_not_match():
    assert "sentence_pattern" not in findings("他看了看表。她感到手指冻僵了。", expect_heading=False)


# --- word_count and title -----------------------------------------------------------------------------

def test_word_count_against_the_platform_range_without_the_heading():
    text = HEADING + "他走了。" * 10  # 40 characters of prose
    f = findings(text, chapter=1, word_range={"min": 50, "max": 100})["word_count"]
    assert f["value"] == 40 and f["limit"] == 50
    assert findings(text, chapter=1, word_range=(10, 30))["word_count"]["limit"] == 30
    assert "word_count" not in findings(text, chapter=1, word_range=(40, 40))
    assert "word_count" not in findings(text, chapter=1)  # no range: no rule


def test_title_policy():
    policy = {"enabled": True, "max_chars": 6, "banned_words": ["震惊"]}
    text = "# 第 1 章 震惊！他竟然回来了\n\n他回来了。"
    f = findings(text, chapter=1, title_policy=policy)["title"]
    assert f["count"] == 3  # too long, banned word, forbidden "！"
    start = text.index("震惊")
    assert offsets(f) == [(start, len("# 第 1 章 震惊！他竟然回来了"))]
    assert "title" not in findings("# 第 1 章 归来\n\n他回来了。", chapter=1, title_policy=policy)
    assert "title" not in findings(text, chapter=1)  # no policy
    assert "title" not in findings(text, chapter=1, title_policy={**policy, "enabled": False})
    stored = findings("他回来了。", expect_heading=False, title="震惊", title_policy=policy)["title"]
    assert stored["evidence"] == [] and "震惊" in stored["message"]


# --- settings and hostile input -----------------------------------------------------------------------

def test_settings_layer_platform_then_project():
    settings = LintSettings.resolve(
        platform={"lints": {"paragraph_max_chars": 150, "em_dash_max": 0}, "word_count": {"min": 2000, "max": 4000},
                  "retention": {"title_policy": {"enabled": True, "max_chars": 12}}},
        project={"lints": {"paragraph_max_chars": 120, "unknown_key": 3}})
    assert settings.thresholds["paragraph_max_chars"] == 120
    assert settings.thresholds["simile_max_per_kchars"] == DEFAULT_THRESHOLDS["simile_max_per_kchars"]
    assert settings.word_range == (2000, 4000) and settings.title_policy["max_chars"] == 12
    assert LintSettings.resolve().thresholds == DEFAULT_THRESHOLDS


@pytest.mark.parametrize("bad", [{"lints": {"paragraph_max_chars": "many"}}, {"lints": {"em_dash_max": -1}},
                                 {"lints": {"em_dash_max": True}}, {"lints": [1]},
                                 {"word_count": {"min": 10, "max": 5}}, {"word_count": "3000"},
                                 {"title_policy": "short"}, {"title_policy": {"max_chars": "ten"}},
                                 {"retention": {"title_policy": {"banned_words": "震惊"}}},
                                 {"title_policy": {"forbidden_chars": ["!"]}}, {"title_policy": {"enabled": "yes"}}])
def test_bad_settings_raise_a_clear_error(bad):
    with pytest.raises(LintSettingsError):
        LintSettings.resolve(project=bad)


def test_hostile_text_and_arguments():
    with pytest.raises(TypeError):
        lint_text(None)  # type: ignore[arg-type]
    with pytest.raises(LintSettingsError):
        lint_text("他来了。", blacklist=["不禁"])  # type: ignore[arg-type]
    with pytest.raises(LintSettingsError):
        lint_text("# 第 1 章 雪\n\n他来了。", title_policy={"min_chars": -1})
    for text in ["", "\n\n", "“", "”“「『", "#", "# 第 999999999999 章 x", "\0\ufeff\u200b", "a" * 5000,
                 "——" * 1000, "。" * 500, "\r\n".join(["他来了。"] * 50), "🙂" * 100]:
        report = lint_text(text)
        for f in report.findings:
            for e in f.as_dict()["evidence"]:
                assert text[e["start"]:e["end"]] == e["text"]
        assert len(report.by_rule().get("em_dash").evidence if "em_dash" in report.by_rule() else []) <= 50


def test_indicators_hold_the_13_with_zones():
    report = lint_text(CLEAN + "\n\n他停了——又走了。", chapter=1)
    assert report.indicator_mode == "7-indicator"  # under 500 characters: facts §13 fallback
    assert len(report.indicators) == 13
    assert report.indicators["em_dash_count"] == {"value": 1, "zone": "red", "red_when": ">0"}
    assert report.indicators["blacklist_hit_rate"]["zone"] == "green"
    assert all(v["zone"] in ("green", "yellow", "red", "observe") for v in report.indicators.values())
    long_text = CLEAN + "\n\n" + "\n\n".join([CLEAN.split("\n\n", 1)[1]] * 3)
    assert lint_text(long_text, chapter=1).indicator_mode == "13-indicator"


def test_readable_findings_are_chinese_text():
    text = lint_text("他停了——又走了。", expect_heading=False).readable()
    assert "破折号" in text and "必须修改" in text and "\\u" not in text


def test_the_lint_threshold_names_the_project_schema_allows_are_the_lints_own():
    from pipeline.chapter.craft.catalogue import DEFAULT_THRESHOLDS
    from projects.schemas import LINT_THRESHOLD_NAMES

    assert set(LINT_THRESHOLD_NAMES) == set(DEFAULT_THRESHOLDS)
