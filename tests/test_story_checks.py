"""Checks that see the story (#18): each kind of contradiction injected into a chapter is caught as
a violation before the judge; clean chapters that only mention a dead character (memory, dialogue,
a grave, a flashback) or quote a rule in a negation are not blocked (suspicions at most)."""
from __future__ import annotations

import jieba
import pytest

from pipeline.chapter.prejudge_checks import run_checks
from pipeline.chapter.quality_gate import decide
from pipeline.chapter.story_checks import StoryInputs, story_checks
from pipeline.chapter.story_checks.roster import person_tagger

CHARACTERS = [
    {"slug": "lin-feng", "display_name": "林枫", "status": "active", "aliases": ["林师兄", "枫哥"]},
    {"slug": "su-wanqing", "display_name": "苏晚晴", "status": "active", "aliases": ["苏姑娘"]},
    {"slug": "mo-changfeng", "display_name": "莫长风", "status": "active", "aliases": ["老掌门", "莫掌门"]},
    {"slug": "zhao-ming", "display_name": "赵明", "status": "active"},
    {"slug": "lao-wang", "display_name": "老王", "status": "retired", "aliases": ["王伯"]},
]
STATE = {"characters": {
    "lin-feng": {"display_name": "林枫", "location": "青云山", "inventory": ["一封密信", "青钢剑"]},
    "su-wanqing": {"display_name": "苏晚晴", "location": "京城", "inventory": ["玉佩"]},
    "mo-changfeng": {"display_name": "莫长风", "location": "青云山", "status": "dead", "inventory": []},
    "zhao-ming": {"display_name": "赵明", "location": "青云山", "inventory": []},
}}
HISTORY = [{"op": "add", "path": "characters.lin-feng.inventory", "value": "一根破碎魔杖"},
           {"op": "remove", "path": "characters.lin-feng.inventory", "value": "一根破碎魔杖"}]
RULES = [
    {"id": "W-001", "rule": "凡人不可御剑飞行", "constraint_type": "hard", "keywords": ["御剑飞行", "御剑而行"]},
    {"id": "W-002", "rule": "死者不可复生", "constraint_type": "hard", "keywords": ["死而复生", "起死回生"]},
    {"id": "W-003", "rule": "夜里山中多雾", "constraint_type": "soft", "keywords": ["雾"]},
]
LEDGER = {"F-001": "resolved", "F-002": "planted"}


def inputs(**changes) -> StoryInputs:
    base = dict(characters=CHARACTERS, state=STATE, place="青云山后山", ledger=LEDGER, rules=RULES,
                history_ops=HISTORY)
    return StoryInputs(**{**base, **changes})


def check(text: str, **changes):
    return story_checks(text, inputs(**changes))


# --- contradictions: each one is a violation -------------------------------------------------------------

CONTRADICTIONS = {
    "a dead character acting, called by a title": "夜深了，老掌门缓缓走进大殿，环顾众人。",
    "a dead character speaking after a line of dialogue": "“都给我住手！”莫长风厉声喝道。",
    "a dead character speaking before a line of dialogue": "莫掌门开口道：“青云山不会亡。”",
    "a retired character acting by an alias": "山门外，王伯提着灯笼走了过来。",
    "a dead character heard in the scene": "莫长风的声音从门外传来：“进来吧。”",
    "a dead character seen arriving": "只见老掌门缓步而来，衣袂飘飘。",
    "a dead character helped up": "林枫扶起老掌门，两人一起下山。",
    "an item the state says was lost": "林枫拔出破碎魔杖，指向来人。",
    "an item used by a pronoun's character": "林枫愣了愣。他握紧玉佩，一言不发。",
    "an item the character never held": "林枫握紧玉佩，转身下山。",
    "a character placed where the state says he is not": "苏晚晴推门而入，在林枫身边坐下。",
    "a character the text puts somewhere else": "这天夜里，林枫回到京城，推开了府门。",
    "a hard rule broken in plain narration": "林枫踏上长剑，御剑飞行，转眼越过山巅。",
    "an unknown named person": "林枫回头，看见王大锤扛着铁锤走上山来。",
}


@pytest.mark.parametrize("text", CONTRADICTIONS.values(), ids=CONTRADICTIONS.keys())
def test_each_injected_contradiction_is_a_violation(text):
    report = check(text)
    assert report.violations, report.as_dict()


def test_a_foreshadowing_item_resolved_again_is_a_violation():
    report = check("林枫终于明白了那封信的真相。",
                   delta_ops=[{"op": "foreshadow", "path": "F-001", "value": "resolved"},
                              {"op": "foreshadow", "path": "F-002", "value": "resolved"}])
    assert report.violations == ["伏笔 F-001 已经回收过，本章不能再次回收"]


def test_the_violation_names_the_character_and_quotes_the_evidence():
    [violation] = check("夜深了，老掌门缓缓走进大殿，环顾众人。").violations
    assert "莫长风" in violation and "老掌门" in violation and "缓缓走进大殿" in violation
    [item] = check("林枫拔出破碎魔杖，指向来人。").violations
    assert "破碎魔杖" in item and "密信" in item  # what he does hold


# --- clean chapters: never blocked ----------------------------------------------------------------------

CLEAN = {
    "a memory of the dead master": "林枫想起老掌门当年的教诲，眼眶一热，握紧了手中的青钢剑。",
    "the dead master named in dialogue": "“莫掌门若还在，绝不会让你这样胡来。”赵明低声说。",
    "a grave": "林枫跪在莫长风的墓前，久久不语。",
    "a flashback paragraph": "三年前的那个雪夜，林枫第一次上山。莫长风站在山门前，递给他一柄木剑。",
    "a dream": "那一夜，苏姑娘的消息迟迟未到。林枫梦见老掌门站在云海边，朝他招手。",
    "the dead master's death recalled": "自从莫长风死后，青云山便冷清了许多。林枫走过空荡荡的大殿。",
    "a retired character's name said aloud": "“王伯的灯笼还挂在门口呢。”赵明笑着说。",
    "a portrait looked at": "林枫看着莫长风的画像，久久不语。",
    "a wish about the dead": "要是老掌门还在，一定会骂他们胡闹。",
    "the dead's things": "墙上挂着莫长风的画像，画像下是他留下的长剑。",
    "talk about the dead": "没有人再提起莫掌门。大家都说莫长风是个好人。",
    "another's item by a pronoun": "京城的城楼上，苏晚晴读着林枫的信。她握紧玉佩，一言不发。",
    "a rule kept in a negation": "凡人不能御剑飞行，林枫只好沿着石阶一步步走上山。",
    "a rule quoted": "赵明问：“谁说过死者能死而复生？”林枫摇了摇头。",
    "a rule forbidden": "门规严禁弟子御剑而行，林枫只得徒步赶路。",
    "an item the character holds": "林枫掏出密信，又拔出青钢剑，守在门口。",
    "an item given to him in this chapter": "林枫接过玉佩，握紧玉佩走下山去。",
    "a character the delta moves here": "苏晚晴推门而入，在林枫身边坐下。",
    "a scene that cuts to where a character is": "与此同时，京城下起了雨。苏晚晴推开窗，望着北方出神。",
    "a place looked at or remembered": "林枫站在青云山顶，望向京城的方向。他在京城时，曾见过这样的雪。",
    "a place someone else comes from": "林枫在山门前停下脚步，京城来的使者已经到了。",
    "ordinary words jieba may tag as names": "他明白了。高兴的人都走了，江湖上只剩下黎明前的安静。林枫站起身。",
    "reduplicated descriptions": "天刚蒙蒙亮，冷冰冰的风吹过黄澄澄的稻田，林枫站在田埂上。",
}


@pytest.mark.parametrize("key", CLEAN.keys())
def test_clean_passages_are_not_blocked(key):
    ops = {"an item given to him in this chapter": [{"op": "add", "path": "characters.lin-feng.inventory",
                                                      "value": "玉佩"}],
           "a character the delta moves here": [{"op": "set", "path": "characters.su-wanqing.location",
                                                 "value": "青云山"}]}.get(key, [])
    report = check(CLEAN[key], delta_ops=ops)
    assert report.violations == [], report.as_dict()


def test_a_rule_broken_in_other_words_reaches_the_judge():
    report = check("林枫踏上长剑，御剑而起，转眼越过山巅。")
    assert report.violations == []
    assert any("W-001" in s and "御剑" in s for s in report.suspicions)


def test_mentions_and_negations_reach_the_judge_as_suspicions():
    assert any("莫长风" in s for s in check(CLEAN["a memory of the dead master"]).suspicions)
    assert any("W-001" in s for s in check(CLEAN["a rule kept in a negation"]).suspicions)


def test_a_whole_clean_chapter_passes_the_gate_on_the_checks():
    text = "\n".join(CLEAN[k] for k in ("a memory of the dead master", "the dead master named in dialogue",
                                        "a grave", "a rule kept in a negation", "a rule quoted"))
    report = run_checks(text, characters=CHARACTERS, rules=RULES, story=inputs())
    assert report.violations == []
    assert report.suspicions
    assert report.as_dict()["story"]["gone"]


# --- unknown people and the information-load limit ------------------------------------------------------

def test_unknown_people_are_entries_for_the_log_and_bounded_by_the_platform_limit():
    text = "林枫回头，看见王大锤扛着铁锤走上山来，身后跟着欧阳青。韩青云从山下走来。"
    strict = check(text)
    assert [u["mention"] for u in strict.unknown_entities] == ["王大锤", "欧阳青", "韩青云"]
    assert strict.unknown_entities[0] == {"mention": "王大锤", "context": strict.unknown_entities[0]["context"],
                                          "suggested_type": "character"}
    assert "王大锤" in strict.unknown_entities[0]["context"]
    assert any("信息负荷" in v for v in strict.violations)
    lenient = check(text, unknown_limit=3)
    assert lenient.violations == [] and any("王大锤" in s for s in lenient.suspicions)


def test_planned_names_and_aliases_are_not_unknown():
    report = check("枫哥和苏姑娘站在山门口，韩青云从山下走来。", planned_names=["韩青云"])
    assert report.unknown_entities == []


def test_the_name_tagger_does_not_leak_into_jieba_or_other_projects():
    person_tagger(["戈壁滩长"])
    other = person_tagger(["林枫"])
    assert jieba.dt.FREQ.get("戈壁滩长") is None
    assert other.tokenizer.FREQ.get("戈壁滩长") is None


# --- hostile or missing input ---------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "“", "”林枫”", "\n\n\n", "「『“林枫", "林" * 5000])
def test_odd_texts_never_crash(text):
    check(text)


def test_an_imported_tree_without_aliases_state_or_ledger_still_checks():
    bare = [{"slug": "lao-wang", "display_name": "老王", "status": "retired"}]
    report = story_checks("老王推门走了进来。", StoryInputs(characters=bare, state={"characters": "broken"}))
    assert report.violations and not report.items and not report.misplaced
    weird = StoryInputs(characters=[{"slug": None}, {"display_name": "x"}, {"slug": "a", "aliases": [1, None, ""]}],
                        state={"characters": {"a": {"inventory": "not a list", "location": 3}}},
                        delta_ops=["nonsense", {"op": "foreshadow"}], ledger={}, rules=[{"keywords": [None, 1]}])
    assert story_checks("a走进来。", weird).violations == []


def test_violations_force_a_revision():
    report = run_checks(CONTRADICTIONS["a dead character acting, called by a title"], characters=CHARACTERS,
                        story=inputs())
    scores = {d: {"score": 5} for d in ("plot_logic", "character", "immersion", "foreshadowing", "pacing",
                                          "style_naturalness", "emotional_impact", "storyline_coherence")}
    result = decide({"scores": scores}, revision_count=0, deterministic_violations=report.violations)
    assert result.decision == "revise"
    assert any("老掌门" in fix for fix in result.required_fixes)
