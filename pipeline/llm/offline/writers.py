"""What the offline backend answers for each stage: Filament tags with content in the exact protocol
the stage asks for, built from the request's structured slice (never from the prompt text).

Each writer takes ``(slice, rng)`` and returns ``{tag: content}``. The slices each stage sends:

- ``draft`` / ``quickstart:trial``: chapter, title, storyline_id, characters [{slug, display_name}],
  objectives [text], place, target_chars, blacklist [words]; answers ``chapter`` (H1 + text) and
  ``hints`` (JSON ``{chapter, hints[]}``).
- ``summarize``: chapter, title, storyline_id, characters, place, foreshadowing_updates {id: status};
  open_facts [{id, kind, text, characters}]; answers ``summary`` (seed format), ``state_update``
  (triples), ``memory``, ``crossref`` and ``facts`` (the ledger's new and closed facts).
- ``refine``: chapter_text, blacklist, lint_targets [{rule, severity, name, evidence [{start, end}]}];
  answers ``edits`` (JSON list of {find, replace, reason}) that fix every hard finding, then blacklist words.
- ``judge`` / ``quickstart:results``: chapter, objectives [{id, description, required}],
  score_mode ("normal" | "low" | "revise" | "incomplete": one dimension left out), and from the platform
  hook_policy, golden_gates, chapter_ending; answers ``evaluation`` (JSON: 8 scores plus hook_strength,
  the ``hook`` verdict, and ``golden_chapter_gates`` checks when the chapter has gates).
- ``plan`` / ``quickstart:f0``: volume, chapter_start, chapter_end, storylines [slug], characters,
  previous_state_keys [slug]; answers ``outline``, ``schedule``, ``foreshadowing``,
  ``new_characters`` and ``contracts`` that pass the facts §6 validation.
- ``consolidate``: summaries [text], max_chars, open_facts [line]; answers ``summary`` (keeping the open facts).
- ``quickstart:world`` (brief, genre, platform) / ``quickstart:characters`` and ``weave`` (brief,
  rules, and for weaving ``wanted`` [{name, role, brief, first_chapter}]) / ``quickstart:style`` and
  ``voice:style`` (brief, genre, sample, statistics, source_type: exemplars cut from the sample);
  ``review`` (volume, chapter_range).

The world, the opening cast, and the places of plans and drafts whose slice carries the ``brief``
are made of the brief's own words (``brief_words``: names, places and nouns picked by jieba),
with phrasings chosen by a hash of the brief: a book about a noodle shop in a wasteland gets a
wasteland and a noodle shop, never the demo novel's sect.
- ``promote:titles|body|cta|hashtags|platforms``: the promotion post of seed 001, one step each
  (hook variants with scores, body with sections, CTA, hashtags, platform versions within limits).
"""
from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from typing import Any

from pipeline.llm.offline.brief_words import FALLBACK_PLACES, FALLBACK_ROLES, brief_words, invented_names, name_slug
from pipeline.llm.offline.lint_fixes import hard_fix_edits
from pipeline.llm.offline.prose import paragraphs
from projects.schemas import DEFAULT_SCORE_WEIGHTS, SCORE_DIMENSIONS
from projects.voice_stats import passages

Writer = Callable[[dict[str, Any], random.Random], dict[str, str]]
PLACES = ["北境雪原", "幽暗森林", "魔都", "星火旧址", "断崖渡口"]
MOODS = ["警觉", "决意", "疲惫", "愤怒", "平静", "不安"]
CAST = [("lin-feng", "林枫"), ("su-wan", "苏婉"), ("zhao-ming", "赵明"), ("chen-lao", "陈老")]
_QUOTES = str.maketrans("「」『』", "“”‘’")  # a contract's 「…」 is written in the prose's quote marks (issue #17)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _names(slice_: dict[str, Any]) -> list[str]:
    return [c.get("display_name") or c["slug"] for c in slice_.get("characters", [])]


def _places(slice_: dict[str, Any]) -> list[str]:
    """The brief's places when the slice carries the brief, else the stock ones."""
    return list(brief_words(slice_["brief"]).places or FALLBACK_PLACES) if slice_.get("brief") else PLACES


def draft(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    number, title = slice_["chapter"], slice_.get("title") or "无题"
    place = slice_.get("place") or rng.choice(_places(slice_))
    things = list(brief_words(slice_["brief"]).things) if slice_.get("brief") else None
    body = paragraphs(seed=str(rng.random()), names=_names(slice_), place=place, things=things,
                      goals=[str(g).translate(_QUOTES) for g in slice_.get("objectives", [])],
                      target_chars=int(slice_.get("target_chars", 3000)))
    blacklist = slice_.get("blacklist") or []
    if blacklist and rng.random() < 0.5:  # leave the refiner something to do, as a real draft would
        body[len(body) // 2] = body[len(body) // 2].replace("，", f"，{rng.choice(blacklist)}", 1)
    hints = [f"{c['slug']} 位置: {place}" for c in slice_.get("characters", [])[:3]]
    return {"chapter": f"# 第{number}章 {title}\n\n" + "\n\n".join(body),
            "hints": _dumps({"chapter": number, "hints": hints})}


def summarize(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    number, line = slice_["chapter"], slice_.get("storyline_id", "main-arc")
    characters = slice_.get("characters", [])
    place = slice_.get("place") or rng.choice(PLACES)
    names = _names(slice_) or ["主角"]
    updates = slice_.get("foreshadowing_updates") or {}
    marks = {"planted": "埋设", "advanced": "推进", "resolved": "回收"}
    foreshadow_lines = [f"- [{marks[status]}] {fid}" for fid, status in updates.items()] or ["- 无"]
    summary = "\n".join([f"## 第 {number} 章摘要", "### 关键事件", *_key_events(slice_, names, place, rng),
                         "### 伏笔变更", *foreshadow_lines, "### 故事线标记", f"- storyline_id: {line}"])
    triples: list[list[Any]] = []
    for character in characters[:3]:
        triples.append(["SET", f"characters.{character['slug']}.location", place])
        triples.append(["SET", f"characters.{character['slug']}.emotional_state", rng.choice(MOODS)])
    if len(characters) >= 2:
        triples.append(["ADD", f"characters.{characters[0]['slug']}.relationships.{characters[1]['slug']}",
                        rng.choice([-5, 5, 10])])
    triples.append(["SET", "world_state.time_marker", f"第{number}日"])
    triples += [["FORESHADOW", fid, status, f"第{number}章"] for fid, status in updates.items()]
    memory = f"{names[0]}已到{place}（ch{number}）。" + (slice_.get("memory") or "")
    return {"summary": summary, "state_update": _dumps(triples), "memory": memory[:480],
            "crossref": _dumps({"storyline_id": line, "cross_references": [], "leak_risk": "none",
                                "leak_detail": ""}),
            "facts": _dumps(_facts(slice_, place))}


EVENT_TURNS = ["却发现事情比预想的复杂", "付出了不小的代价", "与同伴起了分歧", "得到一条意外的线索",
               "暂时稳住了局面", "被迫改变了计划"]
EVENT_CLUES = ["一封没有署名的旧信", "半张残破的地图", "一枚刻着暗纹的铜钱", "客栈掌柜含糊的证词",
               "雪地里一行陌生的脚印", "石壁上新刻的记号"]
EVENT_ENDINGS = ["有人在暗处盯上了他们", "约定的接应没有出现", "一个旧识的名字被重新提起", "下一站的路被大雪封住",
                 "身边的人似乎隐瞒了什么"]
SUMMARY_EVENT_CHARS = 260  # facts §10.10: a summary is at most 300 characters; its events about this


def _key_events(slice_: dict[str, Any], names: list[str], place: str, rng: random.Random) -> list[str]:
    """The chapter's key events as a summarizer writes them, about as long as a real summary (facts
    §10.10: up to 300 characters): where the lead went, what each objective of the contract came
    to, who else was there, what was found and how the chapter left things."""
    lead = names[0]
    events = [f"- {lead}抵达{place}，局势起了变化。"]
    for objective in [o for o in slice_.get("objectives") or [] if o][:3]:
        events.append(f"- {lead}为「{objective[:40]}」奔走，{rng.choice(EVENT_TURNS)}。")
    for other in names[1:3]:
        events.append(f"- {other}在{place}与{lead}碰面，{rng.choice(MOODS)}之下{rng.choice(EVENT_TURNS)}。")
    events.append(f"- {lead}在{place}发现{rng.choice(EVENT_CLUES)}，决定暂时瞒下不说。")
    events.append(f"- {slice_.get('title') or '本章'}的冲突告一段落，{lead}{rng.choice(MOODS)}地望向下一步。")
    events.append(f"- 章末：{rng.choice(EVENT_ENDINGS)}。")
    kept, size = [], 0
    for event in events:  # the first and the last lines stay; the middle ones while they fit
        if kept and event is not events[-1] and size + len(event) + len(events[-1]) > SUMMARY_EVENT_CHARS:
            continue
        kept.append(event)
        size += len(event)
    return kept


FACT_KINDS = ("promise", "debt", "injury", "secret", "departure", "identity", "death")
FACT_TEXTS = {"promise": "{a}答应{b}，到{place}之后替他办一件事", "debt": "{a}欠{b}一份救命之恩",
              "injury": "{a}在{place}受了伤，左臂还使不上力", "secret": "{a}瞒着{b}藏起了一样东西",
              "departure": "{a}离开{place}，说好不再回来", "identity": "{a}向{b}表明了自己的真实身份",
              "death": "{a}在{place}亲眼看见一位旧识死去"}


def _facts(slice_: dict[str, Any], place: str) -> dict[str, list]:
    """Every third chapter establishes one fact of the next kind about the first two characters;
    in between, every third chapter fulfils the oldest open fact it was shown."""
    number, characters = slice_["chapter"], slice_.get("characters") or []
    new, closed = [], []
    if characters and number % 3 == 1:
        kind = FACT_KINDS[(number // 3) % len(FACT_KINDS)]
        a = characters[0].get("display_name") or characters[0]["slug"]
        b = characters[1].get("display_name") if len(characters) > 1 else "同伴"
        new.append({"kind": kind, "text": FACT_TEXTS[kind].format(a=a, b=b, place=place),
                    "characters": [c["slug"] for c in characters[:2]], "storyline": slice_.get("storyline_id", ""),
                    "foreshadowing": []})
    open_facts = slice_.get("open_facts") or []
    if open_facts and number % 3 == 0:
        closed.append({"id": open_facts[0]["id"], "status": "fulfilled", "note": f"第{number}章兑现"})
    return {"new": new, "closed": closed}


def refine(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    text = slice_.get("chapter_text", "")
    edits = hard_fix_edits(text, slice_.get("lint_targets") or [])  # every hard finding, first
    for word in sorted(set(slice_.get("blacklist") or []), key=len, reverse=True):
        start = text.find(word)
        if start < 0:
            continue
        context = text[max(0, start - 6):start + len(word)]
        edits.append({"find": context, "replace": context.replace(word, ""), "reason": f"删去 AI 腔词语「{word}」"})
    return {"edits": _dumps(edits)}


def _golden_floors(gates: list[dict[str, Any]]) -> dict[str, int]:
    """The score a dimension needs to meet a golden gate's ``scores.<dim>.score`` threshold."""
    floors = {}
    for gate in gates:
        threshold = gate.get("threshold") or {}
        parts = str(threshold.get("metric", "")).split(".")
        if len(parts) == 3 and parts[0] == "scores" and threshold.get("operator") in (">=", ">"):
            value = float(threshold.get("value", 0)) + (0.5 if threshold["operator"] == ">" else 0)
            floors[parts[1]] = min(5, math.ceil(value))
    return floors


def _hook(slice_: dict[str, Any], mode: str, rng: random.Random) -> dict[str, Any]:
    """The chapter-end hook verdict (facts §10.11), within the platform's policy from the slice."""
    policy = slice_.get("hook_policy") or {}
    types = policy.get("allowed_types") or ["question"]
    floor = int(policy.get("min_strength") or 1) if policy.get("required") else 1
    strength = max(floor, rng.randint(4, 5) if mode == "normal" else 3)
    ending = str(slice_.get("chapter_ending") or "").strip()
    return {"present": True, "type": types[slice_["chapter"] % len(types)],
            "evidence": ending[-60:] or "（离线）结尾留下了悬念", "reason": "离线评审：结尾留有悬念",
            "strength": strength}


def judge(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    mode = slice_.get("score_mode", "normal")
    gates = slice_.get("golden_gates") or []
    floors = _golden_floors(gates)
    # A judge that passes a golden gate scores its dimension to match; with such a floor the low
    # band scores the rest 2, so the overall stays in [2, 3) as the mode promises.
    band = {"normal": (4, 5), "revise": (3, 3), "low": (2, 2) if floors else (2, 3), "incomplete": (4, 5)}[mode]
    scores = {dim: {"score": max(rng.randint(*band), floors.get(dim, 0)), "weight": DEFAULT_SCORE_WEIGHTS[dim],
                    "reason": "离线评审", "evidence": "（离线）"} for dim in SCORE_DIMENSIONS}
    if mode == "incomplete":  # a judge that forgot a dimension: its evaluation is not usable
        scores.pop(SCORE_DIMENSIONS[-1])
    overall = round(sum(s["score"] * s["weight"] for s in scores.values()), 2)
    hook = _hook(slice_, mode, rng)
    scores["hook_strength"] = {"score": hook["strength"], "weight": 0.0, "reason": hook["reason"],
                               "evidence": hook["evidence"]}
    checks = [{"objective_id": o.get("id", f"OBJ-{i}"), "status": "pass", "confidence": "high",
               "detail": o.get("description", "")} for i, o in enumerate(slice_.get("objectives", []), 1)]
    recommendation = "pass" if overall >= 4.0 else "polish" if overall >= 3.5 else "revise" if overall >= 3.0 else \
        "review" if overall >= 2.0 else "rewrite"
    fixes = [] if overall >= 3.5 else [{"target": "pacing", "instruction": "加快中段节奏，删去重复动作描写"}]
    evaluation = {"chapter": slice_["chapter"], "contract_verification": {
        "l1_checks": [], "l2_checks": [], "l3_checks": checks, "ls_checks": [], "has_violations": False},
        "scores": scores, "overall": overall, "recommendation": recommendation, "risk_flags": [],
        "required_fixes": fixes, "issues": [], "strengths": ["情节推进清楚"], "hook": hook}
    if gates:
        evaluation["golden_chapter_gates"] = {"checks": [
            {"id": gate["id"], "status": "pass", "detail": "离线评审：满足", "evidence": ""} for gate in gates]}
    return {"evaluation": _dumps(evaluation)}


def _outline_block(number: int, line: str, pov: str, rng: random.Random, places: list[str]) -> str:
    return "\n".join([
        f"### 第 {number} 章: {rng.choice(['风起', '夜行', '来客', '对峙', '渡口', '密谈'])}",
        f"- **Storyline**: {line}", f"- **POV**: {pov}", f"- **Location**: {rng.choice(places)}",
        f"- **Conflict**: {rng.choice(['追兵逼近', '真相半露', '盟友生疑'])}",
        f"- **Arc**: {rng.choice(['决意南下', '学会隐忍', '看清对手'])}", "- **Foreshadowing**: 无",
        f"- **StateChanges**: {pov}.location", "- **TransitionHint**: null",
    ])


def plan(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    volume, start, end = slice_["volume"], slice_["chapter_start"], slice_["chapter_end"]
    lines = slice_.get("storylines") or ["main-arc"]
    characters = slice_.get("characters") or [{"slug": s, "display_name": n} for s, n in CAST[:2]]
    pov = characters[0]["slug"]
    places = _places(slice_)
    state_keys = list(dict.fromkeys([*slice_.get("previous_state_keys", []), pov]))
    blocks, contracts = [f"## 第 {volume} 卷大纲", ""], []
    for number in range(start, end + 1):
        line = lines[(number - start) % len(lines)]
        blocks += [_outline_block(number, line, pov, rng, places), ""]
        contracts.append({
            "chapter": number, "storyline_id": line, "excitement_type": "setup",
            "preconditions": {"character_states": {key: {"location": "未知"} for key in state_keys},
                              "required_world_rules": []},
            "objectives": [{"id": f"OBJ-{number}-1", "type": "plot", "required": True,
                            "description": f"推进第{number}章的主要冲突"}],
            "postconditions": {"state_changes": {pov: {"location": rng.choice(places)}}, "foreshadowing_updates": {}},
            "acceptance_criteria": ["人物行为符合契约"],
        })
        state_keys = [pov]
    schedule = {"volume": volume, "active_storylines": lines[:4], "convergence_events": []}
    foreshadowing = {"schema_version": 1, "items": [{"id": f"vol{volume}_secret", "description": "本卷暗线",
                                                     "scope": "short", "target_resolve_range": [start, end]}]}
    # from the second volume on, one newcomer, so that planning's character weaving has work
    newcomers = [{"name": f"第{volume}卷来客", "role": "supporting", "brief": "带来远方的消息",
                  "first_chapter": min(start + 2, end)}] if volume >= 2 else []
    return {"outline": "\n".join(blocks).rstrip(), "schedule": _dumps(schedule), "foreshadowing": _dumps(foreshadowing),
            "new_characters": _dumps(newcomers), "contracts": _dumps(contracts)}


def consolidate(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    """The events of the summaries (their ``- `` lines; a consolidated text's clauses), whole,
    as many as fit the level's ``max_chars``."""
    limit = slice_.get("max_chars") if isinstance(slice_.get("max_chars"), int) else 400
    events: list[str] = []
    for text in slice_.get("summaries", []):
        bullets = [line.lstrip("- ") for line in text.splitlines() if line.startswith("- ")
                   and "storyline_id" not in line]
        events += bullets or [part for part in text.split("；") if part.strip() and part != "（无事发生）"]
    # told to keep the facts still open: it does, first, then the events as many as fit
    events = [f"仍有效：{line}" for line in slice_.get("open_facts") or []] + events
    kept, size = [], 0
    for event in dict.fromkeys(e.strip() for e in events if e.strip()):
        if size + len(event) + 1 > limit:
            break
        kept.append(event)
        size += len(event) + 1
    return {"summary": "；".join(kept) or "（无事发生）"}


def world(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    """Three hard rules and three short documents (facts §5 light mode) about the brief's places
    and things; phrasings picked by the brief's own seed."""
    words = brief_words(slice_.get("brief", ""))
    pick = words.rng("world")
    place, thing = words.place(0), words.thing(0)
    other = words.place(1) if len(words.places) > 1 else "唯一的关口"
    later = words.thing(1)
    rules = [("geography", pick.choice([f"{place}与外面只有一条路相通，出入都要经过{other}",
                                        f"从{place}到{other}要走整整一天，夜里没有人敢赶路"])),
             ("social", pick.choice([f"在{place}，{thing}比钱更要紧，谁也不能私藏",
                                     f"{place}的规矩：外人不得过问{thing}的来历"])),
             ("history", pick.choice([f"{place}的变故与{later}有关，知道内情的人越来越少",
                                      f"很多年前，{other}出过一件与{later}有关的大事，至今没人说得清"]))]
    docs = {"geography": f"故事发生在{place}。{other}是人们落脚的地方，{thing}在这里随处可见，也最受看重。",
            "history": f"{place}并非一直是今天的样子。{rules[2][1]}。",
            "rules": "；".join(rule for _, rule in rules) + "。"}
    items = [{"id": f"W-00{i}", "category": category, "rule": rule, "constraint_type": "hard",
              "canon_status": "established", "exceptions": []} for i, (category, rule) in enumerate(rules, start=1)]
    lines = {"storylines": [{"id": "main-arc", "name": "主线", "type": "main_arc", "scope": "novel",
                             "pov_characters": [], "affiliated_factions": [], "timeline": "present",
                             "status": "active", "description": slice_.get("brief", "")[:100]}]}
    return {"rules": _dumps({"rules": items}), "world_docs": _dumps(docs), "storylines": _dumps(lines)}


def _opening_cast(slice_: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(slug, display name, profile) of the quick start's cast: the people the brief names, then
    invented names, each given a role and the places and things of the brief."""
    words = brief_words(slice_.get("brief", ""))
    count = max(1, min(int(slice_.get("count") or 3), 6))
    names = list(words.people[:count])
    names += [n for n in invented_names(words, count + len(names)) if n not in names][:count - len(names)]
    pick, taken, cast = words.rng("cast"), set(), []
    for i, name in enumerate(names):
        role = words.roles[i] if i < len(words.roles) else FALLBACK_ROLES[i % len(FALLBACK_ROLES)]
        profile = pick.choice([(f"{name}，{role}，在{words.place(i)}讨生活。"
                                f"{name}与{words.thing(i)}之间有一段说不清的牵连。"),
                               f"{name}是{words.place(i)}的{role}，嘴上不饶人，心里记着{words.thing(i)}的事。",
                               f"{name}，{role}。来{words.place(i)}之前的事，{name}从不提起，只守着{words.thing(i)}。"])
        cast.append((name_slug(name, taken), name, profile))
    return cast


def characters(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    """The opening cast, or (``wanted``: the new characters of a volume plan) one per entry."""
    wanted = slice_.get("wanted") or []
    if wanted:
        people = [(f"new-{rng.randrange(1000, 9999)}-{i}", w.get("name") or f"新人物{i}", w.get("first_chapter") or 1,
                   f"{w.get('name') or f'新人物{i}'}，性格分明，有自己的秘密。") for i, w in enumerate(wanted, 1)]
    else:
        people = [(slug, name, 1, profile) for slug, name, profile in _opening_cast(slice_)]
    cast = [{"id": slug, "display_name": name, "canon_status": "established", "profile": profile,
             "contracts": [{"id": f"C-{slug.upper()}-001", "type": "personality", "rule": "言行一致",
                            "valid_from_chapter": first, "valid_until": None, "exceptions": []}]}
            for slug, name, first, profile in people]
    return {"characters": _dumps(cast)}


def _voice_directives(stats: dict[str, Any]) -> list[dict[str, str]]:
    """DO/DON'T directives from a sample's measured numbers (the offline stand-in for the analyst's ear)."""
    sentence = float(stats.get("avg_sentence_length") or 0)
    dialogue = float(stats.get("dialogue_ratio") or 0)
    paragraph = float(stats.get("avg_paragraph_length") or 0)
    marks = stats.get("punctuation_per_kchars") or {}
    out = [{"directive": f"句子保持样文的长度，平均每句约 {round(sentence)} 字",
            "do": "短句推进动作，长句留给景物和心理" if sentence < 20 else "用舒展的长句铺陈，关键处收成短句",
            "dont": "通篇一样长的句子" if sentence < 20 else "把每句都切成碎短句"}]
    if dialogue >= 0.3:
        out.append({"directive": f"对话占比约 {round(dialogue * 100)}%，用对话推动情节",
                    "do": "让人物开口说话，话里带着各自的脾气", "dont": "用大段叙述转述本该说出口的话"})
    else:
        out.append({"directive": f"叙述为主，对话占比约 {round(dialogue * 100)}%",
                    "do": "靠叙述和细节推进，对话只在要紧处出现", "dont": "为了热闹硬塞对话"})
    out.append({"directive": f"段落平均约 {round(paragraph)} 字",
                "do": "一段只说一件事，长短交错", "dont": "大段不分行的说明文字"})
    if float(marks.get("exclamation") or 0) < 2:
        out.append({"directive": "情绪靠动作和细节，不靠标点", "do": "用人物的反应写出情绪",
                    "dont": "连用感叹号和省略号"})
    return out


def style(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    """``quickstart:style`` and ``voice:style``: slice ``sample`` (text, may be ""), ``statistics``
    (the sample's, by code), ``source_type``. With a sample: 3–5 exemplars cut from its real
    sentences (50–150 characters, spread evenly over the sample) and directives from its numbers.
    The numbers claimed here are a template's on purpose: the stage replaces them with the measured ones."""
    profile: dict[str, Any] = {
        "source_type": "template", "avg_sentence_length": 18, "dialogue_ratio": 0.35,
        "rhetoric_preferences": ["短句切换"], "forbidden_words": ["不禁", "莫名的"],
        "writing_directives": [{"directive": "少用形容词堆叠", "do": "写动作", "dont": "写空洞情绪"}]}
    sample = slice_.get("sample") or ""
    if not sample:
        return {"style_profile": _dumps(profile)}
    candidates = passages(sample, least=50, most=150)
    count = min(5, len(candidates))
    picks = sorted({round(i * (len(candidates) - 1) / max(1, count - 1)) for i in range(count)}) if count else []
    profile.update({"source_type": slice_.get("source_type") or "original",
                    "style_exemplars": [candidates[i] for i in picks],
                    "writing_directives": _voice_directives(slice_.get("statistics") or {}),
                    "analysis_notes": f"从 {len(candidates)} 段候选中选出 {len(picks)} 段样例"})
    return {"style_profile": _dumps(profile)}


def review(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    start, end = slice_.get("chapter_range", [1, 1])
    report = {"schema_version": 1, "scope": "volume_end", "volume": slice_.get("volume", 1),
              "chapter_range": [start, end], "issues": [],
              "stats": {"chapters_checked": end - start + 1, "issues_total": 0,
                        "issues_by_severity": {"high": 0, "medium": 0, "low": 0}}}
    return {"audit": _dumps(report)}


# --- promotion posts (seed 001's content zone): slice = intent, platform, topic, reference_summary, style

PLATFORM_LIMITS = {"xiaohongshu": 1000, "wechat": 2000, "twitter": 280, "general": 800}


def promote_titles(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    topic = slice_.get("topic") or "新章更新"
    variants = [{"type": kind, "content": text, "score": round(rng.uniform(0.55, 0.95), 2)} for kind, text in [
        ("question", f"{topic}：他为什么偏偏在雪夜回头？"), ("suspense", f"{topic}，密信里只写了三个字"),
        ("emotion", f"{topic}｜那一刀，他还是没能落下"), ("number", f"{topic}：3 个细节看懂这一章")]]
    return {"titles": _dumps({"variants": variants})}


def promote_body(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    summary = (slice_.get("reference_summary") or "林枫在雪原上遇见了改变命运的人。")[:200]
    sections = [{"title": "前情", "content": summary}, {"title": "看点", "content": "伏笔回收，人物关系急转。"}]
    body = {"content": f"{slice_.get('hook') or ''}\n{summary}\n这一章，故事真正开始转向。",
            "sections": sections, "key_points": ["雪夜对峙", "密信之谜"], "quotes": ["星火不灭，宗门就还在。"]}
    return {"body": _dumps(body), "scores": _dumps({"virality": round(rng.uniform(0.6, 0.9), 2),
                                                    "hook_strength": round(rng.uniform(0.6, 0.9), 2),
                                                    "emotional_resonance": round(rng.uniform(0.6, 0.9), 2)})}


def promote_cta(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    return {"cta": _dumps({"primary": "追更不迷路，点个关注", "secondary": "评论区聊聊你的猜测", "type": "follow"})}


def promote_hashtags(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    return {"hashtags": _dumps(["网络小说", "玄幻", "连载更新", slice_.get("topic") or "新章"])}


def promote_platforms(slice_: dict[str, Any], rng: random.Random) -> dict[str, str]:
    title, body = slice_.get("title") or "新章更新", slice_.get("body") or "故事继续。"
    tags = slice_.get("hashtags") or ["网络小说"]
    versions = {}
    for platform, limit in PLATFORM_LIMITS.items():
        text = body[: max(0, limit - len(title) - 20)]
        versions[platform] = {"title": title[:60], "body": text, "hashtags": tags[:5], "word_count": len(text),
                              "emoji_density": "medium" if platform == "xiaohongshu" else "low"}
    return {"platform_versions": _dumps(versions), "scores": _dumps({"platform_fit": round(rng.uniform(0.6, 0.9), 2)})}


WRITERS: dict[str, Writer] = {
    "promote:titles": promote_titles, "promote:body": promote_body, "promote:cta": promote_cta,
    "promote:hashtags": promote_hashtags, "promote:platforms": promote_platforms,
    "draft": draft, "quickstart:trial": draft,
    "summarize": summarize,
    "refine": refine,
    "judge": judge, "quickstart:results": judge,
    "plan": plan, "quickstart:f0": plan,
    "consolidate": consolidate, "weave": characters,
    "quickstart:world": world, "quickstart:characters": characters, "quickstart:style": style, "voice:style": style,
    "review": review,
}
