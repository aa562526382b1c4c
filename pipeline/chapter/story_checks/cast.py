"""Checks of who is in the scene (#18): a retired or dead character acting or speaking, a character
acting somewhere else than the state puts them, and named people nobody knows.

Each returns findings as plain dicts; ``pipeline.chapter.story_checks.story_checks`` turns them into violations
(they force a revision) and suspicions (the judge weighs them).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.chapter.story_checks.roster import NameHit, Roster, person_tagger
from pipeline.chapter.story_checks.scene_text import (
    PASSIVE_AFTER_NAME,
    SceneText,
    acts_after,
    is_present_object,
    is_subject,
)

# The hundred-odd commonest surnames, single and double. A jieba ``nr`` word that does not start with
# one is far more often a common word mis-tagged (明白, 高兴) than a name.
SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金"
    "石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂"
    "章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解"
    "牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎"
    "甄丛仲虞敖巩明佘池乐匡钮燕凤")
DOUBLE_SURNAMES = ("欧阳", "司马", "上官", "诸葛", "东方", "皇甫", "慕容", "令狐", "独孤", "南宫", "西门", "公孙",
                   "尉迟", "宇文", "长孙", "夏侯", "轩辕", "端木", "百里", "司徒", "呼延", "第五")
NOT_PERSON_ENDINGS = frozenset("家氏府门村庄帮派军宗族营寨楼阁殿国朝")  # 赵家, 林府: a clan or a place
# jieba's dictionary tags many common words ``nr`` (胡来, 冷清, 石阶, 田埂, 明白); an invented name is
# absent there (its prefixes are stored with frequency 0), so a word the dictionary counts is a word
COMMON_WORD_FREQ = 1
SURNAME_FLAGS = frozenset({"nr", "nrt", "nrfg", "j", "ns"})
GIVEN_NAME_FLAGS = frozenset("nag")  # noun, adjective or morpheme after a lone surname: 王大锤, 李小白
# Common words jieba tags ``nr`` that start with a surname character
NOT_NAMES = frozenset({"明白", "高兴", "安静", "文字", "江湖", "金色", "黄色", "白色", "黎明", "温柔", "常常", "方才",
                       "时候", "于是", "万一", "向来", "成功", "和尚", "石头", "龙头", "金子", "关于", "令人", "宁可",
                       "凌乱", "余光", "史上", "华丽", "龙王", "师父", "师兄", "师姐", "师妹", "师弟", "路上", "武功",
                       "安全"})


def acting(scene: SceneText, hit: NameHit) -> bool:
    """The name is the subject of a narration clause with a verb after it, outside dialogue and
    outside a memory/flashback frame."""
    if scene.in_dialogue(hit.start) or scene.in_memory_frame(hit.start):
        return False
    clause = scene.clause(hit.start)
    if is_present_object(scene.text, hit.start, clause.start) \
            and not scene.text[hit.end:].startswith(PASSIVE_AFTER_NAME):
        return True
    return is_subject(scene.text, hit.start, clause.start) and acts_after(scene.text, hit.end, clause.end)


def gone_characters(scene: SceneText, roster: Roster, hits: Sequence[NameHit]) -> list[dict[str, Any]]:
    """Retired or dead characters in the text: ``kind`` "acts" (a violation) or "mentioned" (in
    dialogue, memory or a flashback: a suspicion for the judge). One finding per character and kind."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for hit in hits:
        if not hit.person.gone:
            continue
        kind = "acts" if acting(scene, hit) else "mentioned"
        found.setdefault((hit.person.slug, kind), {
            "slug": hit.person.slug, "display_name": hit.person.display_name, "name": hit.name, "gone": hit.person.gone,
            "kind": kind, "evidence": scene.evidence(hit.start)})
    return list(found.values())


def _same_place(a: str, b: str) -> bool:
    """Lenient on purpose: places nest (青云山 / 青云山后山), so two names sharing two characters
    in a row count as the same place; only clearly different places are flagged."""
    a, b = re.sub(r"\s", "", a), re.sub(r"\s", "", b)
    if not a or not b or a in b or b in a:
        return True
    return any(a[i:i + 2] in b for i in range(len(a) - 1))


def _places(place: str) -> list[str]:
    return [p for p in re.split(r"[/／、，,;；|与和及→\-—~～]+", place or "") if p.strip()]


def _moved(slug: str, delta_ops: Iterable[Mapping[str, Any]]) -> bool:
    return any(isinstance(op, Mapping) and op.get("op") == "set" and op.get("path") == f"characters.{slug}.location"
               for op in delta_ops)


def misplaced_characters(scene: SceneText, hits: Sequence[NameHit], state: Mapping[str, Any] | None, place: str,
                         delta_ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Characters acting in the scene whose state location (facts §10.8) is not the chapter's place
    (the outline's Location), unless the chapter's delta moves them."""
    places = _places(place)
    characters = state.get("characters") if isinstance(state, Mapping) else None
    if not places or not isinstance(characters, Mapping):
        return []
    found: dict[str, dict[str, Any]] = {}
    for hit in hits:
        slug = hit.person.slug
        entry = characters.get(slug)
        location = entry.get("location") if isinstance(entry, Mapping) else None
        if slug in found or not isinstance(location, str) or not location.strip() or hit.person.gone:
            continue
        if any(_same_place(location, p) for p in places) or _moved(slug, delta_ops) or not acting(scene, hit):
            continue
        paragraph = scene.paragraph(hit.start)
        if location.strip() in scene.text[paragraph.start:paragraph.end]:
            continue  # the scene cuts to where they are (京城那边，苏晚晴推开窗): no contradiction

        found[slug] = {"slug": slug, "display_name": hit.person.display_name, "location": location, "place": place,
                       "evidence": scene.evidence(hit.start)}
    return list(found.values())


def _known_places(state: Mapping[str, Any], place: str) -> list[str]:
    names = set(_places(place))
    for entry in (state.get("characters") or {}).values() if isinstance(state.get("characters"), Mapping) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("location"), str):
            names.add(entry["location"].strip())
    if isinstance(state.get("locations"), Mapping):
        names.update(str(k).strip() for k in state["locations"])
    return sorted((n for n in names if len(n) >= 2), key=lambda n: (-len(n), n))


def text_placed_characters(scene: SceneText, hits: Sequence[NameHit], state: Mapping[str, Any] | None, place: str,
                           delta_ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Characters the narration puts at a known place (林枫站在京城的街头, 林枫回到青云山) that is not
    their state location, unless the delta moves them: [{slug, display_name, location, text_place, evidence}]."""
    characters = state.get("characters") if isinstance(state, Mapping) else None
    if not isinstance(characters, Mapping):
        return []
    found: dict[str, dict[str, Any]] = {}
    for known in _known_places(state, place):
        for match in re.finditer(LOCATIVE + re.escape(known), scene.text):
            at = match.end() - len(known)
            if scene.in_dialogue(at) or scene.in_memory_frame(at) or scene.text[match.end():].startswith(PAST_TIME):
                continue
            sentence = scene.sentence(at)
            who = next((h for h in reversed(hits) if sentence.start <= h.start and h.end <= match.start()), None)
            if who is None or who.person.gone or who.person.slug in found or _moved(who.person.slug, delta_ops):
                continue
            entry = characters.get(who.person.slug)
            location = entry.get("location") if isinstance(entry, Mapping) else None
            if not isinstance(location, str) or not location.strip() or _same_place(location, known):
                continue
            if scene.text[who.end:match.start()].count("，") or len(scene.text[who.end:match.start()]) > 12:
                continue  # the place belongs to someone or something later in the sentence
            found[who.person.slug] = {"slug": who.person.slug, "display_name": who.person.display_name,
                                      "location": location, "text_place": known, "evidence": scene.evidence(at)}
    return list(found.values())


# "at" or "arriving at" right before a place name puts the subject there
LOCATIVE = r"(?:身在|站在|坐在|躺在|待在|住在|守在|位于|置身|置身于|回到|来到|抵达|走进|进入|赶到|进了|到了|在)"
PAST_TIME = ("时", "的时候", "那", "之时", "期间")


def _looks_like_name(word: str) -> bool:
    if not re.fullmatch(r"[\u4e00-\u9fff]{2,4}", word) or word in NOT_NAMES or word[-1] in NOT_PERSON_ENDINGS:
        return False
    if any(a == b for a, b in zip(word, word[1:])):
        return False  # 蒙蒙亮, 冷冰冰, 黄澄澄: reduplicated descriptions, which jieba tags nr
    return word[0] in SURNAMES or word.startswith(DOUBLE_SURNAMES)


def unknown_people(scene: SceneText, roster: Roster, planned_names: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Person names (jieba ``nr``, with the roster and aliases as a user dictionary) that are neither
    in the roster nor planned (the volume plan's new characters). Facts §10.10's unknown-entity
    entries: [{mention, context, suggested_type: "character"}], in order of first appearance."""
    known = set(roster.known_names) | {n for n in planned_names if n}
    tagger = person_tagger(known)
    found: dict[str, dict[str, Any]] = {}
    dictionary = tagger.tokenizer.FREQ
    for word, start in _person_words(scene.text, tagger):
        if word in found or not _looks_like_name(word) or (dictionary.get(word) or 0) >= COMMON_WORD_FREQ:
            continue
        if word in known or any(word in name or name in word for name in known if len(name) >= 2):
            continue
        found[word] = {"mention": word, "context": scene.evidence(start), "suggested_type": "character"}
    return list(found.values())


def _person_words(text: str, tagger) -> list[tuple[str, int]]:
    """(word, offset) of the ``nr`` words; a lone surname (or a double one: 欧阳) followed by a short word
    that is not a verb, particle or the like is joined with it (jieba cuts 王大锤 as 王 / 大锤)."""
    pairs, at = [], 0
    for pair in tagger.cut(text):
        start = text.find(pair.word, at)
        start = at if start < 0 else start
        pairs.append((pair.word, pair.flag, start))
        at = start + len(pair.word)
    words = []
    for i, (word, flag, start) in enumerate(pairs):
        lone_surname = len(word) == 1 and word in SURNAMES and flag in SURNAME_FLAGS  # 韩 is tagged j
        if not flag.startswith("nr") and word not in DOUBLE_SURNAMES and not lone_surname:
            continue
        if (word in DOUBLE_SURNAMES or (len(word) == 1 and word in SURNAMES)) and i + 1 < len(pairs):
            given, given_flag, given_start = pairs[i + 1]
            if given_start == start + len(word) and 1 <= len(given) <= 2 and given_flag[:1] in GIVEN_NAME_FLAGS:
                words.append((word + given, start))
            continue
        words.append((word, start))
    return words
