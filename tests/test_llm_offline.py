"""The offline backend gives valid output for every stage kind, deterministically, and misbehaves
on demand; the Jacquard runner turns it into texts, ops, a checked delta and a receipt."""
from __future__ import annotations

import json
import re

import pytest

from pipeline.jacquard.filament import parse
from pipeline.jacquard.runner import CallSpec, run_call
from pipeline.jacquard.skein import PromptBlock, Skein
from pipeline.llm.offline import (
    CHUNK_CHARS,
    FAULT_KINDS,
    MIN_CHUNK_INTERVAL_S,
    OfflineBackend,
    OfflineConfig,
    stream_chunks,
)
from pipeline.llm.offline.writers import WRITERS
from pipeline.chapter.platform_rules import hook_field_problems
from pipeline.llm.types import (
    LLMBadOutput,
    LLMConnectionError,
    LLMOverloaded,
    LLMPermanentError,
    LLMRateLimited,
    LLMRequest,
    LLMServerError,
    LLMTimeout,
    LLMTruncatedStream,
    Message,
)
from projects.json_validation import json_issues
from projects.schemas import SCORE_DIMENSIONS
from projects.state_ops import apply_delta, empty_state

CAST = [{"slug": "lin-feng", "display_name": "林枫"}, {"slug": "chen-lao", "display_name": "陈老"}]
SLICES = {
    "draft": {"chapter": 7, "title": "入林", "storyline_id": "main-arc", "characters": CAST,
              "objectives": ["林枫进入幽暗森林", "陈老传授星火诀"], "place": "幽暗森林", "target_chars": 3000,
              "blacklist": ["不禁"]},
    "summarize": {"chapter": 7, "title": "入林", "storyline_id": "main-arc", "characters": CAST,
                  "place": "幽暗森林", "foreshadowing_updates": {"ancient_prophecy": "advanced"}},
    "refine": {"chapter_text": "林枫不禁回头，看见陈老站在雪里。", "blacklist": ["不禁", "莫名的"]},
    "judge": {"chapter": 7, "objectives": [{"id": "OBJ-7-1", "description": "进入森林", "required": True}]},
    "plan": {"volume": 2, "chapter_start": 31, "chapter_end": 35, "storylines": ["main-arc", "faction-war"],
             "characters": CAST, "previous_state_keys": ["chen-lao"]},
    "consolidate": {"summaries": [("## 第 1 章摘要\n### 关键事件\n- 林枫救下陈老。\n"
                                   "### 故事线标记\n- storyline_id: main-arc"),
                                  "## 第 2 章摘要\n### 关键事件\n- 赵明追至雪原。"]},
    "quickstart:world": {"title": "星火长夜", "brief": "北境少年卷入宗门遗秘。"},
    "quickstart:characters": {"title": "星火长夜"},
    "quickstart:style": {},
    "review": {"volume": 1, "chapter_range": [1, 30]},
    "weave": {"brief": "北境少年卷入宗门遗秘。", "wanted": [{"name": "白衣客", "role": "antagonist",
                                                       "brief": "来历不明", "first_chapter": 35}]},
}
SLICES.update({"quickstart:trial": SLICES["draft"], "quickstart:results": SLICES["judge"],
               "quickstart:f0": {**SLICES["plan"], "volume": 1, "chapter_start": 1, "chapter_end": 3}})
TAGS = {"draft": ["chapter", "hints"], "summarize": ["summary", "state_update", "memory", "crossref"],
        "refine": ["edits"], "judge": ["evaluation"],
        "plan": ["outline", "schedule", "foreshadowing", "new_characters", "contracts"], "consolidate": ["summary"],
        "quickstart:world": ["rules", "world_docs", "storylines"], "quickstart:characters": ["characters"],
        "quickstart:style": ["style_profile"], "review": ["audit"], "weave": ["characters"]}
PROMO = {"topic": "第3章", "reference_summary": "林枫救下陈老。", "title": "雪夜来客", "body": "正文" * 300,
         "hashtags": ["网络小说"]}
SLICES.update({f"promote:{step}": PROMO for step in ("titles", "body", "cta", "hashtags", "platforms")})
TAGS.update({"promote:titles": ["titles"], "promote:body": ["body", "scores"], "promote:cta": ["cta"],
             "promote:hashtags": ["hashtags"], "promote:platforms": ["platform_versions", "scores"]})
TAGS.update({"quickstart:trial": TAGS["draft"], "quickstart:results": TAGS["judge"], "quickstart:f0": TAGS["plan"]})
VOICE_SAMPLE = ("院子里的老槐树被雪压弯了枝，偶尔落下一团雪，砸在石阶上，发出闷闷的一声。"
                "远处的山门隐在夜色里，只剩一盏孤灯。\n"
                "苏婉走下台阶，把一件旧斗篷披在他肩上。斗篷是师父留下的，边角磨得发白，领口还缝着一道歪歪扭扭的补丁。\n"
                "林枫点了点头。他知道这句话有多重，也知道自己多半做不到。可他还是点了头，像小时候答应师父每天早起练刀一样，认真，笨拙，不留余地。")
SLICES["voice:style"] = {"sample": VOICE_SAMPLE, "source_type": "reference",
                         "statistics": {"avg_sentence_length": 16.0, "dialogue_ratio": 0.0,
                                        "avg_paragraph_length": 52.0}}
TAGS["voice:style"] = TAGS["quickstart:style"]


def request(stage: str, seed: str = "demo:7:1", **kw) -> LLMRequest:
    return LLMRequest(model="claude-sonnet-5-5", system=(), messages=(Message.of("user", "写"),),
                      max_output_tokens=4000, stage=stage, slice=kw.pop("slice", SLICES[stage]), seed_key=seed, **kw)


def output(stage: str, **kw):
    result = OfflineBackend(OfflineConfig()).complete(request(stage, **kw))
    parsed = parse(result.text, TAGS[stage])
    assert not parsed.errors, parsed.errors
    return result, parsed.texts, parsed


def test_every_stage_has_a_writer_and_a_test():
    assert set(WRITERS) == set(SLICES)


def test_draft_names_the_cast_and_objectives_at_length():
    _, texts, _ = output("draft")
    chapter = texts["chapter"]
    assert chapter.startswith("# 第7章 入林\n")
    assert "林枫" in chapter and "陈老" in chapter
    assert "林枫进入幽暗森林" in chapter and "陈老传授星火诀" in chapter
    assert 2500 <= len(chapter) <= 4000
    assert json.loads(texts["hints"])["chapter"] == 7


def test_summary_follows_the_seed_format_and_its_delta_applies():
    _, texts, parsed = output("summarize")
    summary = texts["summary"]
    for heading in ("## 第 7 章摘要", "### 关键事件", "### 伏笔变更", "### 故事线标记"):
        assert heading in summary
    assert "- storyline_id: main-arc" in summary and "[推进] ancient_prophecy" in summary
    assert len(texts["memory"]) <= 500
    assert json.loads(texts["crossref"])["leak_risk"] == "none"
    state = empty_state()
    delta = {"chapter": 7, "base_state_version": 0, "storyline_id": "main-arc", "ops": parsed.ops}
    after = apply_delta(state, delta)
    assert after["characters"]["lin-feng"]["location"] == "幽暗森林"
    assert "ancient_prophecy" in after["active_foreshadowing"]


def test_refine_returns_edits_that_apply_to_the_text():
    _, texts, _ = output("refine")
    edits = json.loads(texts["edits"])
    text = SLICES["refine"]["chapter_text"]
    assert edits and all(edit["find"] in text for edit in edits)
    for edit in edits:
        text = text.replace(edit["find"], edit["replace"], 1)
    assert "不禁" not in text


@pytest.mark.parametrize("stage", ["judge", "quickstart:results"])
def test_evaluation_has_the_eight_scores_and_a_true_overall(stage):
    _, texts, _ = output(stage)
    evaluation = json.loads(texts["evaluation"])
    assert json_issues("EVALUATION", evaluation) == []
    assert set(evaluation["scores"]) == {*SCORE_DIMENSIONS, "hook_strength"}  # hook_strength: issue #17
    assert hook_field_problems(evaluation) == []
    total = sum(s["score"] * s["weight"] for s in evaluation["scores"].values())
    assert evaluation["overall"] == round(total, 2)


@pytest.mark.parametrize("stage", ["plan", "quickstart:f0"])
def test_volume_plan_covers_its_range_with_valid_chained_contracts(stage):
    _, texts, _ = output(stage)
    start, end = SLICES[stage]["chapter_start"], SLICES[stage]["chapter_end"]
    headings = [int(n) for n in re.findall(r"^###\s*第\s*(\d+)\s*章", texts["outline"], re.MULTILINE)]
    assert headings == list(range(start, end + 1))
    for key in ("Storyline", "POV", "Location", "Conflict", "Arc", "Foreshadowing", "StateChanges", "TransitionHint"):
        assert texts["outline"].count(f"- **{key}**:") == end - start + 1
    schedule = json.loads(texts["schedule"])
    assert json_issues("STORYLINE_SCHEDULE", schedule) == []
    assert json_issues("FORESHADOWING_PLAN", json.loads(texts["foreshadowing"])) == []
    assert json_issues("NEW_CHARACTERS", json.loads(texts["new_characters"])) == []
    contracts = json.loads(texts["contracts"])
    assert [c["chapter"] for c in contracts] == headings
    previous = {key: {} for key in SLICES[stage]["previous_state_keys"]}
    for contract in contracts:
        assert json_issues("CHAPTER_CONTRACT", contract) == []
        assert contract["storyline_id"] in schedule["active_storylines"]
        assert set(previous) <= set(contract["preconditions"]["character_states"])  # facts §6 chain rule
        previous = contract["postconditions"]["state_changes"]


def test_quick_start_outputs_validate():
    _, world, _ = output("quickstart:world")
    assert json_issues("WORLD_RULES_FILE", json.loads(world["rules"])) == []
    assert json_issues("STORYLINES_FILE", json.loads(world["storylines"])) == []
    _, cast, _ = output("quickstart:characters")
    for character in json.loads(cast["characters"]):
        assert json_issues("CHARACTER_FILE", character) == []
    _, style, _ = output("quickstart:style")
    assert json_issues("STYLE_PROFILE", json.loads(style["style_profile"])) == []
    _, voice, _ = output("voice:style")
    profile = json.loads(voice["style_profile"])
    assert json_issues("STYLE_PROFILE", profile) == [] and profile["source_type"] == "reference"
    assert len(profile["style_exemplars"]) == 3 and all(e in VOICE_SAMPLE for e in profile["style_exemplars"])


def test_consolidation_and_review():
    _, texts, _ = output("consolidate")
    assert "林枫救下陈老" in texts["summary"] and "storyline_id" not in texts["summary"]
    _, review, _ = output("review")
    assert json.loads(review["audit"])["stats"]["chapters_checked"] == 30


def test_output_is_deterministic_per_seed_and_differs_per_attempt():
    first, _, _ = output("draft", seed="demo:7:draft:1")
    again, _, _ = output("draft", seed="demo:7:draft:1")
    retry, _, _ = output("draft", seed="demo:7:draft:2")
    assert first.text == again.text != retry.text


def test_streaming_delivers_the_whole_text_in_chunks():
    chunks: list[str] = []
    result = OfflineBackend(OfflineConfig()).complete(request("draft", stream=True), on_text=chunks.append)
    assert len(chunks) > 10 and "".join(chunks) == result.text
    assert result.usage.output_tokens > 2000 and result.cost_usd == 0 and result.backend == "offline"


def test_unknown_stage_is_a_permanent_error():
    unknown = LLMRequest(model="m", system=(), messages=(), max_output_tokens=1, stage="dance")
    with pytest.raises(LLMPermanentError, match="no writer"):
        OfflineBackend(OfflineConfig()).complete(unknown)


# --- misbehaviour on demand --------------------------------------------------------------------------

ERRORS = {"rate_limit": LLMRateLimited, "overloaded": LLMOverloaded, "server_error": LLMServerError,
          "timeout": LLMTimeout, "connection": LLMConnectionError, "permanent": LLMPermanentError}


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_each_error_class_on_demand(kind):
    backend = OfflineBackend(OfflineConfig(faults={"draft": {"kind": kind, "rate": 1.0}}))
    with pytest.raises(ERRORS[kind]) as caught:
        backend.complete(request("draft"))
    assert caught.value.retryable == (kind != "permanent")
    backend.complete(request("judge"))  # other stages unaffected


def test_truncated_stream_sends_part_of_the_text_then_fails():
    chunks: list[str] = []
    backend = OfflineBackend(OfflineConfig(faults={"*": {"kind": "truncated", "rate": 1.0}}))
    with pytest.raises(LLMTruncatedStream):
        backend.complete(request("draft", stream=True), on_text=chunks.append)
    full = OfflineBackend(OfflineConfig()).complete(request("draft")).text
    assert chunks and full.startswith("".join(chunks)) and len("".join(chunks)) < len(full)


def test_malformed_output_breaks_the_protocol():
    backend = OfflineBackend(OfflineConfig(faults={"judge": {"kind": "malformed", "rate": 1.0}}))
    for attempt in range(8):
        text = backend.complete(request("judge", seed=f"s:{attempt}")).text
        parsed = parse(text, ["evaluation"])
        evaluation = parsed.texts.get("evaluation", "")
        try:
            valid = not json_issues("EVALUATION", json.loads(evaluation))
        except json.JSONDecodeError:
            valid = False
        assert not valid


def test_fault_rate_is_a_seeded_fraction():
    backend = OfflineBackend(OfflineConfig(faults={"*": {"kind": "rate_limit", "rate": 0.2}}))
    failures = 0
    for attempt in range(500):
        try:
            backend.complete(request("judge", seed=f"p:{attempt}"))
        except LLMRateLimited:
            failures += 1
    assert 70 <= failures <= 130


def test_low_and_revise_scores_on_demand():
    for mode, ceiling in (("low", 3.0), ("revise", 3.5)):
        backend = OfflineBackend(OfflineConfig(score_mode=mode))
        evaluation = json.loads(parse(backend.complete(request("judge")).text, ["evaluation"]).texts["evaluation"])
        assert evaluation["overall"] < ceiling


class FakeClock:
    """Time that passes only when the backend sleeps, or when a callback says so."""

    def __init__(self):
        self.now, self.slept = 0.0, []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def test_latency_is_spread_over_the_stream():
    clock = FakeClock()
    backend = OfflineBackend(OfflineConfig(latency_ms=200), sleep=clock.sleep, clock=clock)
    chunks: list[str] = []
    result = backend.complete(request("judge", stream=True), on_text=chunks.append)
    assert abs(clock.now - 0.2) < 1e-9 and len(clock.slept) > 1 and "".join(chunks) == result.text


def test_the_stream_keeps_its_pace_while_callbacks_take_time():
    """A server streams at its own speed: time the client spends on a chunk is not added to the call."""
    clock = FakeClock()
    backend = OfflineBackend(OfflineConfig(latency_ms=200), sleep=clock.sleep, clock=clock)

    def slow_callback(chunk: str) -> None:
        clock.now += 0.004  # the client's work on each chunk

    backend.complete(request("draft", stream=True), on_text=slow_callback)
    assert abs(clock.now - 0.2) < 0.005  # the last chunk's handling is all that is added


def test_a_short_latency_streams_fewer_bigger_chunks_never_faster_than_a_real_stream():
    text = "字" * 3000
    assert len(stream_chunks(text, 0)) == -(-3000 // CHUNK_CHARS)  # no latency: chunks as they come
    paced = stream_chunks(text, 0.2)
    assert "".join(paced) == text and 1 < len(paced) <= 0.2 / MIN_CHUNK_INTERVAL_S
    assert len(stream_chunks(text, 60)) == -(-3000 // CHUNK_CHARS)  # a real model's pace: every chunk
    assert stream_chunks("", 0.2) == [""]


def test_unknown_fault_kind_is_refused():
    with pytest.raises(ValueError, match="unknown offline fault kind"):
        OfflineBackend(OfflineConfig(faults={"*": {"kind": "gremlins"}})).complete(request("judge"))
    assert "malformed" in FAULT_KINDS


# --- the Jacquard runner on the offline backend -----------------------------------------------------


class MemoryStore:
    def __init__(self):
        self.saved, self.gets = {}, 0

    def get(self, key):
        self.gets += 1
        return self.saved.get(key)

    def put(self, key, result, receipt, request=None):
        self.saved[key] = result


def summarize_spec(**overrides) -> CallSpec:
    def build(slice_):
        skein = Skein()
        skein.add(PromptBlock("instructions", "system", "你是摘要员。", required=True, cacheable=True))
        skein.add(PromptBlock("chapter", "user", template="第{{ n }}章正文：……", required=True))
        skein.add(PromptBlock("old-memory", "user", "旧事" * 6000, priority=5))
        return skein

    spec = dict(stage="summarize", slice=SLICES["summarize"], build_skein=build, call_key="run1:summarize:1:1",
                tags=TAGS["summarize"], required_tags=["summary", "state_update"], template_context={"n": 7},
                seed_key="demo:7:summarize:1", state=empty_state(),
                delta_header={"chapter": 7, "base_state_version": 0, "storyline_id": "main-arc"})
    spec.update(overrides)
    return CallSpec(**spec)


def test_runner_builds_delta_and_receipt(settings):
    settings.NOVELSITE_LLM_BACKEND = "offline"
    ctx = run_call(summarize_spec(budget=2000))
    assert ctx.delta["ops"] and ctx.delta["base_state_version"] == 0
    receipt = ctx.receipt()
    assert [b["name"] for b in receipt["blocks"]] == ["instructions", "chapter"]
    assert receipt["trimmed"][0]["name"] == "old-memory" and receipt["trimmed"][0]["action"] == "dropped"
    assert receipt["backend"] == "offline" and receipt["usage"]["output_tokens"] > 0
    assert set(receipt["plugin_ms"]) == {"planner", "skein_builder", "template_renderer", "assembler", "invoker",
                                         "filament_parser", "state_updater"}


def test_a_stored_call_is_reused_and_never_paid_twice(settings):
    settings.NOVELSITE_LLM_BACKEND = "offline"
    store = MemoryStore()
    first = run_call(summarize_spec(), store=store)
    second = run_call(summarize_spec(), store=store)
    assert not first.reused and second.reused
    assert second.result is first.result and second.delta == first.delta


def test_runner_asks_again_when_the_output_breaks_the_protocol(settings):
    settings.NOVELSITE_LLM_BACKEND = "offline"
    settings.NOVELSITE_OFFLINE = {"faults": {"summarize": {"kind": "malformed", "rate": 1.0}}}
    from pipeline.llm.backends import reset_backends

    reset_backends()
    try:
        with pytest.raises(LLMBadOutput, match="protocol"):
            run_call(summarize_spec())
    finally:
        reset_backends()


def test_runner_refuses_a_delta_the_patch_engine_would_refuse(settings):
    settings.NOVELSITE_LLM_BACKEND = "offline"
    stale_state = {**empty_state(), "state_version": 3}  # the header says base 0: stale
    with pytest.raises(LLMBadOutput, match="state update is refused"):
        run_call(summarize_spec(state=stale_state))


def test_promotion_steps_fill_the_seed_content_zone():
    _, titles, _ = output("promote:titles")
    variants = json.loads(titles["titles"])["variants"]
    assert len(variants) >= 3 and all({"type", "content", "score"} <= set(v) for v in variants)
    _, body, _ = output("promote:body")
    assert {"content", "sections", "key_points", "quotes"} <= set(json.loads(body["body"]))
    _, cta, _ = output("promote:cta")
    assert json.loads(cta["cta"])["type"] in ("follow", "share", "comment", "save", "click")
    _, tags, _ = output("promote:hashtags")
    assert all(isinstance(t, str) for t in json.loads(tags["hashtags"]))
    _, platforms, _ = output("promote:platforms")
    versions = json.loads(platforms["platform_versions"])
    assert set(versions) == {"xiaohongshu", "wechat", "twitter", "general"}
    assert len(versions["twitter"]["title"]) + versions["twitter"]["word_count"] <= 280
