"""The novel-project tree (seed 000 §9.1–9.2, facts §1–§3, §10, §15): export writes the seed's names
and formats deterministically; import reads our exports and novel-writer-cli trees in every
documented shape, all or nothing; hostile or broken input is refused naming the file and the
reason; a full project survives export → import → export byte for byte; the API and the ``novel``
command expose both directions."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import zipfile
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from django.test import Client
from rest_framework.test import APIClient

from pipeline.models import PipelineRun
from projects.evaluations import chapter_log_columns, evaluation_columns
from projects.filetree import importer as importer_module
from projects.filetree.canonical import dump_json, dump_json_line
from projects.filetree.errors import TreeError
from projects.filetree.export import (
    export_to_directory,
    foreshadowing_plan_for_export,
    schedule_for_export,
    tree_files,
    zip_stream,
)
from projects.filetree.importer import ImportReport, tree_import
from projects.filetree.source import Limits, read_directory, read_tree, read_zip
from projects.models import (
    CHECKPOINT_FIELDS,
    ArchivedSummary,
    Chapter,
    ChapterLog,
    ChapterSummary,
    Character,
    Evaluation,
    ExtraFile,
    Membership,
    Project,
    ResearchNote,
    Role,
    Storyline,
    VolumeStateSnapshot,
)
from projects.platforms.profiles import default_platform_profile
from projects.sample_project import sample_project_create
from projects.services.editing import story_object_create, story_object_update
from projects.services.story_state import story_state_apply_patch
from projects.slugs import slug_not_available_message

pytestmark = pytest.mark.django_db

CLI_TREE = Path(__file__).parent / "fixtures" / "cli_tree"
FULL_SLUG = "full"
SEED_CHECKPOINT_KEYS = {"last_completed_chapter", "current_volume", "orchestrator_state", "pipeline_stage",
                        "inflight_chapter", "revision_count", "pending_actions", "last_checkpoint_time"}


# --- builders and helpers ---------------------------------------------------------------------------


def zip_of(files: dict[str, bytes | str], *, symlinks: dict[str, str] | None = None) -> io.BytesIO:
    """A zip holding ``files`` exactly as named (no normalisation), plus symlink entries."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o120777 << 16  # S_IFLNK | 0777
            archive.writestr(info, target)
    buffer.seek(0)
    return buffer


def with_lying_size(zip_bytes: bytes, name: str, declared: int) -> bytes:
    """Rewrite the uncompressed size the central directory declares for ``name`` (a zip bomb's trick)."""
    data = bytearray(zip_bytes)
    encoded = name.encode()
    position = data.find(b"PK\x01\x02")
    while position != -1:
        name_length = int.from_bytes(data[position + 28:position + 30], "little")
        if bytes(data[position + 46:position + 46 + name_length]) == encoded:
            data[position + 24:position + 28] = declared.to_bytes(4, "little")
            return bytes(data)
        position = data.find(b"PK\x01\x02", position + 4)
    raise AssertionError(f"{name} is not in the zip")


def write_tree(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, data in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def cli_files() -> dict[str, bytes]:
    """The hand-written novel-writer-cli tree, without its lock directory."""
    return dict(read_directory(CLI_TREE).files)


def tree_of(project: Project) -> dict[str, bytes]:
    return dict(tree_files(project))


def zip_bytes_of(project: Project) -> bytes:
    return b"".join(zip_stream(project))


def import_files(files: dict[str, bytes | str], *, slug: str | None = "imported", limits: Limits | None = None,
                 **options: Any) -> ImportReport:
    return tree_import(read_zip(zip_of(files), limits), slug=slug, **options)


def loads(data: bytes) -> Any:
    return json.loads(data.decode())


def jbytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode() + b"\n"


def snapshot_db_counts() -> dict[str, int]:
    """Row counts of every story and history table (historical models live in the projects app)."""
    models = [*apps.get_app_config("projects").get_models(), *apps.get_app_config("pipeline").get_models()]
    return {model._meta.label: model.objects.count() for model in models}


def assert_nothing_imported(before: dict[str, int], slug: str = "imported") -> None:
    assert snapshot_db_counts() == before
    assert not Project.objects.filter(slug=slug).exists()


def summary_text(number: int, event: str, line: str = "main-arc") -> str:
    return (f"## 第 {number} 章摘要\n\n### 关键事件\n- {event}\n\n### 伏笔变更\n- [埋设] ancient_prophecy\n\n"
            f"### 故事线标记\n- storyline_id: {line}")


def _scores(value: int) -> dict:
    return {name: {"score": value, "weight": 0.125, "reason": "…", "evidence": "原文引用"}
            for name in ("plot_logic", "character", "immersion", "foreshadowing", "pacing", "style_naturalness",
                         "emotional_impact", "storyline_coherence")}


FLAT_EVAL = {"chapter": 1, "scores": _scores(4), "overall": 4.12, "recommendation": "pass", "risk_flags": [],
             "required_fixes": [], "issues": [], "strengths": ["节奏好"],
             "contract_verification": {"l1_checks": [], "l2_checks": [], "l3_checks": [], "ls_checks": [],
                                       "has_violations": False}}
WRAPPED_EVAL = {"chapter": 2, "eval_used": {**FLAT_EVAL, "chapter": 2, "overall": 3.71, "overall_final": 3.55,
                                            "recommendation": "polish"},
                "metadata": {"judges": {"primary": {"model": "sonnet", "overall": 3.71},
                                        "secondary": {"model": "opus", "overall": 3.55}, "used": "secondary",
                                        "overall_final": 3.55},
                             "gate": {"decision": "force_passed", "revisions": 2, "force_passed": True}}}


def _log(number: int, cost: float | None) -> dict:
    return {"chapter": number, "storyline_id": "main-arc", "started_at": "2026-03-15T14:30:00+08:00",
            "stages": [{"name": "draft", "model": "sonnet", "duration_ms": 45000, "input_tokens": 1200,
                        "output_tokens": 3400, "cost_usd": 0.05},
                       {"name": "judge", "model": "sonnet", "duration_ms": 15000, "input_tokens": None,
                        "output_tokens": None}],
            "gate_decision": "pass", "revisions": 0, "total_duration_ms": 60000, "total_cost_usd": cost}


def _patch(project: Project, chapter: int, storyline: str, *ops: dict, user=None) -> None:
    project.story_state.refresh_from_db()
    story_state_apply_patch(project=project, user=user, delta={
        "chapter": chapter, "base_state_version": project.story_state.state_version, "storyline_id": storyline,
        "ops": list(ops)})


def build_full_project(owner=None) -> Project:
    """The demo novel plus every kind of file the tree has, added through services where one exists."""
    project = sample_project_create(owner=owner, slug=FULL_SLUG)
    volume = project.volumes.get(number=1)
    main = project.storylines.get(slug="main-arc")
    story_object_update(obj=main, editor=owner, base_version=main.version, memory="林枫得到密信，决意南下。")
    side = story_object_create(instance=Storyline(
        project=project, slug="side-arc", name="魔都暗线", type="conspiracy", scope="single_volume",
        pov_characters=["zhao-ming"], affiliated_factions=["赵家"], timeline="present", status="active",
        description="赵明在魔都布局", introduced_volume=1, memory="赵家暗中收购星火残卷。", position=1,
        extra={"color": "crimson"}), editor=owner)
    story_object_create(instance=ResearchNote(project=project, name="星火宗考",
                                              content="# 星火宗\n\n三百年前的宗门旧事。"), editor=owner)
    story_object_create(instance=Character(
        project=project, slug="old-wang", display_name="老王", status="retired", profile="雪原猎户，第二章离世。",
        contracts=[{"id": "C-OLD-WANG-001", "type": "speech", "rule": "说话带北境口音", "valid_from_chapter": 1,
                    "valid_until": 2, "exceptions": []}], extra={"retired_chapter": 2}), editor=owner)

    texts = {1: ("雪原来客", "风雪压着山口。林枫背着陈老走了一夜。\n\n天亮时，他看见了密信。", main),
             2: ("密信", "赵明的马队停在坡下。\n\n林枫把信藏进怀里，没有回头。", main),
             3: ("入林", "幽暗森林里分不清方向。陈老说：“善。”", side)}
    chapters = {}
    for number, (title, text, line) in texts.items():
        chapters[number] = story_object_create(instance=Chapter(
            project=project, volume=volume, number=number, title=title, text=text, storyline=line), editor=owner)
        # chapter 3's summary names main-arc while the chapter sits on side-arc: an override to round-trip
        ChapterSummary.objects.create(project=project, chapter=chapters[number], storyline_slug="main-arc",
                                      text=summary_text(number, f"{title}的关键事件"))
    for number, data in ((1, FLAT_EVAL), (2, WRAPPED_EVAL)):
        Evaluation.objects.create(project=project, chapter=chapters[number], data=data, **evaluation_columns(data))
    for number, cost in ((1, 0.0731), (2, None)):
        data = _log(number, cost)
        ChapterLog.objects.create(project=project, chapter=chapters[number], data=data, **chapter_log_columns(data))

    _patch(project, 1, "main-arc", {"op": "set", "path": "characters.lin-feng.location", "value": "雪原小屋"},
           {"op": "add", "path": "characters.lin-feng.inventory", "value": "密信"},
           {"op": "foreshadow", "path": "ancient_prophecy", "value": "planted", "detail": "陈老提及预言碎片"},
           user=owner)
    _patch(project, 2, "main-arc", {"op": "inc", "path": "characters.lin-feng.relationships.chen-lao", "value": 50},
           {"op": "add", "path": "characters.lin-feng.inventory", "value": "破碎魔杖"},
           {"op": "foreshadow", "path": "betrayal_hint", "value": "planted"})
    _patch(project, 3, "side-arc", {"op": "remove", "path": "characters.lin-feng.inventory", "value": "破碎魔杖"},
           {"op": "set", "path": "world_state.time_marker", "value": "第三年冬末"},
           {"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced", "detail": "林中石碑"},
           {"op": "foreshadow", "path": "betrayal_hint", "value": "resolved", "detail": "赵明现身"})
    project.foreshadowing.filter(fid="ancient_prophecy").update(extra={"note": "全书主伏笔"})

    volume.refresh_from_db()
    story_object_update(obj=volume, editor=owner, base_version=volume.version, review="## 第 1 卷回顾\n\n节奏偏慢。",
                        new_characters=[{"name": "赵家管事", "role": "minor", "brief": "跑腿", "first_chapter": 3}],
                        storyline_schedule={"volume": 1, "active_storylines": [
                            {"storyline_id": "main-arc", "volume_role": "primary", "arc_goal": "南下"},
                            {"storyline_id": "side-arc", "volume_role": "secondary", "target_chapters": [3]}]})
    project.story_state.refresh_from_db()
    VolumeStateSnapshot.objects.create(project=project, volume_number=1, data=project.story_state.data)
    ArchivedSummary.objects.create(project=project, level="archive", chapter_start=1, chapter_end=3,
                                   volume_number=1, text="林枫救下陈老，得密信，入幽暗森林。")
    ArchivedSummary.objects.create(project=project, level="volume", chapter_start=1, chapter_end=3,
                                   volume_number=1, superseded=True, text="第一卷：雪原。")

    doc = project.world_docs.get(name="geography")
    story_object_update(obj=doc, editor=owner, base_version=doc.version, content=doc.content + "\n森林以南是魔都。")
    hero = project.characters.get(slug="lin-feng")
    story_object_update(obj=hero, editor=owner, base_version=hero.version, profile=hero.profile + "\n\n左手有旧伤。")
    profile = default_platform_profile("qidian")  # an owner's edit of the profile travels with the tree
    profile["scoring"]["max_revisions"] = 2
    Project.objects.filter(pk=project.pk).update(platform_profile=profile)
    PipelineRun.objects.create(project=project, kind="chapter", chapter=4, status="running", stage="draft",
                               blackboard={"meta": {}, "content": {"staged_files": {"chapters/chapter-004.md": "草稿"}},
                                           "control": {}})
    Project.objects.filter(pk=project.pk).update(
        style_drift={"active": True, "detected_chapter": 3, "window": [1, 3], "injected_to": ["ChapterWriter"],
                     "drifts": [{"metric": "dialogue_ratio", "baseline": 0.4, "current": 0.2,
                                 "directive": "增加对话"}], "created_at": "2026-03-01T10:00:00", "cleared_at": None,
                     "cleared_reason": None},
        storylines_meta={"relationships": [{"from": "main-arc", "to": "side-arc", "type": "entangled",
                                            "bridges": {"shared_characters": ["zhao-ming"]}}],
                         "storyline_types": ["main_arc", "conspiracy"]},
        autopilot_enabled=True, autopilot_chapters_per_night=5, autopilot_cost_cap_usd=Decimal("12.50"),
        gate_settings={"pass_threshold": 4.2, "max_revisions": 3}, stage_models={"draft": "claude-sonnet"},
        last_completed_chapter=3, pipeline_stage="drafting", inflight_chapter=4, revision_count=1,
        pending_actions=[{"type": "spec_propagation", "changed_rule_ids": ["W-001"]}],
        last_checkpoint_time=datetime(2026, 3, 1, 8, 30, tzinfo=dt_timezone.utc),
        checkpoint_extra={"hook_policy_version": 2},
    )
    return Project.objects.get(pk=project.pk)


@pytest.fixture
def owner(make_user):
    return make_user("alice")


@pytest.fixture
def full_project(owner):
    return build_full_project(owner)


def text(value: str) -> str:
    """Markdown as the tree holds it: a file ends in exactly one newline, so a stored text's own
    trailing newlines are not kept (the demo outline has one)."""
    return value.rstrip("\n")


def story_data(project: Project) -> dict[str, Any]:
    """Every story field of a project, model by model, in a comparable form."""
    project = Project.objects.get(pk=project.pk)

    def rows(queryset, *fields):
        return list(queryset.values(*fields))

    settings_fields = ["title", "brief", "genre", "target_platform", "genre_drive_type", "style_profile",
                       "ai_blacklist", "style_drift", "relationships", "storyline_spec", "storylines_meta",
                       "autopilot_enabled", "autopilot_chapters_per_night", "autopilot_cost_cap_usd",
                       "gate_settings", "stage_models", "platform_profile", "genre_weight_profiles",
                       "golden_chapter_gates", "platform_writing_guide", *CHECKPOINT_FIELDS, "checkpoint_extra"]
    volumes = rows(project.volumes.order_by("number"), "number", "title", "status", "outline", "storyline_schedule",
                   "foreshadowing_plan", "new_characters", "review")
    for volume in volumes:  # facts §15.2: stored with the list under both keys every reader looks in
        volume["foreshadowing_plan"] = foreshadowing_plan_for_export(volume["foreshadowing_plan"])
        volume["outline"], volume["review"] = text(volume["outline"]), text(volume["review"])
    return {
        "project": {name: getattr(project, name) for name in settings_fields},
        "research": rows(project.research_notes.order_by("name"), "name", "content"),
        "world_docs": rows(project.world_docs.order_by("name"), "name", "content"),
        "rules": rows(project.world_rules.all(), "position", "rule_id", "category", "rule", "constraint_type",
                      "canon_status", "exceptions", "introduced_chapter", "last_verified", "keywords", "extra"),
        "characters": rows(project.characters.order_by("slug"), "slug", "display_name", "status", "canon_status",
                           "profile", "contracts", "extra"),
        "storylines": rows(project.storylines.all(), "position", "slug", "name", "type", "scope", "pov_characters",
                           "affiliated_factions", "timeline", "status", "description", "introduced_volume",
                           "memory", "extra"),
        "volumes": volumes,
        "contracts": rows(project.chapter_contracts.order_by("chapter"), "chapter", "volume__number", "data"),
        "chapters": rows(project.chapters.order_by("number"), "number", "title", "text", "word_count",
                         "volume__number", "storyline__slug"),
        "summaries": rows(project.chapter_summaries.order_by("chapter__number"), "chapter__number", "text",
                          "storyline_slug"),
        "evaluations": rows(project.evaluations.order_by("chapter__number"), "chapter__number", "data", "overall",
                            "recommendation", "gate_decision", "force_passed", "revisions"),
        "logs": rows(project.chapter_logs.order_by("chapter__number"), "chapter__number", "data",
                     "total_duration_ms", "total_cost_usd", "gate_decision"),
        "state": rows(project.__class__.objects.filter(pk=project.pk), "story_state__data",
                      "story_state__state_version", "story_state__schema_version"),
        "state_changes": rows(project.state_changes.order_by("state_version"), "state_version",
                              "base_state_version", "chapter", "storyline_slug", "delta"),
        "foreshadowing": rows(project.foreshadowing.order_by("fid"), "fid", "description", "scope", "status",
                              "planted_chapter", "planted_storyline", "target_resolve_start", "target_resolve_end",
                              "last_updated_chapter", "extra"),
        "foreshadowing_events": rows(
            project.foreshadowing.order_by("fid", "events__chapter", "events__action").filter(events__isnull=False),
            "fid", "events__chapter", "events__action", "events__detail"),
        "snapshots": rows(project.state_snapshots.order_by("volume_number"), "volume_number", "data"),
        "archives": rows(project.archived_summaries.order_by("chapter_start", "level"), "level", "chapter_start",
                         "chapter_end", "volume_number", "superseded", "text"),
    }


def extra_files_of(project: Project) -> dict[str, str]:
    return dict(project.extra_files.order_by("path").values_list("path", "content"))


# --- export: names, formats, determinism ----------------------------------------------------------------

EXPECTED_FULL_TREE = {
    ".checkpoint.json", "brief.md", "style-profile.json", "ai-blacklist.json", "style-drift.json",
    "platform-profile.json", "novelsite/project.json", "novelsite/archived-summaries.json",
    "genre-weight-profiles.json", "golden-chapter-gates.json", "platform-writing-guide.md",
    "research/星火宗考.md",
    "world/geography.md", "world/history.md", "world/rules.md", "world/rules.json", "world/changelog.md",
    "characters/active/lin-feng.json", "characters/active/lin-feng.md", "characters/active/chen-lao.json",
    "characters/active/chen-lao.md", "characters/active/zhao-ming.json", "characters/active/zhao-ming.md",
    "characters/retired/old-wang.json", "characters/retired/old-wang.md", "characters/relationships.json",
    "characters/changelog.md",
    "storylines/storylines.json", "storylines/storyline-spec.json", "storylines/main-arc/memory.md",
    "storylines/side-arc/memory.md",
    "volumes/vol-01/outline.md", "volumes/vol-01/storyline-schedule.json", "volumes/vol-01/foreshadowing.json",
    "volumes/vol-01/new-characters.json", "volumes/vol-01/review.md",
    "volumes/vol-01/chapter-contracts/chapter-001.json", "volumes/vol-01/chapter-contracts/chapter-002.json",
    "volumes/vol-01/chapter-contracts/chapter-003.json",
    "chapters/chapter-001.md", "chapters/chapter-002.md", "chapters/chapter-003.md",
    "summaries/chapter-001-summary.md", "summaries/chapter-002-summary.md", "summaries/chapter-003-summary.md",
    "evaluations/chapter-001-eval.json", "evaluations/chapter-002-eval.json",
    "logs/chapter-001-log.json", "logs/chapter-002-log.json",
    "state/current-state.json", "state/changelog.jsonl", "state/history/vol-01-final-state.json",
    "foreshadowing/global.json",
    "staging/chapters/chapter-004.md",
}


def test_export_writes_exactly_the_seed_names_and_never_the_lock(full_project):
    ExtraFile.objects.create(project=full_project, path=".novel.lock/info.json", content="{}")  # must never leak
    files = tree_of(full_project)
    assert set(files) == EXPECTED_FULL_TREE
    assert not any(path.startswith(".novel.lock") for path in files)


def test_export_files_are_canonical_utf8_lf_sorted_json(full_project):
    for path, data in tree_of(full_project).items():
        assert not data.startswith(b"\xef\xbb\xbf"), path
        assert b"\r" not in data, path
        assert data == b"" or (data.endswith(b"\n") and not data.endswith(b"\n\n")), path
        data.decode("utf-8")
        if path.endswith(".json"):
            assert data == dump_json(json.loads(data)), f"{path} is not sorted, 2-space indented JSON"
            assert data.startswith((b"{\n  ", b"[\n  ")) or data in (b"[]\n", b"{}\n"), path
        if path.endswith(".jsonl"):
            for line in data.decode().splitlines():  # compact, as the tool appends them
                assert line == dump_json_line(json.loads(line)), path
                assert line.startswith('{"chapter":'), path


def test_export_file_contents_follow_the_seed_formats(full_project):
    files = tree_of(full_project)
    checkpoint = loads(files[".checkpoint.json"])
    assert SEED_CHECKPOINT_KEYS <= set(checkpoint)
    assert checkpoint["orchestrator_state"] == "WRITING" and checkpoint["pipeline_stage"] == "drafting"
    assert checkpoint["inflight_chapter"] == 4 and checkpoint["hook_policy_version"] == 2
    state = loads(files["state/current-state.json"])
    assert state["schema_version"] == 1 and state["state_version"] == 4
    assert state["characters"]["lin-feng"]["inventory"] == ["密信"]
    assert files["chapters/chapter-001.md"].decode().startswith("# 第 1 章 雪原来客\n\n风雪压着山口。")  # the tool's H1
    assert "- storyline_id: main-arc" in files["summaries/chapter-001-summary.md"].decode()
    changelog = [json.loads(line) for line in files["state/changelog.jsonl"].decode().splitlines()]
    assert [d["base_state_version"] for d in changelog] == [0, 1, 2, 3]
    assert changelog[1]["ops"][0] == {"op": "set", "path": "characters.lin-feng.location", "value": "雪原小屋"}
    global_items = loads(files["foreshadowing/global.json"])["foreshadowing"]
    prophecy = next(item for item in global_items if item["id"] == "ancient_prophecy")
    assert prophecy["status"] == "advanced" and prophecy["planted_chapter"] == 1
    assert prophecy["planted_storyline"] == "main-arc" and prophecy["target_resolve_range"] == [10, 20]
    assert prophecy["history"] == [{"chapter": 1, "action": "planted", "detail": "陈老提及预言碎片"},
                                   {"chapter": 3, "action": "advanced", "detail": "林中石碑"}]
    assert prophecy["note"] == "全书主伏笔"
    assert loads(files["evaluations/chapter-002-eval.json"]) == WRAPPED_EVAL
    assert loads(files["characters/retired/old-wang.json"])["display_name"] == "老王"
    assert "左手有旧伤" in files["characters/active/lin-feng.md"].decode()
    lines = loads(files["storylines/storylines.json"])
    assert [line["id"] for line in lines["storylines"]] == ["main-arc", "side-arc"]
    assert lines["relationships"][0]["to"] == "side-arc"
    assert files["staging/chapters/chapter-004.md"] == "草稿\n".encode()
    assert "alice changed world/geography.md (v2)" in files["world/changelog.md"].decode()
    assert "alice changed 林枫 (lin-feng) (v2)" in files["characters/changelog.md"].decode()


def test_export_writes_volume_plan_and_schedule_in_the_shape_every_reader_accepts(full_project):
    files = tree_of(full_project)
    plan = loads(files["volumes/vol-01/foreshadowing.json"])
    assert plan["items"] == plan["foreshadowing"] and plan["items"][0]["id"] == "ancient_prophecy"  # facts §15.2
    assert plan["schema_version"] == 1
    schedule = loads(files["volumes/vol-01/storyline-schedule.json"])
    assert schedule["active_storylines"] == ["main-arc", "side-arc"]  # the CLI validates strings (§15.1)
    assert [role["volume_role"] for role in schedule["storyline_roles"]] == ["primary", "secondary"]
    assert schedule == schedule_for_export(full_project.volumes.get().storyline_schedule)
    copy = import_files(files, slug="copy").project  # and the objects come back on import
    assert copy.volumes.get().storyline_schedule == full_project.volumes.get().storyline_schedule


def test_style_drift_file_is_written_only_while_active(full_project):
    Project.objects.filter(pk=full_project.pk).update(style_drift={"active": False, "cleared_reason": "stale_timeout"})
    files = tree_of(Project.objects.get(pk=full_project.pk))
    assert "style-drift.json" not in files
    assert loads(files["novelsite/project.json"])["inactive_style_drift"]["cleared_reason"] == "stale_timeout"


def test_two_exports_of_unchanged_data_are_byte_identical_even_later(full_project, monkeypatch):
    first_tree, first_zip = tree_of(full_project), zip_bytes_of(full_project)
    later = timezone.now() + timedelta(days=3, hours=5)
    monkeypatch.setattr(timezone, "now", lambda: later)
    project = Project.objects.get(pk=full_project.pk)
    assert tree_of(project) == first_tree
    assert zip_bytes_of(project) == first_zip


def test_zip_export_holds_the_same_files_as_the_directory_export(full_project, tmp_path):
    export_to_directory(full_project, tmp_path / "tree")
    on_disk = {p.relative_to(tmp_path / "tree").as_posix(): p.read_bytes()
               for p in (tmp_path / "tree").rglob("*") if p.is_file()}
    with zipfile.ZipFile(io.BytesIO(zip_bytes_of(full_project))) as archive:
        zipped = {info.filename: archive.read(info) for info in archive.infolist()}
        assert {info.date_time for info in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert on_disk == zipped == tree_of(full_project)


def test_export_into_a_non_empty_directory_is_refused(full_project, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        export_to_directory(full_project, tmp_path)


# --- round trip -----------------------------------------------------------------------------------------


def test_import_of_an_export_reproduces_every_story_field(full_project, owner):
    exported = tree_of(full_project)
    report = import_files(exported, slug="copy", owner=owner)
    copy = report.project
    assert story_data(copy) == story_data(full_project)
    assert report.skipped == [] and report.warnings == []
    # kept: what Novelsite does not model, plus the changelog heads; the platform files are modelled (#17)
    assert report.kept == []  # the staged draft of chapter 4, in flight, is its run's (#20 item 3)
    assert extra_files_of(copy) == {
        **extra_files_of(full_project),
        "world/changelog.md": exported["world/changelog.md"].decode().removesuffix("\n"),
        "characters/changelog.md": exported["characters/changelog.md"].decode().removesuffix("\n"),
    }
    run = PipelineRun.objects.get(project=copy)
    assert (run.chapter, run.stage, run.blackboard["content"]["chapter"]["draft"]) == (4, "summarize", "草稿")
    assert Membership.objects.get(project=copy).user == owner


def test_export_import_export_is_byte_identical_apart_from_the_slug(full_project):
    first = tree_of(full_project)
    second = tree_of(import_files(first, slug="copy").project)
    assert set(second) == set(first)
    differing = [path for path in first if first[path] != second[path]]
    assert differing == ["novelsite/project.json"]
    left, right = loads(first["novelsite/project.json"]), loads(second["novelsite/project.json"])
    assert (left.pop("slug"), right.pop("slug")) == (FULL_SLUG, "copy") and left == right


def test_reimport_under_the_same_slug_gives_the_same_files(full_project, tmp_path):
    export_to_directory(full_project, tmp_path / "t")
    before = tree_of(full_project)
    report = tree_import(read_tree(tmp_path / "t"), replace=True)  # slug from novelsite/project.json
    assert report.project.slug == FULL_SLUG and report.project.pk != full_project.pk
    assert tree_of(report.project) == before


@pytest.mark.parametrize("kind", ["demo", "empty"])
def test_smaller_projects_round_trip_too(kind):
    from tests.factories import ProjectFactory

    project = sample_project_create() if kind == "demo" else ProjectFactory(slug="empty", title="空白")
    first = tree_of(project)
    copy = import_files(first, slug="copy").project
    assert story_data(copy) == story_data(project)
    second = tree_of(copy)
    assert [path for path in first if first[path] != second.get(path)] == ["novelsite/project.json"]
    assert set(second) == set(first)


def test_chapter_storyline_that_differs_from_its_summary_survives(full_project):
    assert loads(tree_of(full_project)["novelsite/project.json"])["chapter_storylines"] == {"3": "side-arc"}
    copy = import_files(tree_of(full_project), slug="copy").project
    assert dict(copy.chapters.values_list("number", "storyline__slug")) == {1: "main-arc", 2: "main-arc",
                                                                            3: "side-arc"}


# --- the novel-writer-cli tree ------------------------------------------------------------------------


def test_cli_tree_imports_with_its_values(owner):
    report = tree_import(read_tree(CLI_TREE), slug="wucheng", owner=owner)
    project = report.project
    assert project.title == "雾城纪事"  # from the brief's 书名 line, not its "# 创作纲领" heading
    # checkpoint without orchestrator_state: committed and idle → WRITING (facts §3); unknown keys kept
    assert project.orchestrator_state == "WRITING" and project.pipeline_stage == "committed"
    assert project.inflight_chapter is None and project.last_completed_chapter == 2
    assert project.checkpoint_extra == {"hook_policy_version": 2}
    assert project.last_checkpoint_time is not None
    assert report.skipped == [".novel.lock/info.json"]
    assert project.target_platform == "qidian"  # platform-profile.json is modelled (#17)
    assert project.platform_profile["scoring"]["max_revisions"] == 2
    assert sorted(report.kept) == sorted([
        "state/chapter-001-crossref.json", "logs/continuity/latest.json",
        "volumes/vol-01/continuity-report.json", "staging/manifests/chapter-002-draft.packet.json"])
    # facts §7.4: a profile with scoring wants genre-weight-profiles.json, which this hand-made tree lacks
    assert report.warnings == ["platform-profile.json has scoring but the tree has no genre-weight-profiles.json; "
                               "Novelsite's built-in weight profiles are used"]
    lines = {line.slug: line for line in project.storylines.all()}
    assert {slug: line.type for slug, line in lines.items()} == {"main-arc": "main_arc",
                                                                  "old-case": "parallel_timeline"}
    assert lines["old-case"].status == "dormant" and lines["old-case"].introduced_volume == 1
    assert lines["main-arc"].memory == "沈砚拿到半封信，陆青答应帮忙。"
    assert project.storylines_meta["relationships"][0]["bridges"]["shared_foreshadowing"] == ["torn_letter"]
    evaluations = {e.chapter.number: e for e in project.evaluations.select_related("chapter")}
    assert (evaluations[1].overall, evaluations[1].recommendation, evaluations[1].gate_decision) == (
        Decimal("4.10"), "pass", "")
    assert (evaluations[2].overall, evaluations[2].recommendation, evaluations[2].gate_decision,
            evaluations[2].revisions, evaluations[2].force_passed) == (Decimal("3.62"), "polish", "pass", 1, False)
    log = project.chapter_logs.get()
    assert log.total_duration_ms == 110000 and log.total_cost_usd is None and log.gate_decision == "pass"
    volume = project.volumes.get()
    assert volume.storyline_schedule["active_storylines"][0]["volume_role"] == "primary"
    assert [item["id"] for item in volume.foreshadowing_plan["items"]] == ["torn_letter", "bell_tower"]
    assert volume.new_characters[0]["name"] == "码头老刘"
    assert project.chapter_contracts.count() == 3
    assert project.ai_blacklist["whitelist"] == {"words": []}
    assert project.style_drift["drifts"][0] == {"metric": "avg_sentence_length", "direction": "up", "delta": 0.24,
                                                "directive": "句子变长了，多用短句"}
    assert project.style_profile["_comment"] == "由 style-analyzer 生成"
    assert project.story_state.state_version == 2
    assert project.story_state.data["characters"]["shen-yan"]["inventory"] == ["半封信"]
    assert list(project.state_changes.values_list("state_version", "chapter")) == [(1, 1), (2, 2)]
    letter = project.foreshadowing.get(fid="torn_letter")
    assert (letter.status, letter.scope, letter.target_resolve_end) == ("advanced", "short", 8)
    assert list(letter.events.values_list("chapter", "action")) == [(1, "planted"), (2, "advanced")]
    chapters = {c.number: c for c in project.chapters.select_related("storyline", "volume")}
    assert chapters[1].title == "雾起" and chapters[1].text.startswith("雾从江面漫上来")
    assert chapters[2].storyline.slug == "main-arc" and chapters[2].volume.number == 1
    assert chapters[1].word_count > 0
    assert project.characters.get(slug="shen-yan").contracts[0]["update_requires"] == "剧情事件"
    assert project.world_rules.get(rule_id="W-002").canon_status == "planned"
    assert project.relationships == {"shen-yan": {"lu-qing": 40}}
    assert ResearchNote.objects.get(project=project).name == "雾港航运"
    assert Membership.objects.get(project=project).role == Role.OWNER


def test_cli_tree_reexports_its_kept_files_verbatim_and_imports_again():
    project = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    files = tree_of(project)
    assert loads(files["platform-profile.json"]) == loads((CLI_TREE / "platform-profile.json").read_bytes())
    for kept in ("state/chapter-001-crossref.json", "logs/continuity/latest.json",
                 "volumes/vol-01/continuity-report.json", "staging/manifests/chapter-002-draft.packet.json",
                 "world/changelog.md", "characters/changelog.md"):
        assert files[kept] == (CLI_TREE / kept).read_bytes(), kept
    assert loads(files[".checkpoint.json"])["hook_policy_version"] == 2
    # unchanged, so written as the tree wrote it: its legacy fields still say WRITING (facts §3)
    assert files[".checkpoint.json"] == (CLI_TREE / ".checkpoint.json").read_bytes()
    assert loads(files["storylines/storylines.json"])["storylines"][0]["type"] == "type:main_arc"  # as it came
    assert loads(files["foreshadowing/global.json"])[0]["id"] == "torn_letter"  # the bare list, as it came
    again = import_files(files, slug="wucheng-2").project
    assert again.orchestrator_state == "WRITING"
    assert again.storylines.get(slug="main-arc").type == "main_arc"
    assert tree_of(again).keys() == files.keys()
    assert story_data(again) == story_data(project)


def test_directory_import_skips_the_lock_and_reports_it():
    source = read_directory(CLI_TREE)
    assert source.skipped == [".novel.lock/info.json"]
    assert not any(path.startswith(".novel.lock/") for path in source.files)


def test_a_zip_wrapping_the_tree_in_one_folder_imports():
    files = {f"wucheng/{path}": data for path, data in cli_files().items()}
    files["wucheng/.novel.lock/info.json"] = b"{}"
    source = read_zip(zip_of(files))
    assert source.name == "wucheng" and source.skipped == [".novel.lock/info.json"]
    assert tree_import(source).project.slug == "wucheng"


def _set_json(files: dict[str, bytes], path: str, change) -> dict[str, bytes]:
    value = loads(files[path])
    files[path] = jbytes(change(value))
    return files


def _schedule(active):
    return lambda value: {**value, "active_storylines": active}


SHAPE_VARIANTS = {
    "schedule-strings": ("volumes/vol-01/storyline-schedule.json", _schedule(["main-arc", "old-case"]),
                         lambda p: p.volumes.get().storyline_schedule["active_storylines"] == ["main-arc", "old-case"]),
    "schedule-objects": ("volumes/vol-01/storyline-schedule.json", lambda v: v,
                         lambda p: p.volumes.get().storyline_schedule["active_storylines"][1]["storyline_id"]
                         == "old-case"),
    "plan-items": ("volumes/vol-01/foreshadowing.json", lambda v: {"schema_version": 1, "items": v["foreshadowing"]},
                   lambda p: [i["id"] for i in p.volumes.get().foreshadowing_plan["foreshadowing"]]
                   == ["torn_letter", "bell_tower"]),
    "plan-foreshadowing": ("volumes/vol-01/foreshadowing.json", lambda v: v,
                           lambda p: [i["id"] for i in p.volumes.get().foreshadowing_plan["items"]]
                           == ["torn_letter", "bell_tower"]),
    "plan-bare-list": ("volumes/vol-01/foreshadowing.json", lambda v: v["foreshadowing"],
                       lambda p: [i["id"] for i in p.volumes.get().foreshadowing_plan["items"]]
                       == ["torn_letter", "bell_tower"]),
    "eval-flat": ("evaluations/chapter-002-eval.json", lambda v: v["eval_used"],
                  lambda p: p.evaluations.get(chapter__number=2).overall == Decimal("3.62")),
    "eval-wrapped-judges-only": ("evaluations/chapter-002-eval.json",
                                 lambda v: {"eval_used": {**v["eval_used"], "overall_final": 3.1},
                                            "metadata": {"gate": {"decision": "revise", "revisions": 2}}},
                                 lambda p: (p.evaluations.get(chapter__number=2).overall,
                                            p.evaluations.get(chapter__number=2).gate_decision)
                                 == (Decimal("3.10"), "revise")),
    "storyline-type-plain": ("storylines/storylines.json",
                             lambda v: {**v, "storylines": [{**s, "type": "main_arc"} for s in v["storylines"]]},
                             lambda p: set(p.storylines.values_list("type", flat=True)) == {"main_arc"}),
    "storyline-type-prefixed": ("storylines/storylines.json", lambda v: v,
                                lambda p: p.storylines.get(slug="main-arc").type == "main_arc"),
    "whitelist-array": ("ai-blacklist.json", lambda v: {**v, "whitelist": ["不禁"]},
                        lambda p: p.ai_blacklist["whitelist"] == ["不禁"]),
    "whitelist-words": ("ai-blacklist.json", lambda v: {**v, "whitelist": {"words": ["不禁"]}},
                        lambda p: p.ai_blacklist["whitelist"] == {"words": ["不禁"]}),
    "drift-baseline-current": ("style-drift.json",
                               lambda v: {**v, "drifts": [{"metric": "dialogue_ratio", "baseline": 0.35,
                                                           "current": 0.2, "directive": "增加对话"}]},
                               lambda p: p.style_drift["drifts"][0]["baseline"] == 0.35),
    "drift-direction-delta": ("style-drift.json", lambda v: v,
                              lambda p: p.style_drift["drifts"][1]["direction"] == "down"),
    "global-foreshadowing-bare-list": ("foreshadowing/global.json", lambda v: v,
                                       lambda p: p.foreshadowing.get().fid == "torn_letter"),
    "global-foreshadowing-wrapped": ("foreshadowing/global.json", lambda v: {"foreshadowing": v},
                                     lambda p: p.foreshadowing.get().events.count() == 2),
}


@pytest.mark.parametrize("path, change, check", SHAPE_VARIANTS.values(), ids=SHAPE_VARIANTS.keys())
def test_import_accepts_every_documented_shape_variant(path, change, check):
    project = import_files(_set_json(cli_files(), path, change)).project
    assert check(project)


LEGACY_CHECKPOINTS = {  # facts §3: orchestrator_state inferred when absent
    "idle-committed": ({"pipeline_stage": "committed", "inflight_chapter": None}, "WRITING"),
    "idle-null": ({"pipeline_stage": None, "inflight_chapter": None}, "WRITING"),
    "idle-but-inflight": ({"pipeline_stage": "committed", "inflight_chapter": 3}, "ERROR_RETRY"),
    "in-flight-without-chapter": ({"pipeline_stage": "drafted", "inflight_chapter": None}, "ERROR_RETRY"),
    "revising": ({"pipeline_stage": "revising", "inflight_chapter": 3}, "CHAPTER_REWRITE"),
    "drafting": ({"pipeline_stage": "drafting", "inflight_chapter": 3}, "WRITING"),
    "explicit-state-wins": ({"orchestrator_state": "VOL_REVIEW", "pipeline_stage": "committed"}, "VOL_REVIEW"),
}


@pytest.mark.parametrize("fields, expected", LEGACY_CHECKPOINTS.values(), ids=LEGACY_CHECKPOINTS.keys())
def test_checkpoint_state_is_inferred_from_legacy_fields(fields, expected):
    files = _set_json(cli_files(), ".checkpoint.json", lambda v: {**v, **fields})
    assert import_files(files).project.orchestrator_state == expected


def test_a_tree_without_checkpoint_is_init():
    files = cli_files()
    del files[".checkpoint.json"]
    project = import_files(files).project
    assert project.orchestrator_state == "INIT" and project.last_completed_chapter == 0
    assert loads(tree_of(project)[".checkpoint.json"])["orchestrator_state"] == "INIT"


def test_a_tree_with_only_a_changelog_gets_the_replayed_state():
    files = cli_files()
    del files["state/current-state.json"]
    project = import_files(files).project
    assert project.story_state.state_version == 2
    assert project.story_state.data == loads(cli_files()["state/current-state.json"])


def test_current_state_that_disagrees_with_the_changelog_is_kept_with_a_warning():
    files = _set_json(cli_files(), "state/current-state.json",
                      lambda v: {**v, "world_state": {"time_marker": "立冬"}})
    report = import_files(files)
    assert report.project.story_state.data["world_state"] == {"time_marker": "立冬"}
    assert any("differs from the state replayed" in warning for warning in report.warnings)


# --- all or nothing -----------------------------------------------------------------------------------


def test_a_failure_while_writing_leaves_the_database_as_it_was(monkeypatch):
    before = snapshot_db_counts()
    assert {"projects.Project", "projects.Chapter", "projects.StateChange", "projects.ExtraFile",
            "projects.HistoricalChapter", "projects.HistoricalCharacter"} <= set(before)

    def explode(project, tree):
        raise TreeError("foreshadowing/global.json", "simulated failure after most rows were written")

    monkeypatch.setattr(importer_module, "_foreshadowing", explode)
    with pytest.raises(TreeError):
        import_files(cli_files())
    assert_nothing_imported(before)


def test_a_failing_replace_keeps_the_old_project_intact(monkeypatch):
    old = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    old_files, old_data = tree_of(old), story_data(old)
    before = snapshot_db_counts()
    broken = _set_json(cli_files(), ".checkpoint.json", lambda v: {**v, "orchestrator_state": "DANCING"})
    with pytest.raises(TreeError, match=r"^\.checkpoint\.json: "):
        import_files(broken, slug="wucheng", replace=True)
    # a failure after the old project was deleted inside the transaction rolls the deletion back too
    monkeypatch.setattr(importer_module, "_state", lambda project, tree: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        import_files(cli_files(), slug="wucheng", replace=True)
    assert snapshot_db_counts() == before
    survivor = Project.objects.get(slug="wucheng")
    assert survivor.pk == old.pk and tree_of(survivor) == old_files and story_data(survivor) == old_data


def test_duplicate_slug_without_replace_is_refused():
    tree_import(read_tree(CLI_TREE), slug="wucheng")
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_tree(CLI_TREE), slug="wucheng")
    assert caught.value.path == "wucheng" and caught.value.reason == slug_not_available_message()
    assert snapshot_db_counts() == before


def test_replace_swaps_the_project_for_the_tree(full_project):
    files = cli_files()
    report = import_files(files, slug=FULL_SLUG, replace=True)
    assert report.project.pk != full_project.pk
    assert not Project.objects.filter(pk=full_project.pk).exists()
    assert Project.objects.get(slug=FULL_SLUG).title == "雾城纪事"
    assert not PipelineRun.objects.filter(project_id=full_project.pk).exists()


# --- hostile and broken input ---------------------------------------------------------------------------


def _files_with(**changes: bytes | str | None):
    """The CLI tree with files added, replaced (bytes/str) or removed (None); keys use "__" for "/"."""
    def build() -> dict[str, bytes | str]:
        files: dict[str, bytes | str] = dict(cli_files())
        for key, value in changes.items():
            path = key.replace("__", "/")
            if value is None:
                files.pop(path)
            else:
                files[path] = value
        return files
    return build


def _entries(extra: dict[str, bytes | str]):
    def build() -> dict[str, bytes | str]:
        return {**cli_files(), **extra}
    return build


def _json_change(path: str, change):
    return lambda: _set_json(cli_files(), path, change)


def _changelog(*deltas: dict) -> bytes:
    return "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in deltas).encode()


_DELTA_1 = {"chapter": 1, "base_state_version": 0, "storyline_id": "main-arc",
            "ops": [{"op": "set", "path": "characters.shen-yan.location", "value": "雾城码头"}]}
_BIG = Limits(max_file_bytes=10**6, max_tree_bytes=10**8, max_files=10_000)

# id: (files builder, limits, expected path, expected reason fragment)
HOSTILE_ZIPS = {
    "zip-slip-dotdot": (_entries({"../evil.md": "x"}), None, "../evil.md", "forbidden path segment '..'"),
    "zip-slip-nested": (_entries({"chapters/../../etc/cron.d/x": "x"}), None, "chapters/../../etc/cron.d/x",
                        "forbidden path segment '..'"),
    "absolute-path": (_entries({"/etc/passwd": "root"}), None, "/etc/passwd", "absolute"),
    "windows-drive-path": (_entries({"C:/boot.ini": "x"}), None, "C:/boot.ini", "absolute"),
    "backslash-path": (_entries({"chapters\\chapter-009.md": "x"}), None, "chapters\\chapter-009.md", "backslash"),
    "forbidden-segment": (_entries({"research/__proto__/x.md": "x"}), None, "research/__proto__/x.md",
                          "forbidden path segment '__proto__'"),
    "dot-segment": (_entries({"world/./geography.md": "x"}), None, "world/./geography.md", "forbidden path segment"),
    "file-over-size-limit": (_files_with(**{"chapters__chapter-003.md": "# 钟声\n\n" + "字" * 2000}),
                             Limits(max_file_bytes=5000, max_tree_bytes=10**8, max_files=1000),
                             "chapters/chapter-003.md", "the limit is 5000"),
    "tree-over-total-limit": (_files_with(), Limits(max_file_bytes=10**6, max_tree_bytes=4000, max_files=1000),
                              None, "larger than the limit of 4000 bytes"),
    "too-many-files": (_files_with(), Limits(max_file_bytes=10**6, max_tree_bytes=10**8, max_files=10),
                       "(archive)", "the limit is 10"),
    "gbk-chapter": (_files_with(**{"chapters__chapter-002.md": "# 半封信\n\n陆青把信推过桌面。".encode("gbk")}),
                    None, "chapters/chapter-002.md", "not UTF-8"),
    "nul-in-text": (_files_with(**{"world__history.md": "二十年前\x00大火"}), None, "world/history.md", "NUL"),
    "invalid-json": (_files_with(**{"style-profile.json": b'{"avg_sentence_length": 16,'}), None,
                     "style-profile.json", "invalid JSON"),
    "nan-in-json": (_files_with(**{"platform-profile.json": b'{"score": NaN}'}), None, "platform-profile.json",
                    "invalid JSON"),
    "deeply-nested-json": (_files_with(**{"state__chapter-001-crossref.json": "[" * 100 + "]" * 100}), None,
                           "state/chapter-001-crossref.json", "nested deeper than 64"),
    "contract-objective-type": (_json_change("volumes/vol-01/chapter-contracts/chapter-001.json",
                                             lambda v: {**v, "objectives": [{**v["objectives"][0], "type": "magic"}]}),
                                None, "volumes/vol-01/chapter-contracts/chapter-001.json", "'magic' is not one of"),
    "contract-chapter-mismatch": (_json_change("volumes/vol-01/chapter-contracts/chapter-002.json",
                                               lambda v: {**v, "chapter": 7}),
                                  None, "volumes/vol-01/chapter-contracts/chapter-002.json", "chapter 2"),
    "duplicate-chapter-number": (_entries({"chapters/chapter-0001.md": "# 又一个第一章\n\n正文"}), None,
                                 None, "chapter 1 appears twice"),
    "chapter-name-unpadded": (_entries({"chapters/chapter-1.md": "正文"}), None, "chapters/chapter-1.md",
                              "malformed file name"),
    "chapter-name-free": (_entries({"chapters/intro.md": "楔子"}), None, "chapters/intro.md", "malformed file name"),
    "empty-chapter": (_files_with(**{"chapters__chapter-002.md": "# 半封信\n\n"}), None, "chapters/chapter-002.md",
                      "no text"),
    "checkpoint-state-unknown": (_json_change(".checkpoint.json", lambda v: {**v, "orchestrator_state": "DANCING"}),
                                 None, ".checkpoint.json", "'DANCING' is not one of"),
    "checkpoint-missing-required": (_json_change(".checkpoint.json",
                                                 lambda v: {k: x for k, x in v.items() if k != "current_volume"}),
                                    None, ".checkpoint.json", "'current_volume' is a required property"),
    "storyline-scope-unknown": (_json_change("storylines/storylines.json", lambda v: {
        **v, "storylines": [{**v["storylines"][0], "scope": "galaxy"}, *v["storylines"][1:]]}),
        None, "storylines/storylines.json", "'galaxy' is not one of"),
    "foreshadow-status-unknown": (_json_change("foreshadowing/global.json",
                                               lambda v: [{**v[0], "status": "forgotten"}]),
                                  None, "foreshadowing/global.json", "'forgotten' is not one of"),
    "changelog-proto-segment": (_files_with(**{"state__changelog.jsonl": _changelog(_DELTA_1, {
        "chapter": 2, "base_state_version": 1, "storyline_id": "main-arc",
        "ops": [{"op": "set", "path": "characters.__proto__.polluted", "value": True}]})}),
        None, "state/changelog.jsonl:2", 'forbidden path segment "__proto__"'),
    "changelog-stale-base": (_files_with(**{"state__changelog.jsonl": _changelog(
        _DELTA_1, {**_DELTA_1, "chapter": 2, "base_state_version": 5})}),
        None, "state/changelog.jsonl:2", "base_state_version 5 does not match state_version 1"),
    "changelog-bad-line": (_files_with(**{"state__changelog.jsonl": b'{"chapter": 1,\n'}), None,
                           "state/changelog.jsonl:1", "invalid JSON"),
    "state-older-than-changelog": (_json_change("state/current-state.json", lambda v: {**v, "state_version": 1}),
                                   None, "state/current-state.json", "older than the 2 deltas"),
    "summary-without-chapter": (_entries({"summaries/chapter-009-summary.md": "## 第 9 章摘要"}), None,
                                "summaries/chapter-009-summary.md", "chapters/chapter-009.md is missing"),
    "evaluation-without-chapter": (_entries({"evaluations/chapter-009-eval.json": jbytes(FLAT_EVAL)}), None,
                                   "evaluations/chapter-009-eval.json", "chapters/chapter-009.md is missing"),
    "character-md-without-json": (_entries({"characters/active/ghost.md": "# 鬼\n"}), None,
                                  "characters/active/ghost.md", "ghost.json is missing"),
    "character-not-a-slug": (_entries({"characters/active/张三.json": jbytes({"display_name": "张三",
                                                                           "contracts": []})}),
                             None, "characters/active/张三.json", "not a slug id"),
    "memory-of-unknown-storyline": (_entries({"storylines/ghost-line/memory.md": "无"}), None,
                                    "storylines/ghost-line/memory.md", "storylines.json lacks"),
    "duplicate-entry-in-zip": (None, None, "brief.md", "holds this path twice"),
    "archive-range-reversed": (_entries({"novelsite/archived-summaries.json": jbytes({"archived_summaries": [
        {"level": "archive", "chapter_start": 5, "chapter_end": 1, "text": "倒置"}]})}),
        None, "novelsite/archived-summaries.json", "chapter_end"),
    "eval-gate-revisions-not-a-number": (_json_change("evaluations/chapter-002-eval.json", lambda v: {
        **v, "metadata": {"gate": {"decision": "pass", "revisions": "twice"}}}),
        None, "evaluations/chapter-002-eval.json", "unreadable score, gate or cost fields"),
    "eval-gate-not-an-object": (_json_change("evaluations/chapter-001-eval.json", lambda v: {**v, "gate": "pass"}),
                                None, "evaluations/chapter-001-eval.json", "unreadable score, gate or cost fields"),
    "eval-gate-revisions-negative": (_json_change("evaluations/chapter-002-eval.json", lambda v: {
        **v, "metadata": {"gate": {"decision": "pass", "revisions": -1}}}),
        None, "evaluations/chapter-002-eval.json", "revisions -1 is outside 0..32767"),
    "eval-overall-final-out-of-range": (_json_change("evaluations/chapter-002-eval.json",
                                                     lambda v: {**v, "overall_final": 4200}),
                                        None, "evaluations/chapter-002-eval.json", "overall 4200 is outside 0..5"),
    "chapter-number-overflow": (_entries({"chapters/chapter-99999999999999999999.md": "正文"}), None,
                                "chapters/chapter-99999999999999999999.md", "out of range"),
    "checkpoint-time-impossible": (_json_change(".checkpoint.json",
                                                lambda v: {**v, "last_checkpoint_time": "2026-13-45T10:00:00"}),
                                   None, ".checkpoint.json", "month must be in 1..12"),
    "checkpoint-time-not-a-date": (_json_change(".checkpoint.json", lambda v: {**v, "last_checkpoint_time": "昨天"}),
                                   None, ".checkpoint.json", "not an ISO 8601 date-time"),
    "checkpoint-number-overflow": (_json_change(".checkpoint.json", lambda v: {**v, "last_completed_chapter": 2**70}),
                                   None, "(database)", "does not fit the database"),
    "log-cost-out-of-range": (_json_change("logs/chapter-001-log.json", lambda v: {**v, "total_cost_usd": 1e300}),
                              None, "logs/chapter-001-log.json", "total_cost_usd"),
}


def _duplicate_entry_zip() -> io.BytesIO:
    buffer = io.BytesIO()
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(buffer, "w") as archive:
        for path, data in cli_files().items():
            archive.writestr(path, data)
        archive.writestr("brief.md", "# 第二份纲领")
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize("build, limits, path, reason", HOSTILE_ZIPS.values(), ids=HOSTILE_ZIPS.keys())
def test_hostile_or_broken_zip_is_refused_naming_the_file(build, limits, path, reason):
    archive = _duplicate_entry_zip() if build is None else zip_of(build())
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_zip(archive, limits), slug="imported")
    error = caught.value
    assert reason in error.reason, error.message
    if path is not None:
        assert error.path == path
    assert str(error) == f"{error.path}: {error.reason}" and error.path
    assert_nothing_imported(before)


def test_symlink_entry_in_a_zip_is_refused():
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_zip(zip_of(cli_files(), symlinks={"world/secrets.md": "/etc/shadow"})))
    assert (caught.value.path, caught.value.reason) == ("world/secrets.md", "symbolic links are not allowed")
    assert_nothing_imported(before)


@pytest.mark.parametrize("link_name", ["world/secrets.md", "research"], ids=["file-link", "directory-link"])
def test_symlink_in_a_directory_tree_is_refused(tmp_path, link_name):
    root = write_tree(tmp_path / "tree", cli_files())
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.md").write_text("机密")
    if link_name == "research":
        shutil.rmtree(root / "research")
        os.symlink(tmp_path / "outside", root / "research")
    else:
        os.symlink(tmp_path / "outside" / "secret.md", root / link_name)
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_tree(root), slug="imported")
    assert (caught.value.path, caught.value.reason) == (link_name, "symbolic links are not allowed")
    assert_nothing_imported(before)


def test_zip_bomb_with_an_honest_size_is_refused_before_inflating():
    bomb = zip_of({**cli_files(), "logs/bomb.json": b" " * 3_000_000})
    assert len(bomb.getvalue()) < 100_000
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_zip(bomb, _BIG))
    assert caught.value.path == "logs/bomb.json" and "3000000 bytes; the limit is 1000000" in caught.value.reason
    assert_nothing_imported(before)


def test_zip_bomb_that_lies_about_its_size_is_refused():
    honest = zip_of({**cli_files(), "logs/bomb.json": b" " * 3_000_000}).getvalue()
    lying = io.BytesIO(with_lying_size(honest, "logs/bomb.json", 100))
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_zip(lying, _BIG))
    assert caught.value.path == "logs/bomb.json"
    assert re.search(r"cannot be read from the zip|unpacks to more than", caught.value.reason)
    assert_nothing_imported(before)


def test_per_file_limit_comes_from_settings(settings):
    settings.NOVELSITE_IMPORT_MAX_FILE_BYTES = 500
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_zip(zip_of(cli_files())))
    assert "the limit is 500" in caught.value.reason
    assert_nothing_imported(before)


def test_directory_with_too_many_files_is_refused(tmp_path):
    root = write_tree(tmp_path / "tree", cli_files())
    with pytest.raises(TreeError) as caught:
        read_tree(root, Limits(max_file_bytes=10**6, max_tree_bytes=10**8, max_files=5))
    assert "too many files: the limit is 5" in caught.value.reason
    assert (root / caught.value.path).is_file()


def test_not_a_zip_at_all_is_refused():
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        tree_import(read_zip(io.BytesIO(b"%PDF-1.7 definitely not a zip")))
    assert caught.value.path == "(archive)" and "not a readable zip file" in caught.value.reason
    assert_nothing_imported(before)


def test_a_location_that_does_not_exist_is_refused(tmp_path):
    with pytest.raises(TreeError, match="no such directory or zip file"):
        read_tree(tmp_path / "missing")


# --- API ------------------------------------------------------------------------------------------------


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _upload(client: APIClient, data: bytes, **fields: Any):
    payload = {"file": SimpleUploadedFile("novel.zip", data, content_type="application/zip"), **fields}
    return client.post("/api/projects/import", payload, format="multipart")


@pytest.mark.parametrize("role", ["owner", "viewer"])
def test_members_download_a_streamed_zip(full_project, owner, make_user, role):
    user = owner if role == "owner" else make_user("vera")
    if role == "viewer":
        Membership.objects.create(project=full_project, user=user, role=Role.VIEWER)
    response = _client(user).get(f"/api/projects/{FULL_SLUG}/export.zip")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="{FULL_SLUG}.zip"'
    body = b"".join(response.streaming_content)
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        assert ".checkpoint.json" in archive.namelist()
    assert body == zip_bytes_of(full_project)


def test_non_member_gets_404_for_the_download(full_project, make_user):
    response = _client(make_user("mallory")).get(f"/api/projects/{FULL_SLUG}/export.zip")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_uploading_an_export_creates_a_project_owned_by_the_uploader(full_project, make_user):
    bob = make_user("bob")
    response = _upload(_client(bob), zip_bytes_of(full_project), slug="bobs-copy")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["slug"] == "bobs-copy" and body["title"] == "星火长夜"
    assert body["files"] == len(EXPECTED_FULL_TREE)
    assert body["kept"] == []  # the staged draft of the chapter in flight is its run's (#20 item 3)
    copy = Project.objects.get(slug="bobs-copy")
    assert Membership.objects.get(project=copy).user == bob and Membership.objects.get(project=copy).role == "owner"
    assert story_data(copy) == story_data(full_project)


def test_hostile_upload_gets_400_naming_the_file_and_creates_nothing(make_user):
    before = snapshot_db_counts()
    data = zip_of({**cli_files(), "../../etc/passwd": "root:x:0:0"}).getvalue()
    response = _upload(_client(make_user("mallory")), data, slug="evil")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_tree" and "../../etc/passwd" in body["message"]
    assert body["extra"]["path"] == "../../etc/passwd"
    assert_nothing_imported(before, slug="evil")


def test_upload_that_is_not_a_zip_gets_400(make_user):
    response = _upload(_client(make_user("bob")), b"plain text")
    assert response.status_code == 400 and response.json()["extra"]["path"] == "(archive)"


def test_upload_over_the_settings_limit_gets_400(make_user, settings):
    data = zip_of(cli_files()).getvalue()
    settings.NOVELSITE_IMPORT_MAX_FILES = 3
    response = _upload(_client(make_user("bob")), data, slug="big")
    assert response.status_code == 400 and "the limit is 3" in response.json()["message"]
    assert not Project.objects.filter(slug="big").exists()


@pytest.mark.parametrize("explicit_slug", [True, False], ids=["slug-given", "slug-from-tree"])
def test_replacing_someone_elses_project_is_refused(full_project, make_user, explicit_slug):
    """Refused with the words a reserved slug gets (#15 item 8): not a 404 that says it exists."""
    before_files = tree_of(full_project)
    fields = {"replace": "true", **({"slug": FULL_SLUG} if explicit_slug else {})}
    mallory = _client(make_user("mallory"))
    response = _upload(mallory, zip_bytes_of(full_project), **fields)
    reserved = _upload(mallory, zip_of(cli_files()).getvalue(), slug="import")
    assert response.status_code == reserved.status_code == 400
    assert response.json()["code"] == reserved.json()["code"] == "invalid_tree"
    assert response.json()["extra"]["reason"] == reserved.json()["extra"]["reason"]
    assert "exist" not in response.json()["message"]
    survivor = Project.objects.get(slug=FULL_SLUG)
    assert survivor.pk == full_project.pk and tree_of(survivor) == before_files


@pytest.mark.parametrize("replace", ["false", "true"])
def test_a_stranger_importing_onto_a_taken_slug_hears_what_a_reserved_slug_hears(full_project, make_user, replace):
    mallory = _client(make_user("mallory"))
    taken = _upload(mallory, zip_of(cli_files()).getvalue(), slug=FULL_SLUG, replace=replace)
    reserved = _upload(mallory, zip_of(cli_files()).getvalue(), slug="import", replace=replace)
    assert taken.status_code == reserved.status_code == 400
    assert taken.json()["extra"]["reason"] == reserved.json()["extra"]["reason"]
    web = Client()
    web.force_login(make_user("mona"))
    page = web.post("/import/", {"archive": SimpleUploadedFile("n.zip", zip_of(cli_files()).getvalue()),
                                 "slug": FULL_SLUG})
    assert page.status_code == 200 and taken.json()["extra"]["reason"] in page.content.decode()
    assert Project.objects.get(slug=FULL_SLUG).pk == full_project.pk


def test_a_viewer_cannot_replace_the_project(full_project, make_user):
    vera = make_user("vera")
    Membership.objects.create(project=full_project, user=vera, role=Role.VIEWER)
    response = _upload(_client(vera), zip_bytes_of(full_project), slug=FULL_SLUG, replace="true")
    assert response.status_code == 403
    assert Project.objects.get(slug=FULL_SLUG).pk == full_project.pk


def test_owner_replaces_their_own_project(full_project, owner):
    client = APIClient()
    client.force_login(owner)  # session login this time
    response = _upload(client, zip_of(cli_files()).getvalue(), slug=FULL_SLUG, replace="true")
    assert response.status_code == 201, response.json()
    replaced = Project.objects.get(slug=FULL_SLUG)
    assert replaced.pk != full_project.pk and replaced.title == "雾城纪事"
    assert Membership.objects.get(project=replaced).user == owner


def test_upload_onto_an_existing_slug_without_replace_is_400(full_project, owner):
    response = _upload(_client(owner), zip_of(cli_files()).getvalue(), slug=FULL_SLUG)
    assert response.status_code == 400 and response.json()["extra"]["path"] == FULL_SLUG
    assert Project.objects.get(slug=FULL_SLUG).pk == full_project.pk


# --- the novel command ----------------------------------------------------------------------------------


def test_novel_export_and_import_through_a_directory(full_project, owner, tmp_path):
    out = io.StringIO()
    call_command("novel", "export", FULL_SLUG, str(tmp_path / "t"), stdout=out)
    assert "Exported full" in out.getvalue()
    assert (tmp_path / "t" / ".checkpoint.json").is_file()
    out = io.StringIO()
    call_command("novel", "import", str(tmp_path / "t"), "--project", "copy", "--owner", owner.username, stdout=out)
    assert "as project copy" in out.getvalue() and "kept as is (not modelled)" not in out.getvalue()
    copy = Project.objects.get(slug="copy")
    assert Membership.objects.get(project=copy).user == owner
    assert story_data(copy) == story_data(full_project)


def test_novel_export_and_import_through_a_zip_with_json(full_project, tmp_path):
    out = io.StringIO()
    call_command("novel", "--json", "export", FULL_SLUG, str(tmp_path / "t.zip"), stdout=out)
    assert json.loads(out.getvalue()) == {"ok": True, "command": "export",
                                          "data": {"project": FULL_SLUG, "target": str(tmp_path / "t.zip")}}
    assert (tmp_path / "t.zip").read_bytes() == zip_bytes_of(full_project)
    out = io.StringIO()
    call_command("novel", "--json", "import", str(tmp_path / "t.zip"), "--project", "zipped", stdout=out)
    envelope = json.loads(out.getvalue())
    assert envelope["ok"] is True and envelope["data"]["project"] == "zipped"
    assert envelope["data"]["kept"] == []


def test_novel_import_of_the_cli_tree_reports_skipped_lock():
    out = io.StringIO()
    call_command("novel", "import", str(CLI_TREE), "--project", "wucheng", stdout=out)
    assert "skipped: .novel.lock/info.json" in out.getvalue()


NOVEL_ERRORS = {
    "import-missing-location": (["import", "/nonexistent/tree"], "no such directory or zip file"),
    "import-hostile-zip": (["import", "{hostile}"], "../evil.md"),
    "import-existing-slug": (["import", str(CLI_TREE), "--project", FULL_SLUG], "exists"),
    "import-unknown-owner": (["import", str(CLI_TREE), "--owner", "nobody"], "No user 'nobody'"),
    "export-unknown-project": (["export", "no-such-project", "{tmp}/x"], "No project with slug"),
    "export-into-non-empty-dir": (["export", FULL_SLUG, "{tmp}"], "is not empty"),
}


def _novel_args(args: list[str], tmp_path: Path) -> list[str]:
    hostile = tmp_path / "hostile.zip"
    if not hostile.exists():
        hostile.write_bytes(zip_of({**cli_files(), "../evil.md": "x"}).getvalue())
    (tmp_path / "occupied.txt").write_text("x")
    return [arg.replace("{hostile}", str(hostile)).replace("{tmp}", str(tmp_path)) for arg in args]


@pytest.mark.parametrize("args, message", NOVEL_ERRORS.values(), ids=NOVEL_ERRORS.keys())
def test_novel_errors_exit_with_code_2(full_project, tmp_path, args, message):
    before = snapshot_db_counts()
    with pytest.raises(CommandError) as caught:
        call_command("novel", *_novel_args(args, tmp_path), stdout=io.StringIO())
    assert caught.value.returncode == 2 and message in str(caught.value)
    assert snapshot_db_counts() == before


@pytest.mark.parametrize("args, message", NOVEL_ERRORS.values(), ids=NOVEL_ERRORS.keys())
def test_novel_errors_with_json_print_the_envelope_and_exit_2(full_project, tmp_path, args, message):
    out = io.StringIO()
    with pytest.raises(SystemExit) as caught:
        call_command("novel", "--json", *_novel_args(args, tmp_path), stdout=out)
    assert caught.value.code == 2
    envelope = json.loads(out.getvalue())
    assert envelope["ok"] is False and envelope["command"] == args[0]
    assert message in envelope["error"]["message"] and envelope["error"]["code"]


@pytest.mark.parametrize("path", ["../escape.md", "/tmp/escape.md", "logs/../../escape.md"])
def test_export_refuses_an_extra_file_path_that_leaves_the_tree(full_project, tmp_path, path):
    ExtraFile.objects.create(project=full_project, path=path, content="逃逸")  # e.g. typed into the admin
    with pytest.raises(TreeError) as caught:
        export_to_directory(full_project, tmp_path / "out" / "tree")
    assert caught.value.path == path
    assert not (tmp_path / "out" / "escape.md").exists() and not (tmp_path / "escape.md").exists()


# --- added after review: brief counted in 字, one spelling per volume, chapter volumes kept --------


def _minimal_tree(tmp_path, files):
    from projects.filetree.source import read_directory

    for path, text in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return read_directory(tmp_path)


@pytest.mark.django_db
def test_brief_limit_counts_characters_not_whitespace(tmp_path):
    from projects.filetree.importer import tree_import

    brief = "# 创作纲领\n\n" + "\n".join("- 项： " + "字 " * 15 for _ in range(32))  # > 1000 chars, < 1000 字
    assert len(brief) > 1000
    report = tree_import(_minimal_tree(tmp_path, {"brief.md": brief}), slug="long-brief")
    assert report.project.brief == brief


@pytest.mark.django_db
@pytest.mark.parametrize("second", ["volumes/vol-001/outline.md", "volumes/vol-001/chapter-contracts/chapter-001.json"])
def test_one_volume_spelled_twice_is_refused(tmp_path, second):
    from projects.filetree.errors import TreeError
    from projects.filetree.importer import tree_import

    contract = json.dumps({"chapter": 1, "storyline_id": "main-arc", "objectives": [
        {"id": "OBJ-1-1", "type": "plot", "required": True, "description": "开场"}]})
    files = {"volumes/vol-01/outline.md": "## 第 1 卷大纲", second: contract if second.endswith(".json") else "x"}
    with pytest.raises(TreeError, match="both vol-0?01 and vol-0?01"):
        tree_import(_minimal_tree(tmp_path, files), slug="twice")
    assert not Project.objects.filter(slug="twice").exists()


@pytest.mark.django_db
def test_chapter_volume_survives_a_round_trip_without_contract(tmp_path, sample_project):
    from projects.filetree.export import export_to_directory
    from projects.filetree.importer import tree_import
    from projects.filetree.source import read_directory

    from projects.models import Chapter, Volume

    volume2 = Volume.objects.create(project=sample_project, number=2)
    Chapter.objects.create(project=sample_project, volume=volume2, number=5, text="第二卷提前开场。")
    export_to_directory(sample_project, tmp_path / "tree")
    copy = tree_import(read_directory(tmp_path / "tree"), slug="vol-copy").project
    assert copy.chapters.get(number=5).volume.number == 2


@pytest.mark.django_db
def test_an_in_flight_chapter_run_exports_its_staging_files(sample_project):
    from projects.filetree.export import tree_files

    content = {"chapter": {"title": "入林", "draft": "林枫走进森林。"},
               "summary": {"text": "## 第 1 章摘要", "delta": {"chapter": 1, "base_state_version": 1,
                                                              "storyline_id": "main-arc", "ops": []},
                           "crossref": {}, "memory": "林枫在林中。"},
               "evaluation": {"data": {"overall": 4.2, "recommendation": "pass"}}}
    PipelineRun.objects.create(project=sample_project, kind="chapter", chapter=1, status="running", stage="judge",
                               blackboard={"meta": {}, "content": content, "control": {}})
    files = dict(tree_files(sample_project))
    assert files["staging/chapters/chapter-001.md"].decode().startswith("# 第 1 章 入林\n\n林枫走进森林。")
    for path in ("staging/summaries/chapter-001-summary.md", "staging/state/chapter-001-delta.json",
                 "staging/state/chapter-001-crossref.json", "staging/storylines/main-arc/memory.md",
                 "staging/evaluations/chapter-001-eval.json"):
        assert path in files
