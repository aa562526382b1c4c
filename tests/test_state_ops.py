"""projects.state_ops: applying state deltas (seed 000 §9.2, facts §1 and §10.8).

Pure functions: no database, no Django settings (runs with ``-p no:django``).
"""
from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projects.errors import NovelsiteError
from projects.json_validation import json_issues
from projects.state_ops import (
    BadOpValue,
    EmptyPathSegment,
    ForbiddenPath,
    MalformedDelta,
    PatchError,
    PathCollision,
    PathDepthError,
    StalePatch,
    StateSchemaError,
    TopLevelError,
    UnknownOp,
    apply_delta,
    empty_state,
    foreshadow_ops,
    replay,
    strict_equal,
)

# --- Seed 000 §9.2 examples, copied verbatim -------------------------------------------------------

SEED_STATE: dict[str, Any] = {
    "schema_version": 1,
    "state_version": 47,
    "last_updated_chapter": 47,
    "characters": {
        "lin-feng": {
            "display_name": "林枫",
            "location": "魔都",
            "emotional_state": "决意",
            "relationships": {"chen-lao": 50, "zhao-ming": -30},
            "inventory": ["破碎魔杖", "密信"],
        }
    },
    "world_state": {"ongoing_events": ["王国内战"], "time_marker": "第三年冬"},
    "active_foreshadowing": ["ancient_prophecy", "betrayal_hint"],
}

SEED_DELTA: dict[str, Any] = {
    "chapter": 48,
    "base_state_version": 47,
    "storyline_id": "main-arc",
    "ops": [
        {"op": "set", "path": "characters.lin-feng.location", "value": "幽暗森林"},
        {"op": "set", "path": "characters.lin-feng.emotional_state", "value": "警觉"},
        {"op": "inc", "path": "characters.lin-feng.relationships.chen-lao", "value": 10},
        {"op": "add", "path": "characters.lin-feng.inventory", "value": "密信"},
        {"op": "remove", "path": "characters.lin-feng.inventory", "value": "破碎魔杖"},
        {"op": "set", "path": "world_state.time_marker", "value": "第三年冬末"},
        {"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced", "detail": "主角梦见预言碎片"},
    ],
}


def state(**overrides: Any) -> dict[str, Any]:
    """The seed state (a copy), with top-level keys replaced."""
    return {**copy.deepcopy(SEED_STATE), **overrides}


def delta(*ops: dict[str, Any], base: int = 47, chapter: int = 48, **overrides: Any) -> dict[str, Any]:
    return {"chapter": chapter, "base_state_version": base, "storyline_id": "main-arc", "ops": list(ops), **overrides}


def op(name: str, path: str, value: Any = None, **extra: Any) -> dict[str, Any]:
    return {"op": name, "path": path, "value": value, **extra}


def assert_refused(
    error_class: type[PatchError], the_state: dict, the_delta: dict, *, op_index: int | None, rule: str, text: str
) -> PatchError:
    """apply_delta raises ``error_class``, names the op and the rule, and touches neither input."""
    state_before, delta_before = copy.deepcopy(the_state), copy.deepcopy(the_delta)
    with pytest.raises(error_class) as caught:
        apply_delta(the_state, the_delta)
    error = caught.value
    assert error.op_index == op_index
    assert error.rule == rule
    assert error.extra["op_index"] == op_index and error.extra["rule"] == rule
    if op_index is not None:
        assert f"op {op_index}" in error.message
    assert text in error.message, error.message
    assert the_state == state_before and the_delta == delta_before
    return error


# --- The seed example -----------------------------------------------------------------------------


def test_seed_example_delta_gives_the_expected_state() -> None:
    result = apply_delta(SEED_STATE, SEED_DELTA)
    lin = result["characters"]["lin-feng"]
    assert result["state_version"] == 48
    assert result["last_updated_chapter"] == 48
    assert lin["location"] == "幽暗森林"
    assert lin["emotional_state"] == "警觉"
    assert lin["relationships"] == {"chen-lao": 60, "zhao-ming": -30}
    assert type(lin["relationships"]["chen-lao"]) is int
    # add pushes even a duplicate; remove deletes only the first equal element.
    assert lin["inventory"] == ["密信", "密信"]
    assert lin["display_name"] == "林枫"
    assert result["world_state"] == {"ongoing_events": ["王国内战"], "time_marker": "第三年冬末"}
    assert result["active_foreshadowing"] == ["ancient_prophecy", "betrayal_hint"]
    assert json_issues("STORY_STATE", result) == []


def test_inputs_are_not_mutated_and_result_does_not_alias_them() -> None:
    the_state, the_delta = copy.deepcopy(SEED_STATE), copy.deepcopy(SEED_DELTA)
    result = apply_delta(the_state, the_delta)
    assert the_state == SEED_STATE and the_delta == SEED_DELTA
    result["world_state"]["ongoing_events"].append("x")
    the_delta["ops"][0]["value"] = "changed"
    assert the_state == SEED_STATE
    assert result["characters"]["lin-feng"]["location"] == "幽暗森林"
    value = {"a": [1]}
    result2 = apply_delta(the_state, delta(op("set", "world_state.obj", value)))
    value["a"].append(2)
    assert result2["world_state"]["obj"] == {"a": [1]}


def test_all_or_nothing_a_bad_last_op_applies_nothing() -> None:
    bad = delta(*SEED_DELTA["ops"], op("set", "characters.lin-feng.constructor", 1))
    assert_refused(ForbiddenPath, SEED_STATE, bad, op_index=7, rule="forbidden_segment", text='"constructor"')
    assert SEED_STATE["characters"]["lin-feng"]["location"] == "魔都"


def test_empty_ops_still_bump_the_version_and_chapter() -> None:
    result = apply_delta(SEED_STATE, delta(chapter=50))
    assert result["state_version"] == 48 and result["last_updated_chapter"] == 50
    assert result["characters"] == SEED_STATE["characters"]


def test_last_updated_chapter_is_the_delta_chapter_even_when_lower() -> None:
    assert apply_delta(SEED_STATE, delta(chapter=3))["last_updated_chapter"] == 3


def test_empty_state_is_fresh_and_valid() -> None:
    first = empty_state()
    assert first == {
        "schema_version": 1,
        "state_version": 0,
        "last_updated_chapter": 0,
        "characters": {},
        "world_state": {},
        "active_foreshadowing": [],
    }
    first["characters"]["x"] = {}
    assert empty_state()["characters"] == {}
    assert json_issues("STORY_STATE", empty_state()) == []


# --- Errors ---------------------------------------------------------------------------------------


def test_error_classes_codes_and_statuses() -> None:
    assert issubclass(PatchError, NovelsiteError)
    assert PatchError.code == "invalid_patch" and PatchError.http_status == 400
    assert StalePatch.code == "stale_state_version" and StalePatch.http_status == 409
    for cls in (ForbiddenPath, PathDepthError, TopLevelError, PathCollision, BadOpValue, UnknownOp,
                MalformedDelta, StateSchemaError, EmptyPathSegment):
        assert issubclass(cls, PatchError) and cls.code == "invalid_patch" and cls.http_status == 400


def test_message_format_names_op_index_op_path_and_rule() -> None:
    ops = [op("set", "world_state.a", 1)] * 3 + [op("set", "characters.lin-feng.__proto__.x", 1)]
    error = assert_refused(ForbiddenPath, SEED_STATE, delta(*ops), op_index=3, rule="forbidden_segment", text="")
    assert error.message == 'op 3 (set characters.lin-feng.__proto__.x): forbidden path segment "__proto__"'


# --- Stale versions -------------------------------------------------------------------------------


@pytest.mark.parametrize("base", [0, 46, 48, 1000])
def test_stale_base_version_is_refused_naming_both_numbers(base: int) -> None:
    error = assert_refused(
        StalePatch, SEED_STATE, delta(op("set", "world_state.a", 1), base=base),
        op_index=None, rule="stale_state_version", text=f"base_state_version {base}",
    )
    assert "state_version 47" in error.message
    assert error.extra["base_state_version"] == base and error.extra["state_version"] == 47


def test_stale_is_checked_before_any_op() -> None:
    bad_ops = delta(op("set", "characters.__proto__.x", 1), op("inc", "world_state.time_marker", 1), base=3)
    assert_refused(StalePatch, SEED_STATE, bad_ops, op_index=None, rule="stale_state_version",
                   text="base_state_version 3")


def test_delta_shape_is_checked_before_staleness() -> None:
    # an unknown op is a shape problem: the delta is not a delta at all, whatever its version
    bad_ops = delta(op("zap", "world_state.a"), base=3)
    assert_refused(UnknownOp, SEED_STATE, bad_ops, op_index=0, rule="unknown_op", text="'zap'")


# --- Delta shape ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "path_text"),
    [
        ({"chapter": -1}, "$.chapter"),
        ({"chapter": True}, "$.chapter"),
        ({"chapter": "48"}, "$.chapter"),
        ({"chapter": 48.0}, "$.chapter"),
        ({"base_state_version": False}, "$.base_state_version"),
        ({"base_state_version": -1}, "$.base_state_version"),
        ({"base_state_version": 47.0}, "$.base_state_version"),
        ({"storyline_id": ""}, "$.storyline_id"),
        ({"storyline_id": "../x"}, "$.storyline_id"),
        ({"storyline_id": "Main-Arc"}, "$.storyline_id"),
        ({"storyline_id": "main-arc\n"}, "$.storyline_id"),
        ({"storyline_id": "a/../../etc"}, "$.storyline_id"),
        ({"storyline_id": None}, "$.storyline_id"),
        ({"ops": {}}, "$.ops"),
        ({"ops": None}, "$.ops"),
    ],
)
def test_malformed_delta_fields(overrides: dict, path_text: str) -> None:
    assert_refused(MalformedDelta, SEED_STATE, delta(**overrides), op_index=None, rule="malformed_delta",
                   text=path_text)


@pytest.mark.parametrize("missing", ["chapter", "base_state_version", "storyline_id", "ops"])
def test_missing_delta_key(missing: str) -> None:
    the_delta = delta()
    del the_delta[missing]
    assert_refused(MalformedDelta, SEED_STATE, the_delta, op_index=None, rule="malformed_delta", text=missing)


@pytest.mark.parametrize("not_a_dict", [None, [], "delta", 3])
def test_delta_not_an_object(not_a_dict: Any) -> None:
    assert_refused(MalformedDelta, SEED_STATE, not_a_dict, op_index=None, rule="malformed_delta", text="$")


@pytest.mark.parametrize(
    ("bad_op", "path_text"),
    [
        ("not an object", "$.ops[1]"),
        ({"op": "set"}, "$.ops[1]"),
        ({"path": "world_state.a", "value": 1}, "$.ops[1]"),
        ({"op": "set", "path": 5, "value": 1}, "$.ops[1].path"),
        ({"op": "set", "path": "", "value": 1}, "$.ops[1].path"),
        ({"op": 7, "path": "world_state.a", "value": 1}, "$.ops[1].op"),
        ({"op": "foreshadow", "path": "x", "value": "planted", "detail": 3}, "$.ops[1].detail"),
    ],
)
def test_malformed_op_names_its_index(bad_op: Any, path_text: str) -> None:
    the_delta = delta(op("set", "world_state.a", 1), bad_op)
    assert_refused(MalformedDelta, SEED_STATE, the_delta, op_index=1, rule="malformed_delta", text=path_text)


@pytest.mark.parametrize("name", ["zap", "SET", "delete", "move", ""])
def test_unknown_op(name: str) -> None:
    the_delta = delta(op("set", "world_state.a", 1), op(name, "world_state.a", 1))
    assert_refused(UnknownOp, SEED_STATE, the_delta, op_index=1, rule="unknown_op", text=f"unknown op {name!r}")


def test_extra_keys_in_an_op_are_ignored() -> None:
    result = apply_delta(SEED_STATE, delta(op("set", "world_state.a", 1, note="why", confidence=0.3)))
    assert result["world_state"]["a"] == 1
    assert "note" not in result["world_state"]


def test_extra_keys_in_the_delta_are_allowed() -> None:
    assert apply_delta(SEED_STATE, delta(summary="x"))["state_version"] == 48


# --- Paths ----------------------------------------------------------------------------------------

FORBIDDEN = ["__proto__", "constructor", "prototype"]


@pytest.mark.parametrize("segment", FORBIDDEN)
@pytest.mark.parametrize("position", [0, 1, 2, 3])
@pytest.mark.parametrize("name", ["set", "add", "remove", "inc"])
def test_forbidden_segment_at_each_position(segment: str, position: int, name: str) -> None:
    parts = ["characters", "lin-feng", "relationships", "chen-lao"]
    parts[position] = segment
    path = ".".join(parts)
    error = assert_refused(ForbiddenPath, SEED_STATE, delta(op(name, path, 1)), op_index=0,
                           rule="forbidden_segment", text=f'forbidden path segment "{segment}"')
    assert path in error.message


@pytest.mark.parametrize("path", ["__proto__", "constructor.a.b.c.d.e", "characters..prototype", "x.__proto__"])
def test_forbidden_segment_wins_over_depth_top_level_and_empty(path: str) -> None:
    assert_refused(ForbiddenPath, SEED_STATE, delta(op("set", path, 1)), op_index=0,
                   rule="forbidden_segment", text="forbidden path segment")


@pytest.mark.parametrize("segment", FORBIDDEN)
def test_forbidden_segment_as_part_of_a_word_is_fine(segment: str) -> None:
    result = apply_delta(SEED_STATE, delta(op("set", f"world_state.my{segment}x", 1)))
    assert result["world_state"][f"my{segment}x"] == 1


@pytest.mark.parametrize("path", ["characters", "world_state.a.b.c.d", "characters.lin-feng.a.b.c.d"])
def test_depth_1_and_5_plus_refused(path: str) -> None:
    depth = len(path.split("."))
    assert_refused(PathDepthError, SEED_STATE, delta(op("set", path, 1)), op_index=0, rule="path_depth",
                   text=f"path depth {depth}")


@pytest.mark.parametrize("path", ["world_state.a", "world_state.a.b.c", "characters.lin-feng.notes.x"])
def test_depth_2_and_4_accepted(path: str) -> None:
    result = apply_delta(SEED_STATE, delta(op("set", path, "v")))
    node = result
    for segment in path.split("."):
        node = node[segment]
    assert node == "v"


@pytest.mark.parametrize("path", ["world_state..a", ".world_state.a", "world_state.a.", "characters..x.y"])
def test_empty_segment_refused(path: str) -> None:
    assert_refused(EmptyPathSegment, SEED_STATE, delta(op("set", path, 1)), op_index=0, rule="empty_segment",
                   text="empty path segment")


@pytest.mark.parametrize("top", ["schema_version", "state_version", "last_updated_chapter", "plot", "Characters"])
def test_top_level_must_be_an_op_key(top: str) -> None:
    assert_refused(TopLevelError, SEED_STATE, delta(op("set", f"{top}.x", 1)), op_index=0, rule="top_level",
                   text=f"top-level key {top!r}")


@pytest.mark.parametrize("top", ["items", "locations", "factions", "world_state"])
def test_each_object_top_level_key_accepted_and_created(top: str) -> None:
    result = apply_delta(SEED_STATE, delta(op("set", f"{top}.sword.owner", "lin-feng")))
    assert result[top]["sword"] == {"owner": "lin-feng"}
    assert {k: v for k, v in result[top].items() if k != "sword"} == SEED_STATE.get(top, {})


def test_missing_intermediate_objects_are_created() -> None:
    result = apply_delta(SEED_STATE, delta(op("inc", "factions.guild.members.count", 3)))
    assert result["factions"] == {"guild": {"members": {"count": 3}}}


# --- Collisions -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["set", "add", "inc"])
@pytest.mark.parametrize(
    ("path", "blocker"),
    [
        ("characters.lin-feng.inventory.x", "characters.lin-feng.inventory is an array"),  # through a list
        ("world_state.ongoing_events.x.y", "world_state.ongoing_events is an array"),
        ("characters.lin-feng.location.x", "characters.lin-feng.location is a string"),  # through a string
        ("world_state.time_marker.x", "world_state.time_marker is a string"),
        ("world_state.time_marker.x.y", "world_state.time_marker is a string"),
        ("world_state.day.x", "world_state.day is a number"),
        ("world_state.war.x", "world_state.war is a boolean"),
        ("active_foreshadowing.x", "active_foreshadowing is an array"),
    ],
)
def test_collision_through_a_non_object(name: str, path: str, blocker: str) -> None:
    the_state = state(world_state={**SEED_STATE["world_state"], "day": 3, "war": True})
    assert_refused(PathCollision, the_state, delta(op("set", "world_state.ok", 1), op(name, path, 1)),
                   op_index=1, rule="path_collision", text=blocker)


def test_collision_through_null() -> None:
    the_state = state(world_state={"weather": None})
    assert_refused(PathCollision, the_state, delta(op("set", "world_state.weather.today", "rain")),
                   op_index=0, rule="path_collision", text="world_state.weather is null, not an object")


@pytest.mark.parametrize("path", ["characters.lin-feng.location", "characters.lin-feng.relationships"])
def test_add_onto_a_non_array_collides(path: str) -> None:
    assert_refused(PathCollision, SEED_STATE, delta(op("add", path, "x")), op_index=0, rule="path_collision",
                   text="not an array")


def test_set_overwrites_anything_including_with_null() -> None:
    result = apply_delta(SEED_STATE, delta(
        op("set", "characters.lin-feng.location", ["a", {"b": None}]),
        op("set", "characters.lin-feng.relationships", {}),
        op("set", "world_state.ongoing_events", None),
    ))
    assert result["characters"]["lin-feng"]["location"] == ["a", {"b": None}]
    assert result["characters"]["lin-feng"]["relationships"] == {}
    assert result["world_state"]["ongoing_events"] is None


def test_set_needs_a_value_key() -> None:
    assert_refused(BadOpValue, SEED_STATE, delta({"op": "set", "path": "world_state.a"}), op_index=0,
                   rule="missing_value", text="missing value")


@pytest.mark.parametrize("name", ["add", "inc", "remove"])
def test_other_ops_need_a_value_key(name: str) -> None:
    assert_refused(BadOpValue, SEED_STATE, delta({"op": name, "path": "characters.lin-feng.inventory"}),
                   op_index=0, rule="missing_value", text="missing value")


@pytest.mark.parametrize("value", [math.nan, math.inf, [1, math.nan], {"a": -math.inf}, {1: "x"}, (1, 2), {1, 2}])
@pytest.mark.parametrize("name", ["set", "add"])
def test_non_json_values_refused(name: str, value: Any) -> None:
    assert_refused(BadOpValue, SEED_STATE, delta(op(name, "world_state.ongoing_events", value)), op_index=0,
                   rule="not_json", text="not a plain JSON value")


# --- inc ------------------------------------------------------------------------------------------


def test_inc_defaults_to_zero_and_keeps_ints() -> None:
    result = apply_delta(SEED_STATE, delta(
        op("inc", "characters.lin-feng.relationships.new-friend", 5),
        op("inc", "characters.lin-feng.relationships.zhao-ming", -20),
    ))
    relationships = result["characters"]["lin-feng"]["relationships"]
    assert relationships == {"chen-lao": 50, "zhao-ming": -50, "new-friend": 5}
    assert all(type(v) is int for v in relationships.values())


def test_inc_with_a_float_gives_a_float() -> None:
    result = apply_delta(SEED_STATE, delta(op("inc", "characters.lin-feng.relationships.chen-lao", 0.5)))
    assert result["characters"]["lin-feng"]["relationships"]["chen-lao"] == 50.5


@pytest.mark.parametrize("value", [True, False, "10", None, [1], {"n": 1}, math.nan, math.inf, -math.inf])
def test_inc_value_must_be_a_number(value: Any) -> None:
    assert_refused(BadOpValue, SEED_STATE, delta(op("inc", "characters.lin-feng.relationships.chen-lao", value)),
                   op_index=0, rule="inc_value", text="not a finite number")


def test_inc_with_nan_names_the_op() -> None:
    error = assert_refused(BadOpValue, SEED_STATE,
                           delta(op("inc", "characters.lin-feng.relationships.chen-lao", math.nan)),
                           op_index=0, rule="inc_value", text="inc value nan is not a finite number")
    assert error.message.startswith("op 0 (inc characters.lin-feng.relationships.chen-lao): ")


def test_inc_with_huge_ints_stays_exact() -> None:
    the_state = state(world_state={"big": 10**400})
    result = apply_delta(the_state, delta(op("inc", "world_state.big", 10**400)))
    assert result["world_state"]["big"] == 2 * 10**400


def test_inc_overflow_to_infinity_refused() -> None:
    the_state = state(world_state={"big": 1e308})
    assert_refused(BadOpValue, the_state, delta(op("inc", "world_state.big", 1e308)), op_index=0,
                   rule="inc_value", text="overflows")
    huge_int = state(world_state={"big": 10**400})
    assert_refused(BadOpValue, huge_int, delta(op("inc", "world_state.big", 1.5)), op_index=0,
                   rule="inc_value", text="overflows")


@pytest.mark.parametrize("existing", [True, False, "5", [1], {"a": 1}, None])
def test_inc_on_a_non_number_target_collides(existing: Any) -> None:
    the_state = state(world_state={"counter": existing})
    assert_refused(PathCollision, the_state, delta(op("inc", "world_state.counter", 1)), op_index=0,
                   rule="path_collision", text="not a number")


# --- add / remove ---------------------------------------------------------------------------------


def test_add_creates_the_array() -> None:
    result = apply_delta(SEED_STATE, delta(op("add", "characters.chen-lao.inventory", {"name": "拂尘"})))
    assert result["characters"]["chen-lao"] == {"inventory": [{"name": "拂尘"}]}


def test_remove_deletes_only_the_first_equal_element() -> None:
    the_state = state(world_state={"list": ["a", "b", "a"]})
    result = apply_delta(the_state, delta(op("remove", "world_state.list", "a")))
    assert result["world_state"]["list"] == ["b", "a"]


def test_remove_of_a_structured_value() -> None:
    the_state = state(world_state={"list": [{"k": [1, 2]}, {"k": [1]}]})
    result = apply_delta(the_state, delta(op("remove", "world_state.list", {"k": [1]})))
    assert result["world_state"]["list"] == [{"k": [1, 2]}]


@pytest.mark.parametrize(
    ("existing", "value"),
    [([1], True), ([True], 1), ([1.0], 1), ([1], 1.0), ([0], False), (["1"], 1), ([[1]], [True]),
     ([{"a": 1}], {"a": 1.0}), ([None], 0)],
)
def test_remove_uses_strict_equality(existing: list, value: Any) -> None:
    the_state = state(world_state={"list": existing})
    result = apply_delta(the_state, delta(op("remove", "world_state.list", value)))
    assert result["world_state"]["list"] == existing  # not the same value: nothing removed


def test_remove_of_a_missing_value_is_a_no_op_as_in_the_tool() -> None:
    the_delta = delta(op("add", "characters.lin-feng.inventory", "剑"),
                      op("remove", "characters.lin-feng.inventory", "不存在"))
    result = apply_delta(SEED_STATE, the_delta)
    assert result["characters"]["lin-feng"]["inventory"] == [*SEED_STATE["characters"]["lin-feng"]["inventory"], "剑"]
    assert result["state_version"] == SEED_STATE["state_version"] + 1


@pytest.mark.parametrize("path", ["characters.lin-feng.pets", "characters.nobody.inventory", "items.a.b.c"])
def test_remove_from_a_missing_array_is_a_no_op_and_creates_nothing(path: str) -> None:
    result = apply_delta(SEED_STATE, delta(op("remove", path, "x")))
    assert "pets" not in result["characters"]["lin-feng"]
    assert "nobody" not in result["characters"] and "a" not in result.get("items", {})


@pytest.mark.parametrize("path", ["characters.lin-feng.location", "characters.lin-feng.relationships"])
def test_remove_from_a_non_array(path: str) -> None:
    assert_refused(BadOpValue, SEED_STATE, delta(op("remove", path, "x")), op_index=0,
                   rule="remove_not_array", text="not an array")


def test_remove_through_a_non_object_collides() -> None:
    assert_refused(PathCollision, SEED_STATE, delta(op("remove", "characters.lin-feng.location.x", "x")),
                   op_index=0, rule="path_collision", text="is a string")


def test_strict_equal() -> None:
    assert strict_equal(1, 1) and strict_equal("a", "a") and strict_equal([1, {"a": None}], [1, {"a": None}])
    assert not strict_equal(1, True) and not strict_equal(1, 1.0) and not strict_equal({"a": 1}, {"b": 1})
    assert not strict_equal([1, 2], [1]) and not strict_equal({"a": 0}, {"a": False})


# --- foreshadow -----------------------------------------------------------------------------------


def fs(foreshadow_id: str, status: Any, **extra: Any) -> dict[str, Any]:
    return {"op": "foreshadow", "path": foreshadow_id, "value": status, **extra}


def test_foreshadow_planted_appends_once() -> None:
    result = apply_delta(SEED_STATE, delta(fs("sword_of_dawn", "planted", detail="x"), fs("sword_of_dawn", "planted")))
    assert result["active_foreshadowing"] == ["ancient_prophecy", "betrayal_hint", "sword_of_dawn"]


def test_foreshadow_advanced_keeps_or_adds() -> None:
    result = apply_delta(SEED_STATE, delta(fs("betrayal_hint", "advanced"), fs("new.hint", "advanced")))
    assert result["active_foreshadowing"] == ["ancient_prophecy", "betrayal_hint", "new.hint"]


def test_foreshadow_resolved_removes() -> None:
    result = apply_delta(SEED_STATE, delta(fs("ancient_prophecy", "resolved")))
    assert result["active_foreshadowing"] == ["betrayal_hint"]


def test_foreshadow_resolved_of_an_inactive_id_is_a_no_op() -> None:
    result = apply_delta(SEED_STATE, delta(fs("never_planted", "resolved")))
    assert result["active_foreshadowing"] == SEED_STATE["active_foreshadowing"]


def test_foreshadow_replanted_after_resolution_is_active_again() -> None:
    result = apply_delta(SEED_STATE, delta(fs("betrayal_hint", "resolved"), fs("betrayal_hint", "planted")))
    assert result["active_foreshadowing"] == ["ancient_prophecy", "betrayal_hint"]


@pytest.mark.parametrize("status", ["done", "PLANTED", "", None, 1, ["planted"]])
def test_foreshadow_status_must_be_known(status: Any) -> None:
    assert_refused(BadOpValue, SEED_STATE, delta(fs("x", status)), op_index=0, rule="foreshadow_status",
                   text="is not one of planted, advanced, resolved")


def test_foreshadow_status_missing() -> None:
    assert_refused(BadOpValue, SEED_STATE, delta({"op": "foreshadow", "path": "x"}), op_index=0,
                   rule="foreshadow_status", text="foreshadow value missing")


def test_foreshadow_id_length() -> None:
    assert apply_delta(SEED_STATE, delta(fs("a" * 200, "planted")))["active_foreshadowing"][-1] == "a" * 200
    assert_refused(BadOpValue, SEED_STATE, delta(fs("a" * 201, "planted")), op_index=0, rule="foreshadow_id",
                   text="201 characters")


@pytest.mark.parametrize("segment", FORBIDDEN)
@pytest.mark.parametrize("template", ["{}", "a.{}", "{}.b", "a.{}.b"])
def test_foreshadow_id_with_a_forbidden_segment(segment: str, template: str) -> None:
    assert_refused(ForbiddenPath, SEED_STATE, delta(fs(template.format(segment), "planted")), op_index=0,
                   rule="forbidden_segment", text=f'forbidden path segment "{segment}"')


def test_foreshadow_ops_extracts_copies_in_order() -> None:
    ops = foreshadow_ops(SEED_DELTA)
    assert ops == [SEED_DELTA["ops"][6]]
    ops[0]["value"] = "resolved"
    assert SEED_DELTA["ops"][6]["value"] == "advanced"
    assert foreshadow_ops(delta(fs("a", "planted"), op("set", "world_state.a", 1), fs("b", "resolved"))) == [
        fs("a", "planted"), fs("b", "resolved")]
    assert foreshadow_ops({}) == [] and foreshadow_ops({"ops": None}) == []


# --- Schema of the result and of the input ---------------------------------------------------------


@pytest.mark.parametrize(
    ("ops", "op_index", "json_path"),
    [
        ([op("set", "characters.Lin-Feng.location", "x")], 0, "$.characters"),
        ([op("set", "world_state.a", 1), op("set", "characters.lin-feng.relationships.chen-lao", "x")], 1,
         "$.characters.lin-feng.relationships.chen-lao"),
        ([op("set", "characters.lin-feng.display_name", 3), op("set", "world_state.a", 1)], 0,
         "$.characters.lin-feng.display_name"),
        ([op("set", "characters.lin-feng.inventory", "x")], 0, "$.characters.lin-feng.inventory"),
        ([op("set", "characters.zhang-san", None)], 0, "$.characters.zhang-san"),
        ([op("set", "characters.Bad-Slug", {}), op("set", "characters.lin-feng.location", "x")], 0,
         "'Bad-Slug' does not match"),
        ([op("set", "characters.lin-feng.relationships.Chen", 1), op("set", "characters.lin-feng.location", "x")],
         0, "$.characters.lin-feng.relationships"),
    ],
)
def test_resulting_state_must_match_the_schema(ops: list, op_index: int, json_path: str) -> None:
    error = assert_refused(StateSchemaError, SEED_STATE, delta(*ops), op_index=op_index, rule="state_schema",
                           text=json_path)
    assert f"op {op_index} ({ops[op_index]['op']} {ops[op_index]['path']})" in error.message


def test_schema_error_through_a_parent_op_is_blamed_on_the_last_matching_op() -> None:
    ops = [op("set", "characters.lin-feng.relationships.chen-lao", 1),
           op("set", "characters.lin-feng", {"relationships": {"chen-lao": "x"}}),
           op("set", "world_state.a", 1)]
    assert_refused(StateSchemaError, SEED_STATE, delta(*ops), op_index=1, rule="state_schema",
                   text="$.characters.lin-feng.relationships.chen-lao")


def test_schema_error_set_on_a_top_level_key_is_blamed() -> None:
    assert_refused(StateSchemaError, SEED_STATE, delta(op("set", "items.a", 1), op("set", "characters.x", [])),
                   op_index=1, rule="state_schema", text="$.characters.x")


@pytest.mark.parametrize(
    "corrupt",
    [
        {"state_version": -1},
        {"state_version": "47"},
        {"characters": []},
        {"active_foreshadowing": ["a", "a"]},
        {"world_state": None},
    ],
)
def test_corrupt_input_state_is_refused_with_no_op_index(corrupt: dict) -> None:
    assert_refused(StateSchemaError, state(**corrupt), delta(base=47), op_index=None,
                   rule="stored_state_schema", text="stored state breaks the schema at $")


@pytest.mark.parametrize("missing", ["schema_version", "state_version", "characters", "active_foreshadowing"])
def test_input_state_missing_required_key(missing: str) -> None:
    the_state = state()
    del the_state[missing]
    assert_refused(StateSchemaError, the_state, delta(), op_index=None, rule="stored_state_schema",
                   text=missing)


def test_input_state_not_an_object() -> None:
    assert_refused(StateSchemaError, [], delta(), op_index=None, rule="stored_state_schema", text="$")


# --- replay ---------------------------------------------------------------------------------------


def test_replay_from_empty_and_from_a_start() -> None:
    first = delta(op("set", "characters.lin-feng", {"display_name": "林枫"}), fs("p", "planted"), base=0, chapter=1)
    second = delta(op("add", "characters.lin-feng.inventory", "剑"), fs("p", "resolved"), base=1, chapter=2)
    result = replay([first, second])
    assert result == {**empty_state(), "state_version": 2, "last_updated_chapter": 2,
                      "characters": {"lin-feng": {"display_name": "林枫", "inventory": ["剑"]}}}
    assert replay([]) == empty_state()
    assert replay(iter([SEED_DELTA]), start=SEED_STATE) == apply_delta(SEED_STATE, SEED_DELTA)


def test_replay_names_the_failing_delta() -> None:
    first = delta(base=0, chapter=1)
    with pytest.raises(StalePatch) as caught:
        replay([first, first])
    assert caught.value.message.startswith("delta 1: ")
    assert caught.value.extra["delta_index"] == 1 and caught.value.rule == "stale_state_version"
    with pytest.raises(ForbiddenPath) as caught:
        replay([first, delta(op("set", "world_state.prototype", 1), base=1)])
    assert caught.value.op_index == 0 and "delta 1: op 0" in caught.value.message


# --- Properties -----------------------------------------------------------------------------------

SLUGS = ["lin-feng", "chen-lao", "zhao-ming", "su_yu", "a1", "x"]
FORESHADOW_IDS = ["ancient_prophecy", "betrayal_hint", "sword.of.dawn", "伏笔-1"]
PROPERTY_SETTINGS = settings(
    max_examples=100, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
texts = st.text(max_size=8)
items = st.sampled_from(["剑", "密信", "破碎魔杖", ""]) | texts  # a small pool, so duplicates happen


def model_apply(model: dict[str, Any], the_op: dict[str, Any]) -> None:
    """An independent, naive model of the few valid ops the strategy draws."""
    if the_op["op"] == "foreshadow":
        active = model["active_foreshadowing"]
        if the_op["value"] == "resolved":
            if the_op["path"] in active:
                active.remove(the_op["path"])
        elif the_op["path"] not in active:
            active.append(the_op["path"])
        return
    *parents, last = the_op["path"].split(".")
    node = model
    for key in parents:
        node = node.setdefault(key, {})
    if the_op["op"] == "set":
        node[last] = copy.deepcopy(the_op["value"])
    elif the_op["op"] == "inc":
        node[last] = node.get(last, 0) + the_op["value"]
    elif the_op["op"] == "add":
        node.setdefault(last, []).append(the_op["value"])
    else:
        node[last].remove(the_op["value"])  # strings only here, so == is strict enough


def draw_op(data: st.DataObject, model: dict[str, Any]) -> dict[str, Any]:
    characters = sorted(model["characters"])
    kinds = ["new_character", "time_marker", "foreshadow"]
    if characters:
        kinds += ["location", "emotion", "relationship", "add_item"]
    holders = [c for c in characters if model["characters"][c].get("inventory")]
    if holders:
        kinds += ["remove_item", "remove_item"]  # weighted: removes need an earlier add
    kind = data.draw(st.sampled_from(kinds))
    if kind == "new_character":
        return op("set", f"characters.{data.draw(st.sampled_from(SLUGS))}", {"display_name": data.draw(texts)})
    if kind == "time_marker":
        return op("set", "world_state.time_marker", data.draw(texts))
    if kind == "foreshadow":
        foreshadow_id = data.draw(st.sampled_from(FORESHADOW_IDS) | st.text(min_size=1, max_size=12).filter(
            lambda s: not set(s.split(".")) & set(FORBIDDEN)))
        extra = {"detail": data.draw(texts)} if data.draw(st.booleans()) else {}
        return fs(foreshadow_id, data.draw(st.sampled_from(["planted", "advanced", "resolved"])), **extra)
    if kind == "remove_item":
        who = data.draw(st.sampled_from(holders))
        item = data.draw(st.sampled_from(model["characters"][who]["inventory"]))
        return op("remove", f"characters.{who}.inventory", item)
    who = data.draw(st.sampled_from(characters))
    if kind == "location":
        return op("set", f"characters.{who}.location", data.draw(texts))
    if kind == "emotion":
        return op("set", f"characters.{who}.emotional_state", data.draw(texts))
    if kind == "relationship":
        other = data.draw(st.sampled_from(SLUGS))
        return op("inc", f"characters.{who}.relationships.{other}", data.draw(st.integers(-100, 100)))
    return op("add", f"characters.{who}.inventory", data.draw(items))


def draw_valid_deltas(data: st.DataObject) -> tuple[list[dict], list[dict]]:
    """Valid deltas built against the evolving state; returns (deltas, states after each)."""
    current, deltas, states = empty_state(), [], []
    chapter = 0
    for _ in range(data.draw(st.integers(0, 6), label="delta count")):
        model = copy.deepcopy(current)
        ops = []
        for _ in range(data.draw(st.integers(0, 6), label="op count")):
            ops.append(draw_op(data, model))
            model_apply(model, ops[-1])
        chapter += data.draw(st.integers(0, 2))
        the_delta = delta(*ops, base=current["state_version"], chapter=chapter,
                          storyline_id=data.draw(st.sampled_from(["main-arc", "side_arc", "b2"])))
        previous = current
        before = copy.deepcopy((previous, the_delta))
        current = apply_delta(previous, the_delta)
        assert (previous, the_delta) == before  # inputs untouched
        assert current == {**model, "state_version": len(deltas) + 1, "last_updated_chapter": chapter}
        deltas.append(the_delta)
        states.append(current)
    return deltas, states


@PROPERTY_SETTINGS
@given(st.data())
def test_valid_delta_sequences_replay_to_the_same_valid_state(data: st.DataObject) -> None:
    deltas, states = draw_valid_deltas(data)
    for each in states:  # (a) every intermediate state is valid
        assert json_issues("STORY_STATE", each) == []
    final = states[-1] if states else empty_state()
    assert replay(deltas) == final  # (b) replay from empty gives the same state
    assert final["state_version"] == len(deltas)  # (c) one version per delta
    if deltas:
        assert replay(deltas[1:], start=states[0]) == final


BAD_OPS = st.sampled_from([
    op("set", "characters.__proto__.x", 1),
    op("set", "world_state", 1),
    op("set", "plot.x", 1),
    op("inc", "world_state.time_marker", 1),
    op("inc", "world_state.n", True),
    op("add", "world_state.time_marker", "x"),
    op("remove", "world_state.time_marker", "not an array"),
    op("zap", "world_state.a", 1),
    fs("x", "forgotten"),
    op("set", "characters.Bad-Slug", {}),
])


@PROPERTY_SETTINGS
@given(st.data(), BAD_OPS)
def test_one_bad_op_anywhere_refuses_the_whole_delta(data: st.DataObject, bad_op: dict) -> None:
    deltas, states = draw_valid_deltas(data)
    current = states[-1] if states else empty_state()
    current = {**current, "world_state": {**current["world_state"], "time_marker": "冬", "ongoing_events": []}}
    model = copy.deepcopy(current)
    good_ops = []
    for _ in range(data.draw(st.integers(0, 4))):
        good_ops.append(draw_op(data, model))
        model_apply(model, good_ops[-1])
    position = data.draw(st.integers(0, len(good_ops)))
    ops = good_ops[:position] + [bad_op] + good_ops[position:]
    the_delta = delta(*ops, base=current["state_version"], chapter=99)
    before = copy.deepcopy((current, the_delta))
    with pytest.raises(PatchError) as caught:
        apply_delta(current, the_delta)
    assert caught.value.op_index == position
    assert f"op {position}" in caught.value.message
    assert (current, the_delta) == before
