"""Skein weaving (seed 004 §3.3), budget trimming and the token estimator."""
from __future__ import annotations

import json

import pytest

from pipeline.jacquard.skein import BudgetExceeded, Injection, PromptBlock, Skein, assemble, weave
from pipeline.jacquard.tokens import estimate_tokens


def block(name, role="user", content=None, **kw):
    return PromptBlock(name=name, role=role, content=content if content is not None else name, **kw)


def names(blocks):
    return [b.name for b in blocks]


def history(*items):
    skein = Skein(system=[block("sys", "system")])
    for name in items:
        skein.add(block(name, "user" if name.startswith("u") else "assistant"))
    return skein


def float_(name, position, depth, priority=50):
    return block(name, injection=Injection(position, depth), priority=priority)


@pytest.mark.parametrize(
    "floating,expected",
    [
        ([("w", "relativeToEnd", 0)], ["sys", "u1", "a1", "u2", "w"]),
        ([("w", "relativeToEnd", 1)], ["sys", "u1", "a1", "w", "u2"]),
        ([("w", "relativeToEnd", 3)], ["sys", "w", "u1", "a1", "u2"]),
        ([("w", "relativeToEnd", 99)], ["sys", "w", "u1", "a1", "u2"]),  # clamped to the start
        ([("w", "relativeToStart", 0)], ["sys", "w", "u1", "a1", "u2"]),
        ([("w", "relativeToStart", 2)], ["sys", "u1", "a1", "w", "u2"]),
        ([("w", "relativeToStart", 99)], ["sys", "u1", "a1", "u2", "w"]),  # clamped to the end
        ([("w", "relativeToEnd", -4)], ["sys", "u1", "a1", "u2", "w"]),  # negative depth = 0
    ],
)
def test_weave_positions(floating, expected):
    skein = history("u1", "a1", "u2")
    for name, position, depth in floating:
        skein.add(float_(name, position, depth))
    assert names(weave(skein)) == expected


def test_same_spot_higher_priority_first_then_insertion_order():
    skein = history("u1", "u2")
    skein.add(float_("low", "relativeToEnd", 1, priority=10))
    skein.add(float_("high", "relativeToEnd", 1, priority=90))
    skein.add(float_("high2", "relativeToEnd", 1, priority=90))
    skein.add(float_("start", "relativeToStart", 0))
    assert names(weave(skein)) == ["sys", "start", "u1", "high", "high2", "low", "u2"]


def test_weave_does_not_modify_the_skein():
    skein = history("u1")
    skein.add(float_("w", "relativeToEnd", 0))
    before = (names(skein.system), names(skein.history), names(skein.floating))
    weave(skein)
    assert (names(skein.system), names(skein.history), names(skein.floating)) == before


def test_weave_with_empty_history():
    skein = Skein(system=[block("sys", "system")])
    skein.add(float_("w", "relativeToEnd", 2))
    assert names(weave(skein)) == ["sys", "w"]


# --- budget ---------------------------------------------------------------------------------------


def big(name, chars, **kw):
    return block(name, content="字" * chars, **kw)


def test_within_budget_nothing_is_trimmed():
    skein = Skein().add(big("contract", 100, required=True)).add(big("memory", 100))
    result = assemble(skein, budget=1000)
    assert result.trimmed == () and result.total_tokens <= 1000


def test_lowest_priority_goes_first_and_required_blocks_stay():
    skein = Skein()
    skein.add(big("instructions", 200, role="system", required=True, priority=100))
    skein.add(big("contract", 300, required=True, priority=100))
    skein.add(big("old-memory", 400, priority=10))
    skein.add(big("recent-summaries", 400, priority=60))
    result = assemble(skein, budget=1000)
    assert [t.name for t in result.trimmed] == ["old-memory"]
    assert {"instructions", "contract", "recent-summaries"} <= set(names(result.blocks))
    assert result.total_tokens <= 1000


def test_shrinkable_block_is_shortened_keeping_its_end():
    text = "".join(f"第{i}章发生了事。" for i in range(1, 201))
    skein = Skein().add(big("contract", 300, required=True)).add(block("summaries", content=text, shrinkable=True))
    result = assemble(skein, budget=800)
    trimmed = result.trimmed[0]
    assert trimmed.action == "shortened" and trimmed.tokens_after < trimmed.tokens_before
    kept = next(b for b in result.blocks if b.name == "summaries").content
    assert kept.endswith("第200章发生了事。") and kept.startswith("……（前文从略）")
    assert result.total_tokens <= 800


def test_required_blocks_over_budget_is_a_clear_error():
    skein = Skein().add(big("contract", 3000, required=True)).add(big("extra", 10))
    with pytest.raises(BudgetExceeded, match="contract"):
        assemble(skein, budget=1000)


def test_trimming_never_drops_required_blocks_whatever_the_budget():
    for budget in range(120, 2000, 97):
        skein = Skein()
        skein.add(big("must", 100, required=True, priority=1))
        for i in range(10):
            skein.add(big(f"opt{i}", 50 + i * 10, priority=i * 7 % 11, shrinkable=i % 2 == 0))
        result = assemble(skein, budget=budget)
        assert "must" in names(result.blocks)
        assert result.total_tokens <= budget


def test_cacheable_system_blocks_come_first_and_receipt_lists_them():
    skein = Skein()
    skein.add(block("task", "system", "本章任务"))
    skein.add(block("style", "system", "风格", cacheable=True))
    skein.add(block("world", "system", "世界", cacheable=True))
    skein.add(block("ask", "user", "写第 3 章"))
    result = assemble(skein, budget=1000)
    assert [b.text for b in result.system] == ["风格", "世界", "本章任务"]
    assert [b.cacheable for b in result.system] == [True, True, False]
    receipt = result.receipt()
    assert [b["name"] for b in receipt["blocks"]] == ["style", "world", "task", "ask"]
    assert len(receipt["prompt_sha256"]) == 64 and receipt["token_counter"] == "estimator"


def test_messages_merge_roles_and_start_with_user():
    skein = Skein()
    skein.add(block("prefill", "assistant", "好的"))
    skein.add(block("q1", "user", "一"))
    skein.add(block("q2", "user", "二"))
    result = assemble(skein, budget=1000)
    assert [m.role for m in result.messages] == ["user", "assistant", "user"]
    assert result.messages[2].text == "一二"


def test_unrendered_template_blocks_are_refused():
    skein = Skein().add(PromptBlock(name="t", role="user", template="{{ x }}"))
    with pytest.raises(ValueError, match="render the templates first"):
        assemble(skein, budget=100)


# --- estimator --------------------------------------------------------------------------------------


def test_estimator_on_chinese_english_mixed_and_json():
    assert estimate_tokens("") == 0
    assert estimate_tokens("林枫走进雪原。") == 7  # one per CJK character and fullwidth punctuation
    assert estimate_tokens("The snow fell all night.") == 6  # about four characters a token
    mixed = estimate_tokens("林枫 said: 有意思")
    assert estimate_tokens("林枫有意思") < mixed < estimate_tokens("林枫有意思") + 5
    data = json.dumps({"characters": {"lin-feng": {"location": "north"}}})
    assert estimate_tokens(data, kind="json") > estimate_tokens(data, kind="text")
    assert estimate_tokens(json.dumps({"地点": "魔都"}, ensure_ascii=False), kind="json") >= 4


def test_block_token_count_detects_json():
    payload = json.dumps({"a": [1, 2, 3], "b": "x" * 60})
    assert block("j", content=payload).tokens > block("t", content="x" * len(payload)).tokens
