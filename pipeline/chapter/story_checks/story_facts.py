"""Checks of what the story already settled (#18): items a character uses but does not hold, a
foreshadowing item resolved a second time, and hard world rules (a keyword inside a negation or a
quotation is only a suspicion).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.chapter.story_checks.roster import NameHit
from pipeline.chapter.story_checks.scene_text import SceneText

# Verbs of using or holding a thing, between the user's name and the thing (林枫拔出破碎魔杖)
USE_VERBS = ("拔出", "抽出", "取出", "掏出", "拿出", "摸出", "亮出", "祭出", "握", "持", "举", "挥", "拿", "用", "使",
             "戴", "佩", "背", "披", "捧", "攥", "递", "展开", "打开", "点燃", "吹响", "翻开", "穿", "扛", "提着", "晃",
             "按", "抚", "摩挲", "掂")


_MEASURE = re.compile(r"^[一二两三四五六七八九十半几数]+[把枚封块张柄件颗粒只支本卷面串根条双副顶个份瓶袋包]")


def item_core(item: str) -> str:
    """An item's name without a leading count (一封密信 -> 密信), as the text usually says it."""
    core = _MEASURE.sub("", item.strip())
    return core if len(core) >= 2 else item.strip()


def _characters(state: Any) -> Mapping[str, Any]:
    characters = state.get("characters") if isinstance(state, Mapping) else None
    return characters if isinstance(characters, Mapping) else {}


def _inventory(state: Mapping[str, Any], slug: str) -> list[str] | None:
    entry = _characters(state).get(slug)
    items = entry.get("inventory") if isinstance(entry, Mapping) else None
    return [item_core(i) for i in items if isinstance(i, str)] if isinstance(items, list) else None


def _holds(state: Mapping[str, Any] | None, slug: str, item: str, delta_ops: Sequence[Mapping[str, Any]]) -> bool:
    """True unless the state lists ``slug``'s inventory without ``item`` and the delta does not
    give it to them (no inventory recorded: nothing to contradict)."""
    held = _inventory(state or {}, slug)
    return held is None or item in held or _item_ops(delta_ops, slug, item)


def _item_ops(delta_ops: Iterable[Mapping[str, Any]], slug: str, item: str) -> bool:
    """The chapter's delta gives ``item`` to ``slug`` (so using it here is the story moving on)."""
    for op in delta_ops:
        if isinstance(op, Mapping) and op.get("op") in ("add", "set") \
                and op.get("path") == f"characters.{slug}.inventory":
            values = op.get("value") if isinstance(op.get("value"), list) else [op.get("value")]
            if any(isinstance(v, str) and item_core(v) == item for v in values):
                return True
    return False


def item_vocabulary(state: Mapping[str, Any] | None, history_ops: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """Items the story knows: everything in any inventory now, and everything ever added to or
    removed from one (the changelog's ops), longest first so 破碎魔杖 wins over 魔杖."""
    items: set[str] = set()
    for entry in _characters(state).values():
        if isinstance(entry, Mapping) and isinstance(entry.get("inventory"), list):
            items.update(i for i in entry["inventory"] if isinstance(i, str))
    if isinstance(state, Mapping) and isinstance(state.get("items"), Mapping):  # facts §10.8 top level "items"
        items.update(str(name) for name in state["items"])
    for op in history_ops:
        path = op.get("path") if isinstance(op, Mapping) else None
        if isinstance(path, str) and path.endswith(".inventory") and op.get("op") in ("add", "remove"):
            value = op.get("value")
            items.update(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
    cores = {item_core(i) for i in items if isinstance(i, str)}
    return sorted((i for i in cores if len(i) >= 2), key=lambda i: (-len(i), i))


def items_not_held(scene: SceneText, hits: Sequence[NameHit], state: Mapping[str, Any] | None,
                   items: Sequence[str], delta_ops: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A known item used in narration by the nearest named character before it in the sentence,
    with a using verb between them, while the state's inventory of that character lacks it (lost,
    handed on, or never held) and the chapter's delta does not give it to them."""
    text, taken, found = scene.text, [False] * len(scene.text), {}
    for item in items:
        start = text.find(item)
        while start != -1:
            end = start + len(item)
            if not any(taken[start:end]):
                taken[start:end] = [True] * len(item)
                finding = _item_use(scene, hits, state, item, start, delta_ops)
                if finding and (finding["slug"], item) not in found:
                    found[(finding["slug"], item)] = finding
            start = text.find(item, end)
    return list(found.values())


def _item_use(scene: SceneText, hits: Sequence[NameHit], state: Mapping[str, Any] | None, item: str, at: int,
              delta_ops: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    if scene.in_dialogue(at) or scene.in_memory_frame(at) or scene.negated(at):
        return None
    sentence = scene.sentence(at)
    user = next((h for h in reversed(hits) if sentence.start <= h.start and h.end <= at), None)
    start = user.end if user else sentence.start
    between = scene.text[start:at]
    if not any(verb in between for verb in USE_VERBS) or len(between) > 20:
        return None
    if user is None:  # 他拔出魔杖: whoever was named last in the paragraph, if nobody named there holds it
        paragraph = scene.paragraph(at)
        named = [h for h in hits if paragraph.start <= h.start < at and not scene.in_dialogue(h.start)]
        if not named or any(_holds(state, h.person.slug, item, delta_ops) for h in named):
            return None
        user = named[-1]
    if user.person.gone or _holds(state, user.person.slug, item, delta_ops):
        return None
    held = _inventory(state or {}, user.person.slug) or []
    return {"slug": user.person.slug, "display_name": user.person.display_name, "item": item,
            "inventory": held, "evidence": scene.evidence(at)}


def foreshadowing_resolved_again(ledger: Mapping[str, str] | None,
                                 delta_ops: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """``foreshadow`` ops with value ``resolved`` (facts §10.8) on items the ledger already has resolved."""
    ledger = ledger or {}
    found = []
    for op in delta_ops:
        if isinstance(op, Mapping) and op.get("op") == "foreshadow" and op.get("value") == "resolved":
            fid = str(op.get("path") or "")
            if ledger.get(fid) == "resolved" and fid not in [f["id"] for f in found]:
                found.append({"id": fid, "detail": str(op.get("detail") or "")})
    return found


RULE_BANS = re.compile(r"(?:不可以|不可|不能|不得|不准|不许|禁止|严禁|无法|不会)([\u4e00-\u9fff]{2,8})")


def _ban_bigrams(rule_text: str) -> list[str]:
    """The two-character ends of what a rule forbids (凡人不可御剑飞行 -> 御剑, 飞行): a chapter
    may break it in other words (御剑而起), which only the judge can tell."""
    found = []
    for phrase in RULE_BANS.findall(rule_text or ""):
        found += [phrase[:2], phrase[-2:]]
    return list(dict.fromkeys(found))


def rule_paraphrase_hits(scene: SceneText, rules: Sequence[Mapping[str, Any]],
                         keyword_hits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Established hard rules without a keyword hit whose forbidden action's words occur in plain
    narration: a suspicion for the judge ("broken in other words?"), never a violation."""
    already = {h["rule_id"] for h in keyword_hits}
    found = []
    for rule in rules:
        rule_id = str(rule.get("id") or rule.get("rule_id") or "")
        if rule_id in already or rule.get("constraint_type") != "hard" \
                or (rule.get("canon_status") or "established") != "established":
            continue
        for word in _ban_bigrams(str(rule.get("rule") or "")):
            start = scene.text.find(word)
            while start != -1 and (scene.in_dialogue(start) or scene.negated(start)):
                start = scene.text.find(word, start + len(word))
            if start != -1:
                found.append({"rule_id": rule_id, "word": word, "rule": str(rule.get("rule") or ""),
                              "evidence": scene.evidence(start)})
                break
    return found


def hard_rule_hits(scene: SceneText, rules: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Established hard L1 rules (facts §10.1) whose keyword occurs: ``framed`` False when it occurs
    in plain narration (a violation), True when every occurrence sits inside a quotation or after a
    negation (不能御剑, “禁止复活”: the rule quoted or kept, a suspicion for the judge)."""
    found = []
    for rule in rules:
        if rule.get("constraint_type") != "hard" or (rule.get("canon_status") or "established") != "established":
            continue
        best: dict[str, Any] | None = None
        for keyword in rule.get("keywords") or []:
            if not isinstance(keyword, str) or not keyword:
                continue
            start = scene.text.find(keyword)
            while start != -1:
                framed = scene.in_dialogue(start) or scene.negated(start)
                if best is None or (best["framed"] and not framed):
                    best = {"rule_id": str(rule.get("id") or rule.get("rule_id") or ""), "keyword": keyword,
                            "rule": str(rule.get("rule") or ""), "framed": framed,
                            "evidence": scene.evidence(start)}
                if not framed:
                    break
                start = scene.text.find(keyword, start + len(keyword))
            if best is not None and not best["framed"]:
                break
        if best:
            found.append(best)
    return found
