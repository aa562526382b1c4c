"""The run blackboard (seed 001): zones, the access table for every component kind, slices,
content versions and the lifecycle."""
from __future__ import annotations

import pytest

from pipeline.runtime.blackboard import ACCESS, KINDS, Blackboard, BlackboardAccessError

# seed 001 "Zone 访问权限", row by row: (kind, zone) -> what the kind may do there
TABLE = {
    ("orchestrator", "meta"): "RW", ("orchestrator", "content"): "R", ("orchestrator", "control"): "RW",
    ("worker", "meta"): "S", ("worker", "content"): "W", ("worker", "control"): "",
    ("skill", "meta"): "S", ("skill", "content"): "RW", ("skill", "control"): "R",
    ("middleware", "meta"): "R", ("middleware", "content"): "RW", ("middleware", "control"): "RW",
    ("slicer", "meta"): "R", ("slicer", "content"): "R", ("slicer", "control"): "R",
}


def board() -> Blackboard:
    b = Blackboard()
    orchestrator = b.as_("orchestrator")
    orchestrator.initialise(meta={"intent": "为第 3 章写推广", "platform": "xiaohongshu"}, steps=["title", "body"])
    b.as_("middleware").write_content("hook", "selected", "雪夜来客")
    orchestrator.write_control("quality_scores.virality", 0.8)
    return b


def attempt(kind: str, zone: str, operation: str) -> bool:
    view = board().as_(kind)
    actions = {
        ("meta", "read"): lambda: view.read_meta("intent"),
        ("meta", "write"): lambda: view.write_meta("intent", "x"),
        ("meta", "slice"): lambda: view.get_slice(["meta.intent"]),
        ("content", "read"): lambda: view.read_content("hook", "selected"),
        ("content", "write"): lambda: view.write_content("hook", "selected", "y"),
        ("content", "slice"): lambda: view.get_slice(["content.hook.selected"]),
        ("control", "read"): lambda: view.read_control("quality_scores.virality"),
        ("control", "write"): lambda: view.write_control("iteration_count", 2),
        ("control", "slice"): lambda: view.get_slice(["control.quality_scores"]),
    }
    try:
        actions[(zone, operation)]()
        return True
    except BlackboardAccessError:
        return False


@pytest.mark.parametrize("kind,zone", sorted(TABLE), ids=lambda v: v)
def test_access_table_row(kind, zone):
    rights = TABLE[(kind, zone)]
    expected = {
        "read": "R" in rights,
        "write": "W" in rights,
        # "R (via slice)" allows a slice; a direct R right allows one too
        "slice": "S" in rights or "R" in rights,
    }
    got = {operation: attempt(kind, zone, operation) for operation in ("read", "write", "slice")}
    assert got == expected


def test_table_in_code_matches_the_seed():
    for (zone, operation), kinds in ACCESS.items():
        for kind in KINDS:
            rights = TABLE[(kind, zone)]
            allowed = {"read": "R" in rights, "write": "W" in rights, "slice": "S" in rights or "R" in rights}
            assert (kind in kinds) == allowed[operation], (kind, zone, operation)


def test_forbidden_write_names_kind_and_zone_and_changes_nothing():
    b = board()
    with pytest.raises(BlackboardAccessError, match="worker may not write the meta zone"):
        b.as_("worker").write_meta("intent", "篡改")
    assert b.as_("orchestrator").read_meta("intent") == "为第 3 章写推广"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_may_append_an_error(kind):
    b = board()
    b.as_(kind).append_error("body", "timeout", "LLM timed out")
    errors = b.as_("orchestrator").read_control("errors")
    assert errors[-1]["step_id"] == "body" and errors[-1]["error_type"] == "timeout" and errors[-1]["timestamp"]


def test_only_the_orchestrator_moves_steps_and_snapshots():
    b = board()
    for kind in ("worker", "skill", "middleware", "slicer"):
        with pytest.raises(BlackboardAccessError):
            b.as_(kind).update_step_status("title", "running")
        with pytest.raises(BlackboardAccessError):
            b.as_(kind).snapshot()
    b.as_("orchestrator").update_step_status("title", "running")
    assert b.as_("slicer").read_control("current_stage") == "title"
    with pytest.raises(ValueError, match="unknown step status"):
        b.as_("orchestrator").update_step_status("title", "exploded")


def test_slice_returns_only_what_was_asked():
    b = board()
    got = b.as_("worker").get_slice(["meta.intent", "meta.missing"])
    assert got == {"meta.intent": "为第 3 章写推广", "meta.missing": None}
    with pytest.raises(ValueError):
        b.as_("slicer").get_slice(["intent"])


def test_content_keeps_its_versions():
    b = Blackboard()
    worker = b.as_("worker")
    for text in ("初稿", "二稿", "定稿"):
        worker.write_content("chapter", "draft", text)
    skill = b.as_("skill")
    assert skill.read_content("chapter", "draft") == "定稿"
    assert [v["value"] for v in skill.content_versions("chapter", "draft")] == ["初稿", "二稿"]


def test_reads_are_copies():
    b = board()
    b.as_("middleware").write_content("body", "sections", [{"title": "一"}])
    sections = b.as_("skill").read_content("body", "sections")
    sections.append({"title": "二"})
    assert b.as_("skill").read_content("body", "sections") == [{"title": "一"}]


def test_lifecycle_and_persistence_round_trip():
    b = board()
    b.as_("worker").write_content("body", "_tmp_outline", "提纲")
    b.as_("worker").write_content("body", "scratch", "草稿")
    final = b.as_("orchestrator").complete(temporary_keys=["body.scratch"])
    assert "_tmp_outline" not in final["content"]["body"] and "scratch" not in final["content"]["body"]
    assert final["control"]["step_status"] == {"title": "pending", "body": "pending"}
    assert final["control"]["iteration_count"] == 0
    restored = Blackboard(final)
    assert restored.to_dict() == final


def test_persisted_shape_matches_the_model_schema():
    from projects.json_validation import json_issues

    b = board()
    b.as_("worker").write_content("hook", "selected", "二")
    assert json_issues("BLACKBOARD", b.to_dict()) == []


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown component kind"):
        Blackboard().as_("plugin")
