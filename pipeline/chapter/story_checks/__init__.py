"""Checks that see the story (#18): the chapter against the roster, the state, the foreshadowing
ledger and the hard world rules, deterministic, before the judge, on every path (the pipeline's
judge stage, ``novel import-step``, ``novel validate --tree``).

``story_checks`` returns a ``StoryReport``: ``violations`` force a revision with their evidence
(``gate.decide(deterministic_violations=...)``); ``suspicions`` go to the judge, who decides.
Texts are Chinese: writers and the judge read them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.chapter.story_checks.cast import (
    gone_characters,
    misplaced_characters,
    text_placed_characters,
    unknown_people,
)
from pipeline.chapter.story_checks.roster import Roster
from pipeline.chapter.story_checks.scene_text import SceneText
from pipeline.chapter.story_checks.story_facts import (
    foreshadowing_resolved_again,
    hard_rule_hits,
    item_vocabulary,
    items_not_held,
    rule_paraphrase_hits,
)

GONE_WORDS = {"retired": "已退场", "dead": "已死亡"}


@dataclass(frozen=True)
class StoryInputs:
    """What the checks compare the chapter with; every field may be empty (an imported tree may
    lack aliases, state or ledger: the check that needs it then finds nothing)."""
    characters: Sequence[Mapping[str, Any]] = ()  # [{slug, display_name, status, aliases}]
    state: Mapping[str, Any] = field(default_factory=dict)  # facts §10.8 current state (before the chapter)
    place: str = ""  # the outline's Location for the chapter
    delta_ops: Sequence[Mapping[str, Any]] = ()  # the chapter's staged delta ops
    ledger: Mapping[str, str] = field(default_factory=dict)  # foreshadowing id -> status before the chapter
    history_ops: Sequence[Mapping[str, Any]] = ()  # earlier deltas' ops (items once held)
    rules: Sequence[Mapping[str, Any]] = ()  # L1 rules with keywords
    planned_names: Iterable[str] = ()  # names the plan introduces (not unknown)
    unknown_limit: int = 0  # platform-profile info_load.max_unknown_entities_per_chapter


@dataclass
class StoryReport:
    gone: list[dict[str, Any]]
    misplaced: list[dict[str, Any]]
    unknown_entities: list[dict[str, Any]]
    unknown_limit: int
    items: list[dict[str, Any]]
    resolved_again: list[dict[str, str]]
    rules: list[dict[str, Any]]
    rule_echoes: list[dict[str, Any]] = field(default_factory=list)
    placed_elsewhere: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    suspicions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def story_checks(text: str, inputs: StoryInputs) -> StoryReport:
    scene = SceneText(text)
    roster = Roster(inputs.characters, inputs.state)
    hits = roster.hits(scene.text)
    ops = [op for op in inputs.delta_ops if isinstance(op, Mapping)]
    report = StoryReport(
        gone=gone_characters(scene, roster, hits),
        misplaced=misplaced_characters(scene, hits, inputs.state, inputs.place, ops),
        # without a roster every name would be "unknown": the check needs the cast to compare with
        unknown_entities=unknown_people(scene, roster, inputs.planned_names) if scene.text and roster.people else [],
        unknown_limit=max(0, int(inputs.unknown_limit or 0)),
        items=items_not_held(scene, hits, inputs.state, item_vocabulary(inputs.state, inputs.history_ops), ops),
        resolved_again=foreshadowing_resolved_again(inputs.ledger, ops),
        rules=hard_rule_hits(scene, inputs.rules),
    )
    report.rule_echoes = rule_paraphrase_hits(scene, inputs.rules, report.rules)
    already = {m["slug"] for m in report.misplaced}
    report.placed_elsewhere = [p for p in text_placed_characters(scene, hits, inputs.state, inputs.place, ops)
                               if p["slug"] not in already]
    _explain(report)
    return report


def _explain(report: StoryReport) -> None:
    v, s = report.violations, report.suspicions
    for g in report.gone:
        who = f"{GONE_WORDS.get(g['gone'], '已退场')}角色「{g['display_name']}」"
        if g["name"] != g["display_name"]:
            who += f"（以「{g['name']}」称呼）"
        if g["kind"] == "acts":
            v.append(f"{who}在场景中行动或说话：「{g['evidence']}」")
        else:
            s.append(f"{who}在对话、回忆或闪回中被提及，请确认只是提及：「{g['evidence']}」")
    for m in report.misplaced:
        v.append(f"角色「{m['display_name']}」按状态在「{m['location']}」，本章地点是「{m['place']}」，"
                 f"状态补丁也没有移动他：「{m['evidence']}」")
    for p in report.placed_elsewhere:
        v.append(f"正文让角色「{p['display_name']}」身在「{p['text_place']}」，但状态中他在「{p['location']}」，"
                 f"状态补丁也没有移动他：「{p['evidence']}」")
    for i in report.items:
        had = "、".join(i["inventory"]) or "无"
        v.append(f"角色「{i['display_name']}」使用了「{i['item']}」，但状态中他并不持有（现有物品：{had}）：「{i['evidence']}」")
    for f in report.resolved_again:
        v.append(f"伏笔 {f['id']} 已经回收过，本章不能再次回收")
    for r in report.rules:
        if r["framed"]:
            s.append(f"{r['rule_id']}：「{r['keyword']}」出现在引语或否定中，请确认没有违反硬规则：{r['rule']}。「{r['evidence']}」")
        else:
            v.append(f"{r['rule_id']}：正文出现「{r['keyword']}」，违反硬规则：{r['rule']}。「{r['evidence']}」")
    for e in report.rule_echoes:
        s.append(f"{e['rule_id']}：正文出现「{e['word']}」，请确认没有换一种说法违反硬规则：{e['rule']}。「{e['evidence']}」")
    names = "、".join(u["mention"] for u in report.unknown_entities)
    if len(report.unknown_entities) > report.unknown_limit:
        v.append(f"本章出现 {len(report.unknown_entities)} 个角色表中没有的人名（{names}），"
                 f"超过平台信息负荷上限 {report.unknown_limit}：请改用已有角色，或先在角色表中登记")
    elif report.unknown_entities:
        s.append(f"本章出现角色表中没有的人名：{names}")
