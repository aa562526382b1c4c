"""pipeline.jacquard.filament: the Filament v2 streaming parser (seed 004 §4, DESIGN §6).

Pure Python: no database, no Django settings.
"""
from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.jacquard.filament import (
    STANDARD_TAGS,
    FilamentError,
    FilamentParser,
    FilamentResult,
    TagClose,
    TagOpen,
    Text,
    normalise_ops,
    parse,
    parse_state_update,
)
from projects.json_validation import json_issues
from projects.state_ops import apply_delta, empty_state

TAGS = STANDARD_TAGS


def feed_chunks(chunks: list[str], tags=TAGS) -> tuple[list, FilamentResult]:
    parser = FilamentParser(tags)
    events = []
    for chunk in chunks:
        events += parser.feed(chunk)
    events += parser.close()
    return events, parser.result()


def merged(events: list) -> list:
    """Adjacent Text events of the same tag joined: the chunking-independent form of an event list."""
    out: list = []
    for event in events:
        if isinstance(event, Text) and out and isinstance(out[-1], Text) and out[-1].tag == event.tag:
            out[-1] = Text(event.tag, out[-1].text + event.text)
        elif not (isinstance(event, Text) and event.text == ""):
            out.append(event)
    return out


def assert_same(left: FilamentResult, right: FilamentResult) -> None:
    assert left.texts == right.texts
    assert left.segments == right.segments
    assert left.outside == right.outside
    assert left.ops == right.ops
    assert left.errors == right.errors
    assert left.auto_closed == right.auto_closed


def reconstruct(events: list, tags=TAGS) -> str:
    """The stream rebuilt from its events (an auto-close adds nothing)."""
    out = []
    for event in events:
        if isinstance(event, TagOpen):
            out.append(f"<{event.tag}>")
        elif isinstance(event, Text):
            out.append(event.text)
        elif not event.auto:
            out.append(f"</{event.tag}>")
    return "".join(out)


# --- The stream corpus: every one is also checked chunked at every offset -------------------------

PROTOCOL_EXAMPLE = """<analysis>
  - character.health: N (未受伤)
  - character.gold: Y (获得奖励)
</analysis>
<state_update>
[
  ["ADD", "characters.hero.gold", 100]
]
</state_update>
<reply>
这是给你的奖励，勇士。
</reply>"""

STREAMS = {
    "protocol_example": PROTOCOL_EXAMPLE,
    "plain_text": "没有任何标签的纯文本。",
    "unknown_tags": "<b>粗</b><div>x</div><reply>看<i>这里</i></reply>",
    "less_than_text": "<reply>a < b and b<c, 3<4, <3 love</reply>",
    "stray_lt_at_end": "<reply>x</reply> trailing <",
    "unclosed_reply": "<thought>想</thought><reply>写到一半",
    "unclosed_state_update": '<state_update>[["SET", "world_state.time_marker", "冬"]]',
    "malformed_json": '<state_update>[["SET", "world_state.a", ]]</state_update><reply>ok</reply>',
    "cjk": "<thought>林枫应当警觉。</thought><reply>　　林枫走进幽暗森林，“有意思。”</reply>",
    "nested_same_tag": "<reply>a<reply>b</reply>c</reply>",
    "stray_closing": "</reply>前文<reply>正文</reply></thought>",
    "empty_tags": "<thought></thought><reply></reply><state_update></state_update>",
    "multiple_state_updates": (
        '<state_update>[["SET", "world_state.a", 1]]</state_update>中间'
        '<state_update>[["PUSH", "world_state.events", "战"]]</state_update>'
    ),
    "other_tag_inside": "<thought>计划<reply>不是回复</reply>仍是思考</thought><reply>回复</reply>",
    "near_miss_tags": "<reply >x</reply ><Reply>y</Reply><reply/><replyx>z</replyx>< reply>",
    "partial_tokens": "<rep <state_ </st <</ </rep <reply><</rep</reply>",
    "lines_format": (
        '<state_update>\n["SET", "characters.lin.location", "森林"],\n'
        '["ADD", "characters.lin.relationships.chen", 10]\n</state_update>'
    ),
    "ops_object": '<state_update>{"ops": [{"op": "set", "path": "world_state.x", "value": true}]}</state_update>',
    "unknown_op": '<state_update>[["SET", "world_state.a", 1], ["EXPLODE", "world_state.b", 2]]</state_update>',
    "foreshadow": '<state_update>[["FORESHADOW", "ancient_prophecy", "advanced", "主角梦见预言碎片"]]</state_update>',
    "many_small_tags": "".join(f"<thought>{i}</thought>" for i in range(5)) + "<reply>end</reply>",
    "json_with_lt": '<state_update>[["SET", "world_state.note", "a<b </reply> c"]]</state_update>',
    "newlines_and_spaces": "\n\n  <reply>\n\n  text  \n\n</reply>\n\n",
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_every_split_point_gives_the_same_result(name: str) -> None:
    stream = STREAMS[name]
    whole = parse(stream, TAGS)
    whole_events, _ = feed_chunks([stream])
    assert reconstruct(whole_events) == stream or whole.auto_closed
    for cut in range(len(stream) + 1):
        events, result = feed_chunks([stream[:cut], stream[cut:]])
        assert_same(result, whole)
        assert merged(events) == merged(whole_events), cut


@pytest.mark.parametrize("name", ["protocol_example", "partial_tokens", "nested_same_tag", "lines_format"])
def test_one_character_chunks(name: str) -> None:
    stream = STREAMS[name]
    events, result = feed_chunks(list(stream))
    assert_same(result, parse(stream, TAGS))
    assert merged(events) == merged(feed_chunks([stream])[0])


@pytest.mark.parametrize("name", ["partial_tokens", "stray_closing", "empty_tags"])
def test_every_pair_of_split_points(name: str) -> None:
    stream = STREAMS[name]
    whole = parse(stream, TAGS)
    for first in range(len(stream) + 1):
        for second in range(first, len(stream) + 1):
            _, result = feed_chunks([stream[:first], stream[first:second], stream[second:]])
            assert_same(result, whole)


# --- Tags and text --------------------------------------------------------------------------------


def test_protocol_example() -> None:
    result = parse(PROTOCOL_EXAMPLE, TAGS)
    assert result.texts["reply"] == "这是给你的奖励，勇士。"
    assert result.texts["analysis"].startswith("- character.health")
    assert result.ops == [{"op": "inc", "path": "characters.hero.gold", "value": 100}]
    assert result.errors == [] and result.ok
    assert result.auto_closed == []
    assert result.outside == "\n\n"


def test_event_sequence_and_positions() -> None:
    stream = "hi<reply>yo</reply>!"
    events, _ = feed_chunks([stream])
    assert events == [
        Text(None, "hi"), TagOpen("reply", 2), Text("reply", "yo"), TagClose("reply", 11), Text(None, "!"),
    ]
    assert stream[11:19] == "</reply>"


def test_unknown_tags_are_text() -> None:
    result = parse(STREAMS["unknown_tags"], TAGS)
    assert result.outside == "<b>粗</b><div>x</div>"
    assert result.texts == {"reply": "看<i>这里</i>"}


def test_only_whitelisted_tags_are_tags() -> None:
    result = parse("<thought>t</thought><reply>r</reply>", ["reply"])
    assert result.outside == "<thought>t</thought>"
    assert result.texts == {"reply": "r"}


def test_less_than_signs_are_text() -> None:
    result = parse(STREAMS["less_than_text"], TAGS)
    assert result.texts["reply"] == "a < b and b<c, 3<4, <3 love"
    result = parse(STREAMS["stray_lt_at_end"], TAGS)
    assert result.outside == " trailing <"
    assert result.errors == []


def test_near_miss_tags_are_text() -> None:
    result = parse(STREAMS["near_miss_tags"], TAGS)
    assert result.texts == {}
    assert result.outside == STREAMS["near_miss_tags"]


def test_unclosed_tag_is_auto_closed_with_a_warning_not_an_error() -> None:
    """seed 004 §4.1: auto-closing is the tolerated behaviour."""
    stream = STREAMS["unclosed_reply"]
    events, result = feed_chunks([stream])
    assert events[-1] == TagClose("reply", len(stream), auto=True)
    assert result.texts == {"thought": "想", "reply": "写到一半"}
    assert result.auto_closed == ["reply"]
    assert result.errors == [] and result.ok
    (warning,) = result.warnings
    assert warning.position == stream.index("<reply>")
    assert "not closed" in warning.message


def test_an_auto_closed_state_update_gives_its_ops_and_cut_json_is_still_an_error() -> None:
    result = parse('<state_update>[["SET", "world_state.x", 1]]', TAGS)
    assert result.auto_closed == ["state_update"] and result.errors == []
    assert result.ops == [{"op": "set", "path": "world_state.x", "value": 1}]
    cut = parse('<state_update>[["SET", "world_state.x", 1], ["SE', TAGS)
    assert cut.ops == [] and cut.errors


def test_a_lone_op_object_is_refused_but_one_per_line_is_a_list() -> None:
    ops, errors = parse_state_update('{"op": "set", "path": "world_state.x", "value": 1}')
    assert ops == [] and "lone op object" in errors[0].message
    ops, errors = parse_state_update('{"op": "set", "path": "world_state.x", "value": 1}\n'
                                     '{"op": "inc", "path": "world_state.y", "value": 2}')
    assert errors == [] and [op["op"] for op in ops] == ["set", "inc"]


def test_nested_same_tag_is_text() -> None:
    result = parse(STREAMS["nested_same_tag"], TAGS)
    assert result.texts == {"reply": "a<reply>b"}
    assert result.outside == "c</reply>"


def test_other_whitelisted_tag_inside_an_open_tag_is_text() -> None:
    result = parse(STREAMS["other_tag_inside"], TAGS)
    assert result.texts == {"thought": "计划<reply>不是回复</reply>仍是思考", "reply": "回复"}


def test_stray_closing_tag_is_text() -> None:
    result = parse(STREAMS["stray_closing"], TAGS)
    assert result.outside == "</reply>前文</thought>"
    assert result.texts == {"reply": "正文"}
    assert result.errors == []


def test_empty_tags() -> None:
    result = parse(STREAMS["empty_tags"], TAGS)
    assert result.texts == {"thought": "", "reply": "", "state_update": ""}
    assert result.ops == [] and result.errors == []


def test_several_occurrences_are_joined_with_a_newline() -> None:
    result = parse(STREAMS["many_small_tags"], TAGS)
    assert result.texts["thought"] == "0\n1\n2\n3\n4"
    assert result.segments["thought"] == ["0", "1", "2", "3", "4"]


def test_texts_strip_ascii_whitespace_only() -> None:
    result = parse("<reply>\n　　第一段。\n</reply>", TAGS)
    assert result.texts["reply"] == "　　第一段。"  # the full-width indentation survives
    assert result.segments["reply"] == ["\n　　第一段。\n"]


def test_cjk_text() -> None:
    result = parse(STREAMS["cjk"], TAGS)
    assert result.texts["reply"] == "　　林枫走进幽暗森林，“有意思。”"
    assert result.texts["thought"] == "林枫应当警觉。"


def test_tag_split_across_chunks_holds_back_only_the_prefix() -> None:
    parser = FilamentParser(TAGS)
    assert parser.feed("前文<rep") == [Text(None, "前文")]
    assert parser.feed("ly>正") == [TagOpen("reply", 2), Text("reply", "正")]
    assert parser.feed("文</re") == [Text("reply", "文")]
    assert parser.feed("ply>") == [TagClose("reply", 11)]
    assert parser.close() == []
    assert parser.result().texts == {"reply": "正文"}


def test_a_lone_lt_is_released_once_it_cannot_be_a_tag() -> None:
    parser = FilamentParser(TAGS)
    assert parser.feed("a <") == [Text(None, "a ")]
    assert parser.feed(" b") == [Text(None, "< b")]
    assert parser.feed("<x") == [Text(None, "<x")]  # no whitelisted tag starts with "x"
    assert parser.feed("<") == []
    assert parser.close() == [Text(None, "<")]


def test_result_is_a_snapshot_while_streaming() -> None:
    parser = FilamentParser(TAGS)
    parser.feed("<reply>半")
    assert parser.open_tag == "reply"
    assert parser.result().texts == {"reply": "半"}
    parser.feed("句</reply>")
    assert parser.open_tag is None
    assert parser.result().texts == {"reply": "半句"}


def test_close_is_idempotent_and_feed_after_close_fails() -> None:
    parser = FilamentParser(TAGS)
    parser.feed("<reply>x")
    assert parser.close()
    assert parser.close() == []
    with pytest.raises(ValueError):
        parser.feed("more")


@pytest.mark.parametrize("tags", [[], ["Reply"], ["re ply"], ["<reply>"], "reply", [""]])
def test_bad_tag_whitelists_are_refused(tags) -> None:
    with pytest.raises((ValueError, TypeError)):
        FilamentParser(tags)


# --- <state_update> -------------------------------------------------------------------------------


def test_triples_are_normalised_to_seed_000_ops() -> None:
    stream = """<state_update>
[
  ["SET", "characters.lin-feng.location", "幽暗森林"],
  ["ADD", "characters.lin-feng.relationships.chen-lao", 10],
  ["ADD", "characters.lin-feng.hp", -2.5],
  ["PUSH", "characters.lin-feng.inventory", {"name": "Sword", "atk": 10}],
  ["REMOVE", "characters.lin-feng.inventory", "破碎魔杖"],
  ["INC", "world_state.day", 1],
  ["FORESHADOW", "ancient_prophecy", "Advanced", "主角梦见预言碎片"],
  ["FORESHADOW", "betrayal_hint", "planted"]
]
</state_update>"""
    result = parse(stream, TAGS)
    assert result.errors == []
    assert result.ops == [
        {"op": "set", "path": "characters.lin-feng.location", "value": "幽暗森林"},
        {"op": "inc", "path": "characters.lin-feng.relationships.chen-lao", "value": 10},
        {"op": "inc", "path": "characters.lin-feng.hp", "value": -2.5},
        {"op": "add", "path": "characters.lin-feng.inventory", "value": {"name": "Sword", "atk": 10}},
        {"op": "remove", "path": "characters.lin-feng.inventory", "value": "破碎魔杖"},
        {"op": "inc", "path": "world_state.day", "value": 1},
        {"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced", "detail": "主角梦见预言碎片"},
        {"op": "foreshadow", "path": "betrayal_hint", "value": "planted"},
    ]
    delta = {"chapter": 1, "base_state_version": 0, "storyline_id": "main-arc", "ops": result.ops}
    assert json_issues("STATE_DELTA", delta) == []


def test_op_names_are_case_insensitive() -> None:
    result = parse('<state_update>[["set", "world_state.a", 1], ["Push", "world_state.b", 2]]</state_update>', TAGS)
    assert [op["op"] for op in result.ops] == ["set", "add"]


def test_add_with_a_non_number_is_an_error_that_explains() -> None:
    result = parse('<state_update>[["ADD", "characters.lin.inventory", "密信"]]</state_update>', TAGS)
    assert result.ops == []
    (error,) = result.errors
    assert "not a number" in error.message and "PUSH" in error.message
    assert error.position == len("<state_update>")


def test_add_with_a_boolean_is_an_error() -> None:
    result = parse('<state_update>[["ADD", "world_state.a", true]]</state_update>', TAGS)
    assert result.ops == [] and len(result.errors) == 1


def test_seed_000_op_objects_are_accepted_as_they_are() -> None:
    ops = [
        {"op": "set", "path": "world_state.time_marker", "value": "第三年冬末"},
        {"op": "add", "path": "characters.lin.inventory", "value": "密信"},
        {"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced", "detail": "梦"},
    ]
    for body in (json.dumps(ops, ensure_ascii=False), json.dumps({"ops": ops}, ensure_ascii=False)):
        result = parse(f"<state_update>{body}</state_update>", TAGS)
        assert result.errors == []
        assert result.ops == ops


def test_one_triple_per_line() -> None:
    result = parse(STREAMS["lines_format"], TAGS)
    assert result.errors == []
    assert result.ops == [
        {"op": "set", "path": "characters.lin.location", "value": "森林"},
        {"op": "inc", "path": "characters.lin.relationships.chen", "value": 10},
    ]


def test_a_single_triple_and_a_code_fence() -> None:
    result = parse('<state_update>\n```json\n["SET", "world_state.a", 1]\n```\n</state_update>', TAGS)
    assert result.errors == []
    assert result.ops == [{"op": "set", "path": "world_state.a", "value": 1}]


def test_malformed_json_is_an_error_with_its_position() -> None:
    stream = STREAMS["malformed_json"]
    result = parse(stream, TAGS)
    assert result.ops == []
    (error,) = result.errors
    assert isinstance(error, FilamentError)
    assert "malformed JSON" in error.message
    # Where the decoder stopped: the trailing comma (Python 3.13+) or the "]" after it (older versions).
    assert error.position in (stream.index(", ]]"), stream.index("]]"))
    assert result.texts["reply"] == "ok"  # the rest of the stream is unaffected


def test_malformed_line_in_line_format() -> None:
    stream = '<state_update>\n["SET", "world_state.a", 1]\n["SET", "world_state.b" 2]\n</state_update>'
    result = parse(stream, TAGS)
    assert result.ops == []
    (error,) = result.errors
    assert error.position == stream.index("2]")
    assert "line 3" in error.message


def test_nan_and_infinity_are_refused() -> None:
    result = parse('<state_update>[["SET", "world_state.a", NaN]]</state_update>', TAGS)
    assert result.ops == [] and "NaN" in result.errors[0].message


def test_a_block_is_all_or_nothing() -> None:
    result = parse(STREAMS["unknown_op"], TAGS)
    assert result.ops == []
    (error,) = result.errors
    assert "unknown op 'EXPLODE'" in error.message and "op 1" in error.message


def test_one_bad_block_does_not_spoil_the_others() -> None:
    stream = (
        '<state_update>[["SET", "world_state.a", 1]]</state_update>'
        '<state_update>[["SET", "world_state.b" 2]]</state_update>'
        '<state_update>[["PUSH", "world_state.c", 3]]</state_update>'
    )
    result = parse(stream, TAGS)
    assert result.ops == [
        {"op": "set", "path": "world_state.a", "value": 1},
        {"op": "add", "path": "world_state.c", "value": 3},
    ]
    assert len(result.errors) == 1


def test_multiple_state_update_blocks_keep_their_order() -> None:
    result = parse(STREAMS["multiple_state_updates"], TAGS)
    assert result.ops == [
        {"op": "set", "path": "world_state.a", "value": 1},
        {"op": "add", "path": "world_state.events", "value": "战"},
    ]
    assert result.outside == "中间"


def test_closing_tag_inside_a_json_string_ends_the_block() -> None:
    # Flat protocol: the first </state_update> ends the block, even inside a JSON string.
    result = parse('<state_update>["SET", "world_state.a", "x</state_update>"]</state_update>', TAGS)
    assert result.ops == [] and len(result.errors) == 1
    # Another tag's closing token inside the JSON is just text.
    assert parse(STREAMS["json_with_lt"], TAGS).ops == [
        {"op": "set", "path": "world_state.note", "value": "a<b </reply> c"}
    ]


@pytest.mark.parametrize(
    "body, fragment",
    [
        ('[["SET"]]', "got 1 elements"),
        ('[["SET", "", 1]]', "non-empty string"),
        ('[["SET", 5, 1]]', "non-empty string"),
        ('[[1, "a.b", 1]]', "op name"),
        ('[["FORESHADOW", "x", 3]]', "status must be a string"),
        ('[["FORESHADOW", "x", "planted", 7]]', "detail must be a string"),
        ('[["INC", "a.b", "1"]]', "INC needs a number"),
        ('[{"op": "jump", "path": "a.b", "value": 1}]', "unknown op"),
        ('[{"op": "set", "path": "a.b"}]', 'missing "value"'),
        ('[{"op": "set", "path": "a.b", "value": 1, "why": 2}]', "unexpected key"),
        ('[{"path": "a.b", "value": 1}]', 'needs "op"'),
        ('[42]', "got a number"),
        ('"hello"', "got a string"),
        ('{"ops": 3}', '"ops" must be an array'),
        ('{"foo": 1}', "expected an array"),
    ],
)
def test_op_shape_errors(body: str, fragment: str) -> None:
    ops, errors = parse_state_update(body, offset=100)
    assert ops == []
    assert errors and fragment in errors[0].message
    assert errors[0].position >= 100


def test_normalise_ops_for_already_decoded_json() -> None:
    assert normalise_ops([["ADD", "world_state.x", 1]]) == [{"op": "inc", "path": "world_state.x", "value": 1}]
    with pytest.raises(ValueError, match="unknown op"):
        normalise_ops([["NOPE", "a.b", 1]])


def test_normalised_ops_apply_with_the_patch_engine() -> None:
    stream = """<state_update>
[["SET", "characters.lin-feng.location", "魔都"],
 ["PUSH", "characters.lin-feng.inventory", "密信"],
 ["ADD", "characters.lin-feng.relationships.chen-lao", 5],
 ["FORESHADOW", "ancient_prophecy", "planted", "老者提及"]]
</state_update>"""
    result = parse(stream, TAGS)
    delta = {"chapter": 1, "base_state_version": 0, "storyline_id": "main-arc", "ops": result.ops}
    state = apply_delta(empty_state(), delta)
    lin = state["characters"]["lin-feng"]
    assert lin["location"] == "魔都" and lin["inventory"] == ["密信"]
    assert lin["relationships"]["chen-lao"] == 5
    assert state["active_foreshadowing"] == ["ancient_prophecy"]


# --- Property: chunking never changes the result --------------------------------------------------

FRAGMENTS = [
    "<reply>", "</reply>", "<thought>", "</thought>", "<analysis>", "</analysis>", "<state_update>",
    "</state_update>", "<rep", "ly>", "</rep", "<", "</", ">", "<b>", "</b>", "a < b", "<3", "</unknown>",
    "林枫", "　　", "“有意思。”", "\n", " ", '[["SET", "world_state.a", 1]]', '["PUSH", "world_state.b", "战"]',
    '[["ADD", "world_state.c", "x"]]', '{"ops": []}', "[[", "]", ",", '"', "{",
]

streams = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=30).map("".join)


@st.composite
def chunked(draw):
    stream = draw(streams)
    cuts = sorted(draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    return stream, [stream[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunked())
def test_any_chunking_gives_the_same_result(case) -> None:
    stream, chunks = case
    whole = parse(stream, TAGS)
    events, result = feed_chunks(chunks)
    assert_same(result, whole)
    assert merged(events) == merged(feed_chunks([stream])[0])
    assert "".join(chunks) == stream


@settings(max_examples=150, deadline=None)
@given(streams)
def test_events_cover_the_stream(stream: str) -> None:
    events, result = feed_chunks([stream])
    assert reconstruct(events) == stream
    opened = [e for e in events if isinstance(e, TagOpen)]
    closed = [e for e in events if isinstance(e, TagClose)]
    assert len(opened) == len(closed)
    assert [e.auto for e in closed].count(True) == len(result.auto_closed) <= 1
    for event in opened:
        assert stream.startswith(f"<{event.tag}>", event.pos)
    for event in closed:
        assert event.auto or stream.startswith(f"</{event.tag}>", event.pos)


@settings(max_examples=60, deadline=None)
@given(streams, st.integers(1, 7))
def test_fixed_size_chunks(stream: str, size: int) -> None:
    _, result = feed_chunks([stream[i:i + size] for i in range(0, len(stream), size)])
    assert_same(result, parse(stream, TAGS))


# --- Throughput -----------------------------------------------------------------------------------


def _megabyte_stream() -> str:
    block = (
        "<thought>林枫需要判断 a < b 是否成立，<b>注意</b>。</thought>\n"
        + "<reply>" + "　　林枫走进幽暗森林，心中警觉。" * 30 + "</reply>\n"
        + '<state_update>[["SET", "characters.lin.location", "森林"], ["ADD", "characters.lin.gold", 5]]'
        + "</state_update>\n"
        + "outside <3 </unknown>\n"
    )
    return block * (1_000_000 // len(block.encode()) + 1)


def test_a_megabyte_in_64_character_chunks_is_fast() -> None:
    stream = _megabyte_stream()
    start = time.perf_counter()
    parser = FilamentParser(TAGS)
    for i in range(0, len(stream), 64):
        parser.feed(stream[i:i + 64])
    parser.close()
    result = parser.result()
    elapsed = time.perf_counter() - start
    assert result.errors == []
    assert len(result.ops) == 2 * stream.count("<state_update>")
    # Measured at ~25-30 MB/s; a generous bound that still catches quadratic buffering.
    assert elapsed < 3.0, f"{len(stream.encode()) / elapsed / 1e6:.1f} MB/s"


def test_a_long_open_tag_is_not_rescanned() -> None:
    # One reply of 2 MB without its closing tag, fed in small chunks: linear, not quadratic.
    parser = FilamentParser(TAGS)
    parser.feed("<reply>")
    chunk = "正文 a<b " * 8
    start = time.perf_counter()
    for _ in range(2_000_000 // len(chunk)):
        parser.feed(chunk)
    parser.feed("</reply>")
    parser.close()
    assert time.perf_counter() - start < 3.0
    assert parser.result().auto_closed == []
