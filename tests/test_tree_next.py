"""``novel next --tree``: the next step of a project tree on disk, as novel-writer-cli computes it
(facts §4.2, §5–§8), in Novelsite's words where Novelsite goes elsewhere (``differs_from_tool``); a
chapter paused for a person is at ``chapter:NNN:review`` there too (#20 items 3, 5)."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from pipeline.book.orchestrator import TOOL_DIFFERENCES, next_step
from pipeline.steps.tree_next import TreeNotReadable, tree_next_step
from projects.filetree.export import export_to_path
from tests.test_filetree import cli_files, write_tree
from tests.test_staged_resume import CH3, EVAL, TEXT, evaluation, summarized


def tree(tmp_path, **checkpoint_and_files):
    files = cli_files()
    checkpoint = json.loads(files[".checkpoint.json"])
    staged = {path: value for path, value in checkpoint_and_files.items() if "/" in path}
    checkpoint.update({key: value for key, value in checkpoint_and_files.items() if "/" not in key})
    files[".checkpoint.json"] = json.dumps(checkpoint).encode()
    for path, value in staged.items():
        files[path] = (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)).encode()
    return write_tree(tmp_path / "tree", files)


def in_flight(stage: str, **files):
    return {"pipeline_stage": stage, "inflight_chapter": 3, "orchestrator_state": "WRITING", **files}


def test_the_next_chapter_of_an_idle_tree_is_drafted(tmp_path):
    assert tree_next_step(tree(tmp_path)) == {"step": "chapter:003:draft", "reason": "writing:chapter-003",
                                              "inflight": {"chapter": None, "pipeline_stage": "committed"}}


def test_a_written_out_outline_short_of_the_volume_is_planned_and_the_difference_said(tmp_path, capsys):
    root = tree(tmp_path, last_completed_chapter=3)
    found = tree_next_step(root)
    assert found["step"] == "volume:outline"
    assert found["evidence"] == {"tool_step": "review:collect",
                                 "differs_from_tool": TOOL_DIFFERENCES["plan_rest_of_volume"]}
    call_command("novel", "next", "--tree", str(root))
    out = capsys.readouterr().out
    assert "next: volume:outline" in out and "unlike novel-writer-cli (review:collect)" in out


@pytest.mark.parametrize(("stage", "files", "step"), [
    ("drafting", {}, "chapter:003:draft"),
    ("drafted", {CH3: TEXT}, "chapter:003:summarize"),
    ("drafted", {CH3: TEXT, **summarized()}, "chapter:003:refine"),
    ("refined", {CH3: TEXT, **summarized(), EVAL: "[]"}, "chapter:003:judge"),  # not an object: judged again
    ("judged", {CH3: TEXT, **summarized(), EVAL: evaluation(4.5)}, "chapter:003:commit"),
    ("judged", {CH3: TEXT, **summarized(), EVAL: evaluation(3.7)}, "chapter:003:refine"),
    ("judged", {CH3: TEXT, **summarized(), EVAL: evaluation(3.2)}, "chapter:003:draft"),
    ("judged", {CH3: TEXT, **summarized(), EVAL: evaluation(2.4)}, "chapter:003:review"),
    ("revising", {CH3: TEXT, **summarized(), EVAL: evaluation(3.2)}, "chapter:003:draft"),
])
def test_a_chapter_in_flight_resumes_where_the_tool_resumes_it(tmp_path, stage, files, step):
    found = tree_next_step(tree(tmp_path, **in_flight(stage, **files)))
    assert found["step"] == step and found["inflight"] == {"chapter": 3, "pipeline_stage": stage}


def test_revisions_spent_force_pass_a_revise_as_the_tool_does(tmp_path):
    found = tree_next_step(tree(tmp_path, revision_count=2,
                                **in_flight("judged", **{CH3: TEXT, **summarized(), EVAL: evaluation(3.2)})))
    assert (found["step"], found["reason"]) == ("chapter:003:commit", "judged:gate:force_passed")


def test_error_retry_heals_first(tmp_path):
    found = tree_next_step(tree(tmp_path, orchestrator_state="ERROR_RETRY", inflight_chapter=3))
    assert (found["step"], found["reason"]) == ("chapter:003:draft",
                                                "error_retry:healed_drop_inflight:writing:chapter-003")


def test_planning_review_and_quick_start_states(tmp_path):
    assert tree_next_step(tree(tmp_path / "a", orchestrator_state="VOL_PLANNING"))["step"] == "volume:outline"
    assert tree_next_step(tree(tmp_path / "b", orchestrator_state="VOL_PLANNING",
                               volume_pipeline_stage="commit"))["step"] == "volume:commit"
    review = tree(tmp_path / "c", orchestrator_state="VOL_REVIEW",
                  **{"staging/vol-review/quality-summary.json": {"schema_version": 1}})
    assert tree_next_step(review)["step"] == "review:audit"
    found = tree_next_step(tree(tmp_path / "d", orchestrator_state="INIT"))
    assert (found["step"], found["reason"]) == ("quickstart:world", "init:quickstart:world")


def test_a_tree_without_a_checkpoint_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(TreeNotReadable, match=".checkpoint.json"):
        tree_next_step(tmp_path / "empty")


@pytest.mark.django_db(transaction=True)
def test_novelsites_paused_chapter_is_at_review_in_its_exported_tree_too(settings, make_user, tmp_path):
    from tests.sample_pages import paused_demo

    settings.CELERY_TASK_ALWAYS_EAGER = True
    demo, _question = paused_demo(settings, make_user("owner"))
    export_to_path(demo, tmp_path / "tree")
    assert tree_next_step(tmp_path / "tree")["step"] == next_step(demo).step == "chapter:002:review"
