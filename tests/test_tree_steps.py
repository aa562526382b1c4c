"""``validate`` / ``advance`` of a step against an exported tree on disk (facts §3, §5–§9), as an outside
executor uses them: export the demo novel, write a step's staged outputs (valid and broken variants), check
that every rule's violation is an error naming the file, that advance updates ``.checkpoint.json`` like the
CLI and refuses after a failed validate, and that hostile trees give clear errors, never exceptions."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from pipeline.steps.step_files import StepUnsupported
from pipeline.steps.tree_advance import StepOutOfOrder, StepValidationFailed, TreeLocked, advance_step
from pipeline.steps.tree_reader import MAX_READ_BYTES
from pipeline.steps.tree_validate import validate_step
from projects.filetree.canonical import dump_json
from projects.filetree.export import export_to_path

CH1 = {"chapter": "staging/chapters/chapter-001.md", "summary": "staging/summaries/chapter-001-summary.md",
       "delta": "staging/state/chapter-001-delta.json", "crossref": "staging/state/chapter-001-crossref.json",
       "memory": "staging/storylines/main-arc/memory.md", "eval": "staging/evaluations/chapter-001-eval.json",
       "changes": "staging/logs/style-refiner-chapter-001-changes.json"}
DELTA = {"chapter": 1, "base_state_version": 1, "storyline_id": "main-arc",
         "ops": [{"op": "set", "path": "characters.lin-feng.location", "value": "幽暗森林"}]}
# the demo novel is on qidian, whose profile requires a chapter-end hook verdict (facts §7.1, issue #17)
EVAL = {"chapter": 1, "overall": 4.2, "recommendation": "pass",
        "hook": {"present": True, "type": "question", "evidence": "雪地里多了一行脚印。", "reason": "悬念",
                 "strength": 4}}
RULES = {"rules": [{"id": "W-001", "category": "magic_system", "rule": "星火每日至多三次", "constraint_type": "hard",
                    "exceptions": []}]}


@pytest.fixture
def root(sample_project, tmp_path) -> Path:
    export_to_path(sample_project, tmp_path / "novel")
    return tmp_path / "novel"


def write(root: Path, rel: str, content) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False),
                        encoding="utf-8")


def checkpoint(root: Path) -> dict:
    return json.loads((root / ".checkpoint.json").read_text(encoding="utf-8"))


def set_checkpoint(root: Path, **fields) -> None:
    write(root, ".checkpoint.json", {**checkpoint(root), **fields})


def errors_of(root: Path, step: str) -> list[str]:
    return validate_step(root, step).errors


def write_summarize_outputs(root: Path) -> None:
    write(root, CH1["summary"], "## 第 1 章摘要\n### 关键事件\n- 林枫救下陈老\n"
                                "### 故事线标记\n- storyline_id: main-arc\n")
    write(root, CH1["delta"], DELTA)
    write(root, CH1["crossref"], {"storyline_id": "main-arc", "cross_references": [], "leak_risk": "none"})
    write(root, CH1["memory"], "林枫得到密信。")


# --- Chapter pipeline (facts §7.1, §3) --------------------------------------------------------------
@pytest.mark.django_db
def test_chapter_pipeline_validate_and_advance(root):
    set_checkpoint(root, hook_policy_version=2)  # an unknown key: kept by every advance
    assert errors_of(root, "chapter:001:draft") == ["staging/chapters/chapter-001.md: missing required file"]
    write(root, CH1["chapter"], "# 雪原来客\n\n林枫踏雪而来。")
    assert validate_step(root, "chapter:1:draft").ok
    after = advance_step(root, "chapter:1:draft")
    assert (after["pipeline_stage"], after["inflight_chapter"], after["orchestrator_state"]) == (
        "drafting", 1, "WRITING")
    assert (after["revision_count"], after["hook_fix_count"], after["title_fix_count"]) == (0, 0, 0)
    assert after["hook_policy_version"] == 2 and after["last_checkpoint_time"]
    assert checkpoint(root) == after
    assert (root / ".checkpoint.json").read_bytes() == dump_json(after)  # sorted keys, 2 spaces, LF, newline
    assert not (root / ".novel.lock").exists()

    write_summarize_outputs(root)
    assert advance_step(root, "chapter:001:summarize")["pipeline_stage"] == "drafted"
    refine = validate_step(root, "chapter:001:refine")
    assert refine.ok and refine.warnings == [f"{CH1['changes']}: missing optional changes log"]
    assert advance_step(root, "chapter:001:refine")["pipeline_stage"] == "refined"
    write(root, CH1["eval"], EVAL)
    judged = advance_step(root, "chapter:001:judge")
    assert (judged["pipeline_stage"], judged["revision_count"]) == ("judged", 0)
    assert judged["hook_policy_version"] == 2


@pytest.mark.django_db
def test_redraft_after_judge_counts_a_revision_and_clears_stale_outputs(root):
    write(root, CH1["chapter"], "# 雪原来客\n\n正文。")
    write_summarize_outputs(root)
    write(root, CH1["eval"], EVAL)
    write(root, CH1["changes"], {"changes": []})
    set_checkpoint(root, pipeline_stage="judged", inflight_chapter=1, revision_count=0)
    after = advance_step(root, "chapter:001:draft")
    assert (after["pipeline_stage"], after["revision_count"], after["orchestrator_state"]) == (
        "drafting", 1, "CHAPTER_REWRITE")
    for key in ("summary", "delta", "crossref", "eval", "changes"):
        assert not (root / CH1[key]).exists(), key
    assert (root / CH1["chapter"]).exists() and (root / CH1["memory"]).exists()
    write_summarize_outputs(root)
    assert advance_step(root, "chapter:001:summarize")["orchestrator_state"] == "CHAPTER_REWRITE"


@pytest.mark.django_db
def test_polish_after_judge_counts_a_revision_and_drops_the_eval(root):
    write(root, CH1["chapter"], "# 雪原来客\n\n正文。")
    write(root, CH1["eval"], EVAL)
    set_checkpoint(root, pipeline_stage="judged", inflight_chapter=1, revision_count=1)
    after = advance_step(root, "chapter:001:refine")
    assert (after["pipeline_stage"], after["revision_count"], after["orchestrator_state"]) == (
        "refined", 2, "CHAPTER_REWRITE")
    assert not (root / CH1["eval"]).exists()


@pytest.mark.django_db
def test_advance_refuses_after_a_failed_validate(root):
    before = (root / ".checkpoint.json").read_bytes()
    write(root, CH1["chapter"], "   \n")
    with pytest.raises(StepValidationFailed) as caught:
        advance_step(root, "chapter:001:draft")
    assert caught.value.code == "step_validation_failed"
    assert caught.value.extra["errors"] == ["staging/chapters/chapter-001.md: empty draft"]
    assert (root / ".checkpoint.json").read_bytes() == before
    assert not (root / ".novel.lock").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("edit, message", [
    ({"delta": None}, f"{CH1['delta']}: missing required file"),
    ({"summary": None}, f"{CH1['summary']}: missing required file"),
    ({"crossref": None}, f"{CH1['crossref']}: missing required file"),
    ({"memory": None}, f"{CH1['memory']}: missing required file"),
    ({"delta": "not json {"}, f"{CH1['delta']}: invalid JSON"),
    ({"delta": [DELTA]}, f"{CH1['delta']}: must be a JSON object, not an array"),
    ({"crossref": "[]"}, f"{CH1['crossref']}: must be a JSON object, not an array"),
    ({"delta": {**DELTA, "chapter": "1"}}, f"{CH1['delta']}: chapter must be a number"),
    ({"delta": {**DELTA, "storyline_id": ""}}, f"{CH1['delta']}: storyline_id must be a non-empty string"),
    ({"delta": {**DELTA, "storyline_id": 7}}, f"{CH1['delta']}: storyline_id must be a non-empty string"),
    ({"delta": {**DELTA, "storyline_id": "../../../etc"}},
     f"{CH1['delta']}: storyline_id: must not contain '..' path traversal segments"),
    ({"delta": {**DELTA, "storyline_id": "..\\..\\x"}},
     f"{CH1['delta']}: storyline_id: must not contain '..' path traversal segments"),
    ({"delta": {**DELTA, "storyline_id": "/etc"}}, f"{CH1['delta']}: storyline_id: must be a project-relative path"),
    ({"delta": {**DELTA, "chapter": float("nan")}}, f"{CH1['delta']}: invalid JSON"),
])
def test_summarize_rules(root, edit, message):
    write(root, CH1["chapter"], "# 雪原来客\n\n正文。")
    write_summarize_outputs(root)
    for key, content in edit.items():
        if content is None:
            (root / CH1[key]).unlink()
        else:
            write(root, CH1[key], content)
    errors = errors_of(root, "chapter:001:summarize")
    assert any(error.startswith(message) for error in errors), errors
    with pytest.raises(StepValidationFailed):
        advance_step(root, "chapter:001:summarize")


@pytest.mark.django_db
def test_summarize_chapter_mismatch_only_warns(root):
    write(root, CH1["chapter"], "正文")
    write_summarize_outputs(root)
    write(root, CH1["delta"], {**DELTA, "chapter": 2})
    check = validate_step(root, "chapter:001:summarize")
    assert check.ok and check.warnings == [f"{CH1['delta']}: chapter is 2, expected 1"]


@pytest.mark.django_db
@pytest.mark.parametrize("evaluation, message", [
    ({"overall": 4.0, "recommendation": "pass"}, "chapter must be a number"),
    ({"chapter": 1, "recommendation": "pass"}, "overall must be a number"),
    ({"chapter": 1, "overall": "4", "recommendation": "pass"}, "overall must be a number"),
    ({"chapter": 1, "overall": 4.0}, "recommendation must be a non-empty string"),
    ([EVAL], "must be a JSON object, not an array"),
])
def test_judge_rules(root, evaluation, message):
    write(root, CH1["chapter"], "正文")
    write(root, CH1["eval"], evaluation)
    assert f"{CH1['eval']}: {message}" in errors_of(root, "chapter:001:judge")


@pytest.mark.django_db
def test_review_and_commit_do_not_advance_on_a_tree(root):
    review = validate_step(root, "chapter:001:review")
    assert review.ok and review.warnings
    with pytest.raises(StepUnsupported, match="manual step"):
        advance_step(root, "chapter:001:review")
    with pytest.raises(StepUnsupported, match="novel import-step") as caught:
        advance_step(root, "chapter:001:commit")
    assert caught.value.code == "step_unsupported"
    assert set(errors_of(root, "chapter:001:commit")) >= {f"{CH1['chapter']}: missing required file",
                                                           f"{CH1['eval']}: missing required file"}
    write(root, CH1["chapter"], "# 雪原来客\n\n正文。")
    write_summarize_outputs(root)
    write(root, CH1["eval"], {**EVAL, "overall": None})
    assert errors_of(root, "chapter:001:commit") == [f"{CH1['eval']}: overall_final or overall must be a finite number"]
    write(root, CH1["eval"], EVAL)
    assert validate_step(root, "chapter:001:commit").ok


@pytest.mark.django_db
@pytest.mark.parametrize("stage", ["title-fix", "hook-fix"])
def test_title_and_hook_fix_are_refused(root, stage):
    assert "does not implement platform title/hook policies" in errors_of(root, f"chapter:001:{stage}")[0]
    with pytest.raises(StepUnsupported):
        advance_step(root, f"chapter:001:{stage}")


# --- Quick start (facts §5) -------------------------------------------------------------------------
def quick_start(root: Path) -> None:
    set_checkpoint(root, orchestrator_state="QUICK_START", pipeline_stage=None, quickstart_phase=None,
                   last_committed_volume=0)


@pytest.mark.django_db
@pytest.mark.parametrize("rules, message", [
    ([], "must be a JSON object, not an array"),
    ({"rules": {}}, "must have a rules array"),
    ({"rules": ["W-001"]}, "rules[0] must be an object"),
    ({"rules": [{**RULES["rules"][0], "id": " "}]}, "rules[0].id must be a non-empty string"),
    ({"rules": [{**RULES["rules"][0], "constraint_type": "firm"}]}, "rules[0].constraint_type must be hard or soft"),
    ({"rules": [{k: v for k, v in RULES["rules"][0].items() if k != "exceptions"}]},
     "rules[0].exceptions must be an array"),
])
def test_quickstart_world_rules(root, rules, message):
    quick_start(root)
    write(root, "staging/quickstart/rules.json", rules)
    assert f"staging/quickstart/rules.json: {message}" in errors_of(root, "quickstart:world")


@pytest.mark.django_db
def test_quickstart_world_characters_style(root):
    quick_start(root)
    write(root, "staging/quickstart/rules.json", RULES)
    after = advance_step(root, "quickstart:world")
    assert (after["quickstart_phase"], after["orchestrator_state"], after["pipeline_stage"]) == (
        "world", "QUICK_START", None)
    assert errors_of(root, "quickstart:characters") == ["staging/quickstart/contracts: missing required directory"]
    (root / "staging/quickstart/contracts").mkdir()
    assert errors_of(root, "quickstart:characters") == [
        "staging/quickstart/contracts: expected at least 1 *.json contract file"]
    write(root, "staging/quickstart/contracts/lin-feng.json", "[1]")
    assert errors_of(root, "quickstart:characters") == [
        "staging/quickstart/contracts/lin-feng.json: must be a JSON object, not an array"]
    write(root, "staging/quickstart/contracts/lin-feng.json", {"display_name": "林枫", "contracts": []})
    assert advance_step(root, "quickstart:characters")["quickstart_phase"] == "characters"
    write(root, "staging/quickstart/style-profile.json", {"source_type": "imitation"})
    assert errors_of(root, "quickstart:style") == [
        "staging/quickstart/style-profile.json: source_type must be one of original, reference, template, "
        "write_then_extract"]
    write(root, "staging/quickstart/style-profile.json", {"source_type": "original"})
    assert advance_step(root, "quickstart:style")["quickstart_phase"] == "style"


@pytest.mark.django_db
def test_quickstart_f0_validates_the_mini_plan_and_moves_it(root):
    quick_start(root)
    (root / "staging/volumes").mkdir(parents=True)
    shutil.move(root / "volumes/vol-01", root / "staging/volumes/vol-01")  # the demo's plan is a valid seed
    assert errors_of(root, "quickstart:trial")[0].startswith("volumes/vol-01: the committed F0 seed")
    contract = root / "staging/volumes/vol-01/chapter-contracts/chapter-002.json"
    saved = contract.read_bytes()
    contract.unlink()
    assert errors_of(root, "quickstart:f0") == [
        "staging/volumes/vol-01/chapter-contracts/chapter-002.json: missing required file"]
    contract.write_bytes(saved)
    assert validate_step(root, "quickstart:f0").ok
    (root / "volumes/vol-01").mkdir(parents=True)
    with pytest.raises(StepOutOfOrder, match="volumes/vol-01: already exists"):
        advance_step(root, "quickstart:f0")
    (root / "volumes/vol-01").rmdir()
    assert advance_step(root, "quickstart:f0")["quickstart_phase"] == "f0"
    assert (root / "volumes/vol-01/chapter-contracts/chapter-003.json").exists()
    assert not (root / "staging/volumes/vol-01").exists()


@pytest.mark.django_db
def test_quickstart_trial_and_results_commit_the_artifacts(root):
    quick_start(root)
    write(root, "staging/quickstart/rules.json", RULES)
    write(root, "staging/quickstart/contracts/su-yao.json", {"display_name": "苏瑶", "contracts": []})
    write(root, "staging/quickstart/style-profile.json", {"source_type": "original"})
    write(root, "staging/quickstart/trial-chapter.md", "林枫踏雪而来。")
    trial = validate_step(root, "quickstart:trial")
    assert trial.ok and trial.warnings == [
        "staging/quickstart/trial-chapter.md: does not start with a Markdown H1 (# ...)"]
    advance_step(root, "quickstart:trial")
    write(root, "staging/quickstart/evaluation.json", {"overall": "good"})
    results = validate_step(root, "quickstart:results")
    assert results.ok and results.warnings == ["staging/quickstart/evaluation.json: overall is not a number",
                                               "staging/quickstart/evaluation.json: recommendation is not a string"]
    after = advance_step(root, "quickstart:results")
    assert (after["orchestrator_state"], after["quickstart_phase"], after["volume_pipeline_stage"]) == (
        "VOL_PLANNING", None, None)
    assert json.loads((root / "world/rules.json").read_text()) == RULES
    assert json.loads((root / "style-profile.json").read_text()) == {"source_type": "original"}
    assert (root / "logs/quickstart/trial-chapter.md").read_text() == "林枫踏雪而来。"
    assert (root / "logs/quickstart/evaluation.json").exists()
    assert (root / "characters/active/su-yao.json").exists()
    assert not (root / "staging/quickstart").exists()


@pytest.mark.django_db
def test_quickstart_does_not_advance_while_writing(root):
    write(root, "staging/quickstart/rules.json", RULES)
    with pytest.raises(StepOutOfOrder, match="only from INIT or QUICK_START, not WRITING") as caught:
        advance_step(root, "quickstart:world")
    assert caught.value.code == "step_out_of_order"


# --- Volume planning (facts §6) ---------------------------------------------------------------------
def stage_plan(root: Path, chapters: range, volume: int = 1) -> str:
    base = f"staging/volumes/vol-{volume:02d}"
    blocks = [f"## 第 {volume} 卷大纲", ""]
    for n in chapters:
        blocks += [f"### 第 {n} 章: 第{n}章", "- **Storyline**: main-arc", "- **POV**: lin-feng",
                   "- **Location**: 幽暗森林", "- **Conflict**: 追兵", "- **Arc**: 成长", "- **Foreshadowing**: 无",
                   "- **StateChanges**: lin-feng.location", "- **TransitionHint**: null", ""]
        write(root, f"{base}/chapter-contracts/chapter-{n:03d}.json", {
            "chapter": n, "storyline_id": "main-arc",
            "preconditions": {"character_states": {"lin-feng": {"location": "幽暗森林"}}},
            "objectives": [{"id": f"OBJ-{n}-1", "type": "plot", "required": True, "description": "推进主线"}],
            "postconditions": {"state_changes": {"lin-feng": {"location": "幽暗森林"}}}})
    write(root, f"{base}/outline.md", "\n".join(blocks))
    write(root, f"{base}/storyline-schedule.json", {"volume": volume, "active_storylines": ["main-arc"]})
    write(root, f"{base}/foreshadowing.json", {"schema_version": 1, "items": []})
    write(root, f"{base}/new-characters.json", [])
    return base


@pytest.mark.django_db
def test_volume_plan_after_the_seed_validates_and_advances(root):
    set_checkpoint(root, orchestrator_state="VOL_PLANNING")
    base = stage_plan(root, range(4, 31))
    assert validate_step(root, "volume:outline").ok
    after = advance_step(root, "volume:outline")
    assert (after["volume_pipeline_stage"], after["orchestrator_state"], after["pipeline_stage"]) == (
        "validate", "VOL_PLANNING", "committed")
    assert advance_step(root, "volume:validate")["volume_pipeline_stage"] == "commit"
    assert validate_step(root, "volume:commit").ok
    with pytest.raises(StepUnsupported, match="Novelsite commits on the server"):
        advance_step(root, "volume:commit")
    set_checkpoint(root, volume_pipeline_stage="validate")
    assert errors_of(root, "volume:commit") == [
        ".checkpoint.json: volume_pipeline_stage must be 'commit' (advance volume:validate first)"]
    assert (root / base).exists()


@pytest.mark.django_db
def test_volume_plan_rules_name_the_file(root):
    set_checkpoint(root, orchestrator_state="VOL_PLANNING")
    base = stage_plan(root, range(3, 31))  # chapter 3 belongs to the seed
    (root / base / "chapter-contracts/chapter-017.json").unlink()
    write(root, f"{base}/storyline-schedule.json", "{oops")
    write(root, f"{base}/new-characters.json", [{"name": "苏瑶", "role": "hero", "brief": "剑修", "first_chapter": 99}])
    errors = errors_of(root, "volume:outline")
    assert f"{base}/outline.md: chapters [3] are outside the range 4–30" in errors
    assert f"{base}/chapter-contracts/chapter-017.json: missing required file" in errors
    assert any(e.startswith(f"{base}/storyline-schedule.json: invalid JSON") for e in errors)
    assert f"{base}/new-characters.json[0].role: must be one of antagonist, supporting, minor" in errors
    assert f"{base}/new-characters.json[0].first_chapter: must be a chapter in 4–30" in errors
    assert len([e for e in errors if "chapter-017" in e]) == 1  # unreadable files are reported once
    assert all(e.startswith(base) for e in errors)


@pytest.mark.django_db
def test_volume_range_past_the_volume_end(root):
    set_checkpoint(root, orchestrator_state="VOL_PLANNING", last_completed_chapter=30)
    assert errors_of(root, "volume:outline") == [
        ".checkpoint.json: plan_start=31 > plan_end=30: fix the checkpoint (current_volume=1, "
        "last_completed_chapter=30)"]


@pytest.mark.django_db
def test_volume_advance_needs_vol_planning(root):
    stage_plan(root, range(4, 31))
    with pytest.raises(StepOutOfOrder, match="only in VOL_PLANNING"):
        advance_step(root, "volume:outline")  # WRITING, and volume 1 has an outline


# --- Volume review (facts §8) -----------------------------------------------------------------------
@pytest.mark.django_db
def test_volume_review_steps(root):
    set_checkpoint(root, last_completed_chapter=30, hook_policy_version=2)
    assert errors_of(root, "review:collect") == ["staging/vol-review/quality-summary.json: missing required file"]
    write(root, "staging/vol-review/quality-summary.json", {"schema_version": 2})
    collect = validate_step(root, "review:collect")
    assert collect.ok and collect.warnings == [
        "staging/vol-review/quality-summary.json: schema_version is 2, expected 1"]
    assert advance_step(root, "review:collect")["orchestrator_state"] == "VOL_REVIEW"
    write(root, "staging/vol-review/audit-report.json", {"schema_version": 1, "issues": []})
    advance_step(root, "review:audit")
    write(root, "staging/vol-review/review-report.md", "\n")
    assert errors_of(root, "review:report") == ["staging/vol-review/review-report.md: empty report"]
    write(root, "staging/vol-review/review-report.md", "# 第 1 卷回顾\n")
    advance_step(root, "review:report")
    assert errors_of(root, "review:transition") == ["staging/vol-review/foreshadow-status.json: missing required file"]
    write(root, "staging/vol-review/foreshadow-status.json", {"schema_version": 1})
    advance_step(root, "review:cleanup")
    after = advance_step(root, "review:transition")
    assert (after["current_volume"], after["orchestrator_state"], after["pipeline_stage"], after["revision_count"]) == (
        2, "VOL_PLANNING", "committed", 0)
    assert after["hook_policy_version"] == 2
    assert not (root / "staging/vol-review").exists()


@pytest.mark.django_db
def test_review_does_not_advance_during_quick_start(root):
    quick_start(root)
    write(root, "staging/vol-review/quality-summary.json", {"schema_version": 1})
    with pytest.raises(StepOutOfOrder, match="only from WRITING"):
        advance_step(root, "review:collect")


# --- Hostile trees ----------------------------------------------------------------------------------
@pytest.mark.django_db
def test_symlink_out_of_the_tree(root, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# 外部文件\n", encoding="utf-8")
    (root / "staging/chapters").mkdir(parents=True)
    os.symlink(outside, root / CH1["chapter"])
    assert errors_of(root, "chapter:001:draft") == [f"{CH1['chapter']}: resolves outside the project root"]
    os.unlink(root / CH1["chapter"])
    shutil.rmtree(root / "staging")
    (tmp_path / "elsewhere/chapters").mkdir(parents=True)
    (tmp_path / "elsewhere/chapters/chapter-001.md").write_text("正文", encoding="utf-8")
    os.symlink(tmp_path / "elsewhere", root / "staging")  # the whole staging directory
    assert errors_of(root, "chapter:001:draft") == [f"{CH1['chapter']}: resolves outside the project root"]
    with pytest.raises(StepValidationFailed):
        advance_step(root, "chapter:001:draft")


@pytest.mark.django_db
def test_memory_symlink_out_of_the_tree(root, tmp_path):
    write(root, CH1["chapter"], "正文")
    write_summarize_outputs(root)
    (tmp_path / "mem").mkdir()
    (tmp_path / "mem/memory.md").write_text("x", encoding="utf-8")
    shutil.rmtree(root / "staging/storylines/main-arc")
    os.symlink(tmp_path / "mem", root / "staging/storylines/main-arc")
    assert errors_of(root, "chapter:001:summarize") == [f"{CH1['memory']}: resolves outside the project root"]


@pytest.mark.django_db
def test_huge_and_non_regular_files(root):
    (root / "staging/chapters").mkdir(parents=True)
    with open(root / CH1["chapter"], "wb") as handle:
        handle.truncate(MAX_READ_BYTES + 1)  # sparse: cheap to make
    assert errors_of(root, "chapter:001:draft") == [
        f"{CH1['chapter']}: file is {MAX_READ_BYTES + 1} bytes; the limit is {MAX_READ_BYTES}"]
    os.unlink(root / CH1["chapter"])
    (root / CH1["chapter"]).mkdir()
    assert errors_of(root, "chapter:001:draft") == [f"{CH1['chapter']}: not a regular file"]


@pytest.mark.django_db
def test_binary_and_deeply_nested_json(root):
    write(root, CH1["chapter"], b"\xff\xfe\x00bad")
    assert errors_of(root, "chapter:001:draft")[0].startswith(f"{CH1['chapter']}: not UTF-8 text")
    write(root, CH1["eval"], "[" * 5000 + "]" * 5000)
    assert any(e.startswith(f"{CH1['eval']}: JSON nested deeper than") for e in errors_of(root, "chapter:001:judge"))


@pytest.mark.django_db
@pytest.mark.parametrize("content, message", [
    (None, ".checkpoint.json: missing file: this is not a project root"),
    ("{", ".checkpoint.json: invalid JSON"),
    ("[]", ".checkpoint.json: must be a JSON object, not an array"),
    ({"last_completed_chapter": "0", "current_volume": 1}, ".checkpoint.json: last_completed_chapter must be an "
                                                           "integer >= 0"),
    ({"last_completed_chapter": 0, "current_volume": 0}, ".checkpoint.json: current_volume must be an integer >= 1"),
    ({"last_completed_chapter": 0, "current_volume": 1, "pipeline_stage": "dancing"},
     ".checkpoint.json: pipeline_stage must be null or one of"),
])
def test_bad_checkpoints(root, content, message):
    if content is None:
        (root / ".checkpoint.json").unlink()
    else:
        write(root, ".checkpoint.json", content)
    for step in ("chapter:001:draft", "quickstart:world", "volume:outline", "review:collect"):
        errors = errors_of(root, step)
        assert len(errors) == 1 and errors[0].startswith(message), errors
        with pytest.raises(StepValidationFailed):
            advance_step(root, step)


@pytest.mark.django_db
def test_bad_roots_and_step_ids_never_raise(root, tmp_path):
    assert errors_of(tmp_path / "missing", "chapter:001:draft") == [f"{tmp_path / 'missing'}: not a directory"]
    assert "must not contain '..'" in errors_of(root / ".." / "novel", "chapter:001:draft")[0]
    assert errors_of(root, "chapter:x:draft") == [
        "invalid step id 'chapter:x:draft': chapter must be all digits"]
    assert errors_of(root, None)[0].startswith("invalid step id None")
    with pytest.raises(StepValidationFailed):
        advance_step(tmp_path / "missing", "chapter:001:draft")


@pytest.mark.django_db
def test_a_held_lock_refuses_and_a_stale_one_is_cleared(root):
    write(root, CH1["chapter"], "正文")
    write(root, ".novel.lock/info.json", {"pid": 1, "started": "2999-01-01T00:00:00Z", "chapter": None})
    with pytest.raises(TreeLocked) as caught:
        advance_step(root, "chapter:001:draft")
    assert caught.value.code == "tree_locked"
    write(root, ".novel.lock/info.json", {"pid": 1, "started": "2020-01-01T00:00:00Z", "chapter": None})
    assert advance_step(root, "chapter:001:draft")["pipeline_stage"] == "drafting"
    assert not (root / ".novel.lock").exists()


@pytest.mark.django_db
def test_lock_without_info_uses_its_age(root):
    write(root, CH1["chapter"], "正文")
    (root / ".novel.lock").mkdir()
    old = time.time() - 31 * 60
    os.utime(root / ".novel.lock", (old, old))
    assert advance_step(root, "chapter:001:draft")["inflight_chapter"] == 1


@pytest.mark.django_db
def test_advance_never_deletes_outside_the_tree(root, tmp_path):
    write(root, CH1["chapter"], "正文")
    write(root, CH1["eval"], EVAL)
    (tmp_path / "elsewhere").mkdir()
    victim = tmp_path / "elsewhere/chapter-001-summary.md"
    victim.write_text("不能删", encoding="utf-8")
    os.symlink(tmp_path / "elsewhere", root / "staging/summaries")
    set_checkpoint(root, pipeline_stage="judged", inflight_chapter=1)
    before = (root / ".checkpoint.json").read_bytes()
    with pytest.raises(StepValidationFailed, match="staging/summaries/chapter-001-summary.md: resolves outside"):
        advance_step(root, "chapter:001:draft")  # a re-draft deletes the staged summary
    assert victim.read_text(encoding="utf-8") == "不能删"
    assert (root / CH1["eval"]).exists()  # nothing deleted when one path is refused
    assert (root / ".checkpoint.json").read_bytes() == before


@pytest.mark.django_db
def test_checkpoint_symlink_out_of_the_tree(root, tmp_path):
    shutil.copy(root / ".checkpoint.json", tmp_path / "checkpoint.json")
    (root / ".checkpoint.json").unlink()
    os.symlink(tmp_path / "checkpoint.json", root / ".checkpoint.json")
    write(root, CH1["chapter"], "正文")
    assert errors_of(root, "chapter:001:draft") == [".checkpoint.json: resolves outside the project root"]


def test_judge_without_valid_hook_fields_is_refused_when_the_platform_requires_a_hook(root):
    """facts §7.1: with hook_policy.required, the judge step validates the hook fields."""
    write(root, CH1["chapter"], "# 雪原来客\n\n林枫踏雪而来。")
    write_summarize_outputs(root)
    set_checkpoint(root, pipeline_stage="refined", inflight_chapter=1)
    write(root, CH1["eval"], {**EVAL, "hook": {"present": True, "type": "question", "evidence": "长" * 121}})
    errors = errors_of(root, "chapter:001:judge")
    assert any("hook.evidence: at most 120 characters" in e for e in errors)
    assert any("hook.strength" in e for e in errors)
