"""The four platform files in the tree (issue #17 §1, facts §2): they round-trip through export and
import, a tree made by ``novel init --platform qidian`` imports with its profile active, and a
malformed platform file is refused naming the file, with nothing written."""
from __future__ import annotations

import json

import pytest

from projects.filetree.errors import TreeError
from projects.filetree.export import tree_files
from projects.models import Project
from projects.platforms.limits import golden_gates_for, platform_limits, scoring_weights
from projects.platforms.profiles import default_genre_weight_profiles, default_golden_chapter_gates
from projects.services.platforms import project_platform_update
from projects.services.projects import project_create
from tests.test_filetree import assert_nothing_imported, import_files, loads, snapshot_db_counts

pytestmark = pytest.mark.django_db

PLATFORM_FILES = ("platform-profile.json", "genre-weight-profiles.json", "golden-chapter-gates.json",
                  "platform-writing-guide.md")


def _dump(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode() + b"\n"


def init_qidian_tree(*, platform: str = "qidian") -> dict[str, bytes]:
    """What ``novel init --platform qidian`` leaves (facts §2, §3): a default checkpoint, the brief
    template, and the four platform files in the tool's shapes (its own ``$schema`` and comment keys
    included), with no chapters yet."""
    checkpoint = {"last_completed_chapter": 0, "current_volume": 1, "orchestrator_state": "INIT",
                  "pipeline_stage": None, "volume_pipeline_stage": None, "quickstart_phase": None,
                  "inflight_chapter": None, "revision_count": 0, "hook_fix_count": 0, "title_fix_count": 0,
                  "last_committed_volume": 0, "pending_actions": [], "last_checkpoint_time": "2026-11-20T08:00:00Z"}
    profile = {
        "$schema": "schemas/platform-profile.schema.json", "schema_version": 1, "platform": platform,
        "created_at": "2026-11-20T08:00:00.000Z", "_comment_created_at": "set by init",
        "word_count": {"target_min": 2800, "target_max": 3600, "hard_min": 2000, "hard_max": 4800},
        "hook_policy": {"required": True, "min_strength": 3, "fix_strategy": "hook-fix",
                        "allowed_types": ["question", "threat_reveal", "twist_reveal"]},
        "info_load": {"max_new_entities_per_chapter": 5, "max_unknown_entities_per_chapter": 3,
                      "max_new_terms_per_1k_words": 5},
        "compliance": {"banned_words": ["某违禁词"], "duplicate_name_policy": "soft",
                       "script_paths": {"lint_blacklist": "scripts/lint-blacklist.sh"}},
        "scoring": {"genre_drive_type": "suspense", "weight_profile_id": "suspense:v1"},
        "retention": {"title_policy": {"enabled": True, "min_chars": 2, "max_chars": 30, "auto_fix": False,
                                       "forbidden_patterns": ["^\\s*$"]},
                      "hook_ledger": {"enabled": True, "fulfillment_window_chapters": 12,
                                      "diversity_window_chapters": 5, "max_same_type_streak": 2,
                                      "min_distinct_types_in_window": 2, "overdue_policy": "warn"}},
        "readability": {"mobile": {"enabled": True, "max_paragraph_chars": 280,
                                   "max_consecutive_exposition_paragraphs": 3, "blocking_severity": "hard_only"}},
        "naming": {"enabled": True, "near_duplicate_threshold": 0.88, "blocking_conflict_types": ["duplicate"],
                   "exemptions": {}},
    }
    weights = {
        "schema_version": 1, "description": "权重档案", "last_updated": "2026-02-27",
        "dimensions": ["plot_logic", "character", "immersion", "foreshadowing", "pacing", "style_naturalness",
                       "emotional_impact", "storyline_coherence", "hook_strength"],
        "normalization": {"_comment": "scale", "method": "scale_to_sum", "sum_to": 1.0, "tolerance": 0.0001},
        "default_profile_by_drive_type": {"plot": "plot:v1", "suspense": "suspense:v1"},
        "platform_multipliers": {"qidian": {"immersion": 1.3}, "fanqie": {"hook_strength": 1.5, "pacing": 1.3}},
        "profiles": {
            "plot:v1": {"drive_type": "plot", "weights": {"plot_logic": 0.3, "character": 0.2, "immersion": 0.1,
                                                          "foreshadowing": 0.1, "pacing": 0.1,
                                                          "style_naturalness": 0.1, "emotional_impact": 0.05,
                                                          "storyline_coherence": 0.05}},
            "suspense:v1": {"drive_type": "suspense", "weights": {
                "plot_logic": 0.2, "character": 0.1, "immersion": 0.1, "foreshadowing": 0.2, "pacing": 0.1,
                "style_naturalness": 0.1, "emotional_impact": 0.05, "storyline_coherence": 0.05,
                "hook_strength": 0.1}},
        },
    }
    gates = {"schema_version": 1, "description": "黄金三章", "platforms": {"qidian": {"chapters": {
        "1": {"gates": [{"id": "immersion_min_score", "requirement": "代入感不低于 3.5",
                         "evaluation_hint": "…", "threshold": {"metric": "scores.immersion.score",
                                                               "operator": ">=", "value": 3.5}}],
              "notes": ["开篇"]}}}},
        "invalid_combinations": [{"genre": "x", "platform": "qidian", "warning": "…"}]}
    brief = "# 创作纲领\n\n- **书名**：雾城\n- **题材**：悬疑\n- **平台**：qidian\n"
    return {".checkpoint.json": _dump(checkpoint), "brief.md": brief.encode(),
            "platform-profile.json": _dump(profile), "genre-weight-profiles.json": _dump(weights),
            "golden-chapter-gates.json": _dump(gates),
            "platform-writing-guide.md": "# 起点写作指南\n\n- 章末留钩子。\n".encode(),
            "staging/chapters/.keep": b""}


def test_a_tree_made_by_novel_init_platform_qidian_imports_with_its_profile_active():
    files = init_qidian_tree()
    report = import_files(files, slug="wucheng")
    project = report.project
    assert (project.target_platform, project.genre, project.genre_drive_type) == ("qidian", "xuanyi", "suspense")
    assert project.title == "雾城"
    limits = platform_limits(project)
    assert limits["word_count"] == {"target_min": 2800, "target_max": 3600, "hard_min": 2000, "hard_max": 4800}
    assert limits["hook_policy"] == {"required": True, "min_strength": 3, "fix_strategy": "hook-fix",
                                     "allowed_types": ["question", "threat_reveal", "twist_reveal"]}
    assert limits["readability"]["max_paragraph_chars"] == 280 and limits["banned_words"] == ["某违禁词"]
    weights = scoring_weights(project)  # the tree's own suspense:v1 × qidian's immersion ×1.3
    assert weights["immersion"] / weights["character"] == pytest.approx(1.3, rel=1e-4)
    assert [gate["id"] for gate in golden_gates_for(project, 1)] == ["immersion_min_score"]
    assert golden_gates_for(project, 2) == []
    for name in PLATFORM_FILES:
        assert name not in report.kept  # modelled, not merely kept
    exported = dict(tree_files(project))
    for name in PLATFORM_FILES[:3]:  # the tool's shapes come back, comment keys and all
        assert loads(exported[name]) == loads(files[name])
    assert exported["platform-writing-guide.md"] == files["platform-writing-guide.md"]


def test_the_legacy_tomato_platform_imports_as_fanqie():
    project = import_files(init_qidian_tree(platform="tomato"), slug="tomato").project
    assert project.target_platform == "fanqie"
    assert project.platform_profile["platform"] == "tomato"  # the file is given back as it was


def _project(platform: str, **fields) -> Project:
    return project_create(owner=None, slug=f"p-{platform}", title="书", target_platform=platform, **fields)


@pytest.mark.parametrize("platform", ["qidian", "fanqie", "jinjiang"])
def test_profiles_round_trip_through_export_and_import(platform):
    project = _project(platform, genre="xuanhuan", genre_drive_type="plot")
    project_platform_update(project=project, editor=None, numbers={"word_target_min": 2000, "hook_min_strength": 5,
                                                                    "max_exposition_paragraphs": 2})
    weights = default_genre_weight_profiles()
    weights["profiles"]["plot:v1"]["weights"]["hook_strength"] = 0.2
    gates = default_golden_chapter_gates()
    gates["platforms"][platform]["chapters"]["1"]["notes"] = ["自定义"]
    Project.objects.filter(pk=project.pk).update(genre_weight_profiles=weights, golden_chapter_gates=gates,
                                                 platform_writing_guide="# 我们自己的指南")
    project.refresh_from_db()
    first = dict(tree_files(project))
    assert set(PLATFORM_FILES) <= set(first)
    copy = import_files(first, slug="copy").project
    for name in ("target_platform", "genre", "genre_drive_type", "platform_profile", "genre_weight_profiles",
                 "golden_chapter_gates", "platform_writing_guide"):
        assert getattr(copy, name) == getattr(project, name), name
    assert platform_limits(copy) == platform_limits(project)
    second = dict(tree_files(copy))
    for name in PLATFORM_FILES:
        assert second[name] == first[name], name


def test_a_general_project_keeps_its_profile_in_the_novelsite_file():
    """The original tool refuses platform "general" in platform-profile.json, so it is not written."""
    project = _project("general")
    project = project_platform_update(project=project, editor=None, numbers={"max_new_entities": 9})
    files = dict(tree_files(project))
    assert "platform-profile.json" not in files
    assert loads(files["novelsite/project.json"])["platform_profile"]["info_load"]["max_new_entities_per_chapter"] == 9
    copy = import_files(files, slug="copy").project
    assert copy.target_platform == "general" \
        and copy.platform_profile == Project.objects.get(pk=project.pk).platform_profile


def test_a_project_without_platform_writes_no_platform_files():
    project = project_create(owner=None, slug="plain", title="书")
    files = dict(tree_files(project))
    assert not set(PLATFORM_FILES) & set(files)
    copy = import_files(files, slug="copy").project
    assert copy.target_platform == "" and copy.platform_profile is None


def _broken(name: str, value) -> dict[str, bytes]:
    files = init_qidian_tree()
    files[name] = value if isinstance(value, bytes) else _dump(value)
    return files


def _profile(**changes):
    profile = loads(init_qidian_tree()["platform-profile.json"])
    profile.update(changes)
    return profile


@pytest.mark.parametrize("name, value, message", [
    ("platform-profile.json", b"[1, 2", "platform-profile.json"),
    ("platform-profile.json", [], "$"),
    ("platform-profile.json", _profile(platform="xiaohongshu"), "$.platform"),
    ("platform-profile.json", _profile(word_count={"target_min": 4000, "target_max": 3000, "hard_min": 1,
                                                   "hard_max": 9000}), "hard_min ≤ target_min ≤ target_max"),
    ("platform-profile.json", _profile(hook_policy={"required": True, "min_strength": 7, "allowed_types": ["q"],
                                                    "fix_strategy": "hook-fix"}), "$.hook_policy.min_strength"),
    ("genre-weight-profiles.json", {"profiles": {"plot:v1": {"weights": {"plot_logic": 0}}}}, "add up to 0"),
    ("genre-weight-profiles.json", {"profiles": {"plot:v1": {"weights": {"plot_logic": 1}}},
                                    "default_profile_by_drive_type": {"plot": "plot:v9"}}, "plot:v9"),
    ("golden-chapter-gates.json", {"platforms": {"qidian": {"chapters": {"4": {"gates": []}}}}}, "chapters"),
    ("golden-chapter-gates.json", {"platforms": {"qidian": {"chapters": {"1": {"gates": [
        {"id": "a", "requirement": "x"}, {"id": "a", "requirement": "y"}]}}}}}, "appears twice"),
    ("platform-writing-guide.md", b"\xff\xfe", "not UTF-8"),
])
def test_malformed_platform_files_are_refused_naming_the_file_and_nothing_is_written(name, value, message):
    before = snapshot_db_counts()
    with pytest.raises(TreeError) as caught:
        import_files(_broken(name, value))
    assert name in str(caught.value) and message in str(caught.value)
    assert_nothing_imported(before)
