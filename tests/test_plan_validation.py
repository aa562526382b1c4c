"""Volume plan validation (facts §6): the offline PlotArchitect's plan passes; each rule's
violation is caught with a message naming the artifact."""
from __future__ import annotations

import copy
import json
import random

import pytest

from pipeline.llm.offline.writers import plan as offline_plan
from pipeline.book.plan_validation import VolumePlan, validate_volume_plan


def good_plan(start=31, end=35) -> VolumePlan:
    texts = offline_plan({"volume": 2, "chapter_start": start, "chapter_end": end,
                          "storylines": ["main-arc", "faction-war"],
                          "characters": [{"slug": "lin-feng", "display_name": "林枫"}]}, random.Random(1))
    contracts = {c["chapter"]: c for c in json.loads(texts["contracts"])}
    new_characters = [{"name": "王五", "role": "minor", "brief": "客栈掌柜", "first_chapter": start}]
    return VolumePlan(2, start, end, texts["outline"], json.loads(texts["schedule"]),
                      json.loads(texts["foreshadowing"]), new_characters, contracts)


def changed(plan: VolumePlan, **fields) -> VolumePlan:
    data = {**plan.__dict__, **fields}
    return VolumePlan(**data)


def errors_of(plan, **kw):
    return validate_volume_plan(plan, **kw).errors


def test_the_offline_plan_is_valid():
    report = validate_volume_plan(good_plan())
    assert report.ok, report.errors


def test_missing_and_duplicate_and_outside_chapters():
    plan = good_plan()
    outline = plan.outline.replace("### 第 33 章", "### 第 31 章").replace("### 第 35 章", "### 第 36 章")
    errors = " | ".join(errors_of(changed(plan, outline=outline)))
    assert "more than one heading" in errors and "[33, 35]" in errors and "[36]" in errors


def test_each_block_needs_its_eight_lines_and_a_storyline():
    plan = good_plan()
    outline = (plan.outline.replace("- **POV**:", "- POV:", 1)
               .replace("- **Storyline**: main-arc", "- **Storyline**:", 1))
    errors = " | ".join(errors_of(changed(plan, outline=outline)))
    assert "missing the line '- **POV**:'" in errors and "Storyline is empty" in errors


def test_unknown_excitement_type_only_warns():
    plan = good_plan()
    outline = plan.outline.replace("- **TransitionHint**: null",
                                   "- **TransitionHint**: null\n- **ExcitementType**: epic", 1)
    report = validate_volume_plan(changed(plan, outline=outline))
    assert report.ok and "unknown ExcitementType" in report.warnings[0]


def test_schedule_rules():
    plan = good_plan()
    assert "must be an object" in errors_of(changed(plan, schedule=[]))[0]
    too_many = {"active_storylines": ["a", "b", "c", "d", "e"]}
    assert any("1–4 allowed" in e for e in errors_of(changed(plan, schedule=too_many)))
    missing_line = {"active_storylines": ["main-arc"]}
    assert any("'faction-war' is not in active_storylines" in e
               for e in errors_of(changed(plan, schedule=missing_line)))
    objects = {"active_storylines": [{"storyline_id": "main-arc"}, {"storyline_id": "faction-war"}]}
    assert errors_of(changed(plan, schedule=objects)) == []  # facts §15.1: objects are read too
    report = validate_volume_plan(changed(plan, schedule={"active_storylines": ["main-arc", "faction-war", 7]}))
    assert report.ok and "ignored" in report.warnings[0]


def test_foreshadowing_plan_needs_items():
    plan = good_plan()
    assert "items array" in errors_of(changed(plan, foreshadowing={"foreshadowing": []}))[0]
    report = validate_volume_plan(changed(plan, foreshadowing={"schema_version": 2, "items": []}))
    assert report.ok and "schema_version" in report.warnings[0]


@pytest.mark.parametrize("item,fragment", [
    ({"name": "", "role": "minor", "brief": "x", "first_chapter": 31}, ".name"),
    ({"name": "王五", "role": "hero", "brief": "x", "first_chapter": 31}, ".role"),
    ({"name": "王五", "role": "minor", "brief": "x", "first_chapter": 99}, ".first_chapter"),
    ("王五", "must be an object"),
])
def test_new_character_rules(item, fragment):
    assert any(fragment in e for e in errors_of(changed(good_plan(), new_characters=[item])))


def test_contract_rules():
    plan = good_plan()
    contracts = copy.deepcopy(plan.contracts)
    del contracts[32]
    contracts[33]["chapter"] = 34
    contracts[34]["storyline_id"] = "faction-war" if contracts[34]["storyline_id"] == "main-arc" else "main-arc"
    contracts[35]["objectives"][0]["required"] = False
    errors = " | ".join(errors_of(changed(plan, contracts=contracts)))
    assert "chapter-032.json: missing" in errors
    assert "chapter-033.json: chapter is 34" in errors
    assert "chapter-034.json: storyline_id" in errors
    assert "chapter-035.json" in errors and "objectives" in errors


def test_chain_rule_across_chapters_and_from_the_previous_volume():
    plan = good_plan()
    contracts = copy.deepcopy(plan.contracts)
    contracts[33]["preconditions"]["character_states"] = {}
    assert any("chapter-033.json: preconditions.character_states lacks ['lin-feng']" in e
               for e in errors_of(changed(plan, contracts=contracts)))
    previous = {"postconditions": {"state_changes": {"zhao-ming": {"location": "魔都"}}}}
    assert any("chapter-031.json" in e and "zhao-ming" in e for e in errors_of(plan, previous_contract=previous))
