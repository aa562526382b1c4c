"""InstructionPackets (facts §14.1) for every step kind, built from the database: the exact shape (each
passes ``validate_instruction_packet``), the agent of facts §5–§8, the expected outputs at the staging
paths, the inline values (chapter, volume, plan range with the F0 seed rule, review targets …), paths that
exist in the exported tree, NOVEL_ASK gate wiring (§14.5) and the manifest file name (§1)."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from pipeline.questions.spec import validate_instruction_packet
from pipeline.steps.packets import PacketRefused, default_answer_path, instruction_packet, packet_manifest_path
from pipeline.steps.step_files import InvalidStep, PlanRangeError, StepUnsupported
from projects.filetree.export import export_to_path
from projects.models import Project

QUESTION = {"version": 1, "topic": "platform binding", "questions": [
    {"id": "platform", "header": "Platform", "question": "你准备发布到哪个平台？", "kind": "single_choice",
     "required": True, "default": "qidian",
     "options": [{"label": "qidian", "description": "起点"}, {"label": "web", "description": "自建站/博客"}]}]}

AGENTS = {
    "quickstart:world": ("subagent", "world-builder"),
    "quickstart:characters": ("subagent", "character-weaver"),
    "quickstart:style": ("subagent", "style-analyzer"),
    "quickstart:f0": ("subagent", "plot-architect"),
    "quickstart:trial": ("subagent", "chapter-writer"),
    "quickstart:results": ("subagent", "quality-judge"),
    "volume:outline": ("subagent", "plot-architect"),
    "volume:validate": ("cli", "manual-review"),
    "volume:commit": ("cli", "novel"),
    "chapter:001:draft": ("subagent", "chapter-writer"),
    "chapter:001:summarize": ("subagent", "summarizer"),
    "chapter:001:refine": ("subagent", "style-refiner"),
    "chapter:001:judge": ("subagent", "quality-judge"),
    "chapter:001:review": ("cli", "manual-review"),
    "chapter:001:commit": ("cli", "novel"),
    "review:collect": ("cli", "volume-review"),
    "review:audit": ("subagent", "consistency-auditor"),
    "review:report": ("cli", "volume-review"),
    "review:cleanup": ("cli", "volume-review"),
    "review:transition": ("cli", "novel"),
}

PLAN_FILES = ["outline.md", "storyline-schedule.json", "foreshadowing.json", "new-characters.json"]


def set_checkpoint(project: Project, **fields) -> Project:
    Project.objects.filter(pk=project.pk).update(**fields)
    project.refresh_from_db()
    return project


def outputs(packet: dict) -> list[str]:
    return [entry["path"] for entry in packet["expected_outputs"]]


def plan_outputs(base: str, chapters: range) -> list[str]:
    return [f"{base}/{name}" for name in PLAN_FILES] + [
        f"{base}/chapter-contracts/chapter-{n:03d}.json" for n in chapters]


@pytest.mark.django_db
@pytest.mark.parametrize("step", list(AGENTS))
def test_every_step_kind_has_the_exact_shape_and_agent(sample_project, step):
    packet = instruction_packet(sample_project, step)
    assert validate_instruction_packet(packet) == []
    assert (packet["agent"]["kind"], packet["agent"]["name"]) == AGENTS[step]
    assert packet["version"] == 1 and packet["step"] == step and packet["manifest"]["mode"] == "paths"
    assert "embed" not in packet["manifest"] and "novel_ask" not in packet and "answer_path" not in packet
    if not step.endswith((":commit", ":review")):
        actions = packet["next_actions"]
        if AGENTS[step] == ("cli", "volume-review"):  # the CLI tool writes the artifact first (facts §8)
            assert actions.pop(0)["command"] == f"novel volume-review {step.split(':')[1]}"
        assert actions[:2] == [{"kind": "command", "command": f"novel validate {step}"},
                               {"kind": "command", "command": f"novel advance {step}"}]


@pytest.mark.django_db
@pytest.mark.parametrize("step", list(AGENTS))
def test_manifest_paths_exist_in_the_exported_tree(sample_project, tmp_path, step):
    export_to_path(sample_project, tmp_path / "novel")
    packet = instruction_packet(sample_project, step)
    for key, value in packet["manifest"]["paths"].items():
        for path in value if isinstance(value, list) else [value]:
            if path.startswith("staging/") or "*" in path:
                continue  # written by an earlier step, or a glob
            assert (tmp_path / "novel" / path).exists(), (key, path)


@pytest.mark.django_db
def test_building_a_packet_writes_nothing(sample_project):
    with CaptureQueriesContext(connection) as queries:
        for step in AGENTS:
            instruction_packet(sample_project, step)
    writes = [q["sql"] for q in queries if not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == []


# --- Quick start (facts §5) -------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("phase, expected", [
    ("world", ["staging/quickstart/rules.json"]),
    ("characters", ["staging/quickstart/contracts"]),
    ("style", ["staging/quickstart/style-profile.json"]),
    ("f0", plan_outputs("staging/volumes/vol-01", range(1, 4))),
    ("trial", ["staging/quickstart/trial-chapter.md"]),
    ("results", ["staging/quickstart/evaluation.json"]),
])
def test_quickstart_outputs(sample_project, phase, expected):
    set_checkpoint(sample_project, orchestrator_state="QUICK_START", pipeline_stage=None)
    packet = instruction_packet(sample_project, f"quickstart:{phase}")
    assert outputs(packet) == expected
    assert all(entry["required"] for entry in packet["expected_outputs"])
    inline = packet["manifest"]["inline"]
    assert inline["quickstart_phase"] == phase and inline["volume"] == 1
    assert inline["trial_mode"] is (phase in ("trial", "results"))


@pytest.mark.django_db
def test_quickstart_inline_values_and_staged_inputs(sample_project):
    characters = instruction_packet(sample_project, "quickstart:characters")
    assert characters["manifest"]["inline"]["contracts_output_dir"] == "staging/quickstart/contracts"
    assert characters["manifest"]["paths"]["world_rules"] == "staging/quickstart/rules.json"
    f0 = instruction_packet(sample_project, "quickstart:f0")["manifest"]
    assert f0["inline"]["volume_plan"] == {"volume": 1, "chapter_range": [1, 3]}
    assert f0["inline"]["expected_outputs_base_dir"] == "staging/volumes/vol-01"
    assert f0["paths"]["style_profile"] == "staging/quickstart/style-profile.json"
    results = instruction_packet(sample_project, "quickstart:results")["manifest"]
    assert results["inline"]["chapter"] == 1  # the trial chapter: max(1, last + 1)
    assert results["paths"]["chapter_draft"] == "staging/quickstart/trial-chapter.md"
    set_checkpoint(sample_project, last_completed_chapter=5)
    assert instruction_packet(sample_project, "quickstart:trial")["manifest"]["inline"]["chapter"] == 6


# --- Volume planning (facts §6) ---------------------------------------------------------------------
@pytest.mark.django_db
def test_volume_outline_after_the_f0_seed_plans_4_to_30(sample_project):
    set_checkpoint(sample_project, orchestrator_state="VOL_PLANNING", volume_pipeline_stage=None)
    packet = instruction_packet(sample_project, "volume:outline")
    inline, paths = packet["manifest"]["inline"], packet["manifest"]["paths"]
    assert inline["volume_plan"] == {"volume": 1, "chapter_range": [4, 30]}
    assert inline["volume_plan_seed_range"] == [1, 3]
    assert inline["expected_outputs_base_dir"] == "staging/volumes/vol-01"
    assert paths["existing_volume_outline"] == "volumes/vol-01/outline.md"
    assert paths["existing_chapter_contracts_dir"] == "volumes/vol-01/chapter-contracts"
    assert outputs(packet) == plan_outputs("staging/volumes/vol-01", range(4, 31))
    assert paths["world_rules"] == "world/rules.json" and paths["characters_contracts"] == "characters/active/*.json"


@pytest.mark.django_db
def test_volume_outline_of_a_later_volume(sample_project):
    set_checkpoint(sample_project, orchestrator_state="VOL_PLANNING", current_volume=2, last_completed_chapter=30)
    packet = instruction_packet(sample_project, "volume:outline")
    inline = packet["manifest"]["inline"]
    assert inline["volume_plan"] == {"volume": 2, "chapter_range": [31, 60]}
    assert "volume_plan_seed_range" not in inline and "existing_volume_outline" not in packet["manifest"]["paths"]
    assert outputs(packet) == plan_outputs("staging/volumes/vol-02", range(31, 61))


@pytest.mark.django_db
def test_volume_without_the_seed_plans_from_chapter_1(sample_project):
    sample_project.chapter_contracts.filter(chapter=3).delete()
    set_checkpoint(sample_project, orchestrator_state="VOL_PLANNING")
    inline = instruction_packet(sample_project, "volume:outline")["manifest"]["inline"]
    assert inline["volume_plan"]["chapter_range"] == [1, 30] and "volume_plan_seed_range" not in inline


@pytest.mark.django_db
def test_volume_validate_and_commit(sample_project):
    set_checkpoint(sample_project, orchestrator_state="VOL_PLANNING", volume_pipeline_stage="validate")
    validate = instruction_packet(sample_project, "volume:validate")
    assert validate["manifest"]["inline"]["review_targets"] == {
        "outline": "staging/volumes/vol-01/outline.md",
        "storyline_schedule": "staging/volumes/vol-01/storyline-schedule.json",
        "foreshadowing": "staging/volumes/vol-01/foreshadowing.json",
        "new_characters": "staging/volumes/vol-01/new-characters.json",
        "chapter_contracts_dir": "staging/volumes/vol-01/chapter-contracts"}
    commit = instruction_packet(sample_project, "volume:commit")
    assert commit["manifest"]["inline"]["commit_from"] == "staging/volumes/vol-01"
    assert commit["manifest"]["inline"]["commit_to"] == "volumes/vol-01"
    assert outputs(commit) == plan_outputs("volumes/vol-01", range(4, 31))
    assert commit["next_actions"][0]["command"] == "novel commit --volume 1"


@pytest.mark.django_db
def test_volume_range_past_the_volume_end_is_refused(sample_project):
    set_checkpoint(sample_project, current_volume=1, last_completed_chapter=30)
    with pytest.raises(PlanRangeError, match="plan_start=31 > plan_end=30"):
        instruction_packet(sample_project, "volume:outline")


# --- Chapter pipeline (facts §7.1) ------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("stage, expected", [
    ("draft", [("staging/chapters/chapter-001.md", True)]),
    ("summarize", [("staging/summaries/chapter-001-summary.md", True), ("staging/state/chapter-001-delta.json", True),
                   ("staging/state/chapter-001-crossref.json", True),
                   ("staging/storylines/{storyline_id}/memory.md", True)]),
    ("refine", [("staging/chapters/chapter-001.md", True),
                ("staging/logs/style-refiner-chapter-001-changes.json", False)]),
    ("judge", [("staging/evaluations/chapter-001-eval.json", True)]),
    ("review", []),
    ("commit", [("chapters/chapter-001.md", True), ("summaries/chapter-001-summary.md", True),
                ("evaluations/chapter-001-eval.json", True), ("state/chapter-001-crossref.json", True)]),
])
def test_chapter_outputs(sample_project, stage, expected):
    packet = instruction_packet(sample_project, f"chapter:1:{stage}")
    assert packet["step"] == f"chapter:001:{stage}"
    assert [(e["path"], e["required"]) for e in packet["expected_outputs"]] == expected
    inline = packet["manifest"]["inline"]
    assert (inline["chapter"], inline["volume"], inline["storyline_id"]) == (1, 1, "main-arc")
    paths = packet["manifest"]["paths"]
    assert paths["chapter_contract"] == "volumes/vol-01/chapter-contracts/chapter-001.json"
    assert paths["volume_outline"] == "volumes/vol-01/outline.md"
    assert paths["current_state"] == "state/current-state.json" and paths["project_brief"] == "brief.md"
    if stage != "draft":
        assert paths["chapter_draft"] == "staging/chapters/chapter-001.md"


@pytest.mark.django_db
def test_chapter_draft_context(sample_project):
    packet = instruction_packet(sample_project, "chapter:001:draft")
    inline, paths = packet["manifest"]["inline"], packet["manifest"]["paths"]
    assert inline["hard_rules_list"] == ["W-001: 修炼者每日吸纳星火不得超过三次，否则经脉受损"]  # W-002 is soft
    assert inline["chapter_outline_block"].startswith("### 第 1 章: 雪原来客")
    assert paths["character_contracts"] == ["characters/active/lin-feng.json"]  # the contract's character_states
    assert paths["character_profiles"] == ["characters/active/lin-feng.md"]
    assert paths["storyline_memory"] == "storylines/main-arc/memory.md"
    assert "chapter_eval" not in paths
    assert packet["next_actions"][2]["command"] == "novel instructions chapter:001:summarize --json"


@pytest.mark.django_db
def test_chapter_draft_in_revision_mode_reads_the_draft_and_eval(sample_project):
    set_checkpoint(sample_project, inflight_chapter=1, pipeline_stage="judged", revision_count=1)
    paths = instruction_packet(sample_project, "chapter:001:draft")["manifest"]["paths"]
    assert paths["chapter_draft"] == "staging/chapters/chapter-001.md"
    assert paths["chapter_eval"] == "staging/evaluations/chapter-001-eval.json"


@pytest.mark.django_db
def test_chapter_without_contract_uses_the_current_volume(sample_project):
    set_checkpoint(sample_project, current_volume=1, last_completed_chapter=3)
    packet = instruction_packet(sample_project, "chapter:004:judge")
    inline, paths = packet["manifest"]["inline"], packet["manifest"]["paths"]
    assert (inline["chapter"], inline["volume"]) == (4, 1) and "storyline_id" not in inline
    assert "chapter_contract" not in paths
    assert paths["cross_references"] == "staging/state/chapter-004-crossref.json"
    assert len(paths["character_contracts"]) == 3  # no contract: the first characters, in path order


@pytest.mark.django_db
@pytest.mark.parametrize("stage", ["title-fix", "hook-fix"])
def test_title_and_hook_fix_are_refused(sample_project, stage):
    with pytest.raises(StepUnsupported, match="does not implement platform title/hook policies"):
        instruction_packet(sample_project, f"chapter:001:{stage}")


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["chapter:0:draft", "chapter:001:dance", "volume:plan", "novel:init", ""])
def test_invalid_step_ids_are_refused(sample_project, step):
    with pytest.raises(InvalidStep) as caught:
        instruction_packet(sample_project, step)
    assert caught.value.code == "invalid_step"


# --- Volume review (facts §8) -----------------------------------------------------------------------
@pytest.mark.django_db
def test_review_packets(sample_project):
    set_checkpoint(sample_project, orchestrator_state="VOL_REVIEW", last_completed_chapter=3)
    expected = {"collect": "staging/vol-review/quality-summary.json", "audit": "staging/vol-review/audit-report.json",
                "report": "staging/vol-review/review-report.md", "cleanup": "staging/vol-review/foreshadow-status.json",
                "transition": ".checkpoint.json"}
    for phase, path in expected.items():
        packet = instruction_packet(sample_project, f"review:{phase}")
        assert outputs(packet) == [path]
        assert packet["manifest"]["inline"]["chapter_range"] == [1, 3]  # from the volume outline
    audit = instruction_packet(sample_project, "review:audit")["manifest"]
    assert (audit["inline"]["scope"], audit["inline"]["stride"], audit["inline"]["window"]) == ("volume_end", 5, 10)
    assert audit["paths"]["chapter_contracts"][0] == "volumes/vol-01/chapter-contracts/chapter-001.json"
    assert audit["paths"]["characters_active"][0] == "characters/active/chen-lao.json"
    collect = instruction_packet(sample_project, "review:collect")
    assert collect["next_actions"][0]["command"] == "novel volume-review collect"


@pytest.mark.django_db
def test_review_packets_name_the_ledger_as_the_tool_does(sample_project):
    from projects.models import Foreshadowing
    Foreshadowing.objects.get_or_create(project=sample_project, fid="jade_pendant", defaults={"description": "玉佩"})
    set_checkpoint(sample_project, orchestrator_state="VOL_REVIEW", last_completed_chapter=3)
    paths = instruction_packet(sample_project, "review:audit")["manifest"]["paths"]
    assert paths["foreshadowing_global"] == "foreshadowing/global.json"
    assert "global_foreshadowing" not in paths


@pytest.mark.django_db
def test_review_range_falls_back_to_the_last_ten_chapters(sample_project):
    set_checkpoint(sample_project, current_volume=2, last_completed_chapter=42)
    assert instruction_packet(sample_project, "review:collect")["manifest"]["inline"]["chapter_range"] == [33, 42]
    set_checkpoint(sample_project, last_completed_chapter=0)
    with pytest.raises(PacketRefused, match="cannot resolve the volume review chapter range"):
        instruction_packet(sample_project, "review:collect")


# --- Embed and gates (facts §14.1, §14.5) -----------------------------------------------------------
@pytest.mark.django_db
def test_embed_brief(sample_project):
    packet = instruction_packet(sample_project, "volume:outline", embed_brief=True)
    assert packet["manifest"]["mode"] == "paths+embed"
    assert packet["manifest"]["embed"] == {"brief_preview": sample_project.brief + "\n"}  # brief.md as exported
    assert validate_instruction_packet(packet) == []
    Project.objects.filter(pk=sample_project.pk).update(brief="")
    sample_project.refresh_from_db()
    assert instruction_packet(sample_project, "volume:outline", embed_brief=True)["manifest"]["embed"] == {
        "brief_preview": None}


@pytest.mark.django_db
@pytest.mark.parametrize("step", ["chapter:001:draft", "volume:outline", "quickstart:world"])
def test_gate_is_wired_and_its_answer_path_prepended(sample_project, step):
    answer = default_answer_path(step)
    packet = instruction_packet(sample_project, step, novel_ask=QUESTION, answer_path=answer)
    assert validate_instruction_packet(packet) == []
    assert packet["novel_ask"] == QUESTION and packet["answer_path"] == answer
    assert packet["expected_outputs"][0]["path"] == answer and packet["expected_outputs"][0]["required"] is True
    plain = instruction_packet(sample_project, step)
    assert outputs(packet)[1:] == outputs(plain)
    assert list(packet) == ["version", "step", "agent", "novel_ask", "answer_path", "manifest", "expected_outputs",
                            "next_actions"]


def test_default_answer_path_follows_seed_003():
    assert default_answer_path("chapter:48:draft") == "staging/novel-ask/chapter-048-draft.answers.json"


@pytest.mark.django_db
@pytest.mark.parametrize("step, ask, answer_path, message", [
    ("review:collect", QUESTION, "staging/novel-ask/review-collect.answers.json", "not allowed on review:* steps"),
    ("chapter:001:draft", QUESTION, None, "answer_path: is required when novel_ask is present"),
    ("chapter:001:draft", None, "staging/novel-ask/a.json", "novel_ask: is required when answer_path is present"),
    ("chapter:001:draft", QUESTION, "../answers.json", "must not contain '..'"),
    ("chapter:001:draft", QUESTION, "/tmp/answers.json", "not an absolute one"),
    ("chapter:001:draft", {"version": 1, "topic": "x", "questions": []}, "staging/novel-ask/a.json",
     "novel_ask.questions: must be a non-empty array"),
])
def test_bad_gates_are_refused(sample_project, step, ask, answer_path, message):
    with pytest.raises(PacketRefused, match="invalid NOVEL_ASK gate") as caught:
        instruction_packet(sample_project, step, novel_ask=ask, answer_path=answer_path)
    assert any(message in error for error in caught.value.extra["errors"])
    assert caught.value.code == "packet_refused"


@pytest.mark.parametrize("step, path", [
    ("chapter:48:draft", "staging/manifests/chapter-048-draft.packet.json"),
    ("chapter:001:title-fix", "staging/manifests/chapter-001-title-fix.packet.json"),
    ("volume:outline", "staging/manifests/volume-outline.packet.json"),
    ("quickstart:f0", "staging/manifests/quickstart-f0.packet.json"),
    ("review:transition", "staging/manifests/review-transition.packet.json"),
])
def test_packet_manifest_path(step, path):
    assert packet_manifest_path(step) == path


def test_packet_manifest_path_refuses_bad_step_ids():
    with pytest.raises(InvalidStep):
        packet_manifest_path("chapter:../../x:draft")
