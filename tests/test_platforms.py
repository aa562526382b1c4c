"""Platform profiles and genre (issue #17 §1): the built-in data for each writing platform, the
project's active profile, and ``platform_limits`` that the lints and the writer read."""
from __future__ import annotations

import pytest

from projects.errors import InvalidData
from projects.models import Project
from projects.platforms.limits import golden_gates_for, platform_limits, scoring_weights
from projects.platforms.profiles import (
    canonical_platform,
    default_genre_weight_profiles,
    default_golden_chapter_gates,
    default_platform_profile,
    default_writing_guide,
    genre_weight_profiles_problems,
    golden_chapter_gates_problems,
    platform_profile_problems,
)
from projects.schemas import PLATFORM_IDS, WEIGHT_DIMENSIONS
from projects.services.platforms import project_platform_bind, project_platform_update
from projects.services.projects import project_create, project_settings_update

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("platform", PLATFORM_IDS)
def test_every_platform_has_a_valid_profile_and_a_guide(platform):
    profile = default_platform_profile(platform)
    assert profile["platform"] == platform
    assert platform_profile_problems(profile) == []
    assert default_writing_guide(platform).startswith("# ")


def test_built_in_weight_profiles_and_golden_gates_are_valid():
    assert genre_weight_profiles_problems(default_genre_weight_profiles()) == []
    assert golden_chapter_gates_problems(default_golden_chapter_gates()) == []
    for profile in default_genre_weight_profiles()["profiles"].values():
        assert set(profile["weights"]) == set(WEIGHT_DIMENSIONS)
        assert abs(sum(profile["weights"].values()) - 1.0) < 1e-4  # facts §10.11: they sum to 1.0


def test_tomato_is_fanqie_and_promotion_sites_are_not_writing_platforms():
    assert canonical_platform("tomato") == "fanqie"
    assert canonical_platform(" Qidian ") == "qidian"
    assert canonical_platform("xiaohongshu") == ""
    assert "xiaohongshu" not in Project._meta.get_field("target_platform").choices.__repr__()


def _project(**fields):
    return project_create(owner=None, slug=fields.pop("slug", "p1"), title="书", **fields)


def test_a_new_project_on_a_platform_stores_that_platforms_profile():
    project = _project(target_platform="fanqie")
    assert project.platform_profile["platform"] == "fanqie"
    assert project.platform_profile["created_at"].endswith("Z")
    limits = platform_limits(project)
    assert limits["platform"] == "fanqie"
    assert limits["word_count"] == {"target_min": 1800, "target_max": 2500, "hard_min": 1200, "hard_max": 3500}
    assert limits["target_chars"] == 2150
    assert limits["hook_policy"]["required"] is True and limits["hook_policy"]["min_strength"] == 4
    assert limits["readability"]["max_paragraph_chars"] == 200
    assert limits["info_load"]["max_new_entities_per_chapter"] == 4


def test_a_project_without_platform_reads_the_general_limits_and_keeps_default_weights():
    project = _project()
    assert project.platform_profile is None
    limits = platform_limits(project)
    assert limits["platform"] == "general"
    assert limits["hook_policy"]["required"] is False
    assert scoring_weights(project) is None
    assert golden_gates_for(project, 1) == []


def test_weights_follow_genre_drive_type_and_platform_multipliers():
    project = _project(target_platform="jinjiang", genre_drive_type="character")
    weights = scoring_weights(project)
    assert abs(sum(weights.values()) - 1.0) < 1e-4
    base = default_genre_weight_profiles()["profiles"]["character:v1"]["weights"]
    # facts §10.11: jinjiang multiplies character ×1.3 and emotional_impact ×1.2 before normalising
    ratio = (weights["character"] / weights["plot_logic"]) / (base["character"] / base["plot_logic"])
    assert ratio == pytest.approx(1.3, rel=1e-3)
    fanqie = scoring_weights(_project(slug="p2", target_platform="fanqie", genre_drive_type="plot"))
    qidian = scoring_weights(_project(slug="p3", target_platform="qidian", genre_drive_type="plot"))
    assert fanqie["hook_strength"] > qidian["hook_strength"]


def test_golden_gates_only_for_chapters_one_to_three():
    project = _project(target_platform="qidian")
    assert [g["id"] for g in golden_gates_for(project, 1)]
    assert golden_gates_for(project, 4) == []


def test_owner_edits_numbers_and_they_are_kept():
    project = _project(target_platform="qidian")
    project = project_platform_update(project=project, editor=None, numbers={
        "word_target_min": 3000, "word_target_max": 4000, "hook_min_strength": 4, "max_paragraph_chars": 250})
    project.refresh_from_db()
    limits = platform_limits(project)
    assert limits["word_count"]["target_min"] == 3000 and limits["target_chars"] == 3500
    assert limits["hook_policy"]["min_strength"] == 4
    assert limits["readability"]["max_paragraph_chars"] == 250


def test_numbers_out_of_order_are_refused_and_nothing_is_written():
    project = _project(target_platform="qidian")
    with pytest.raises(InvalidData) as caught:
        project_platform_update(project=project, editor=None, numbers={"word_target_min": 9000})
    assert "hard_min ≤ target_min ≤ target_max ≤ hard_max" in caught.value.message
    project.refresh_from_db()
    assert project.platform_profile["word_count"]["target_min"] == 2500


def test_another_platform_resets_the_profile_and_unknown_platform_is_refused():
    project = _project(target_platform="qidian")
    project_platform_update(project=project, editor=None, numbers={"word_target_max": 3400})
    project = project_platform_update(project=project, editor=None, platform="fanqie")
    assert project.platform_profile["platform"] == "fanqie"
    assert project.platform_profile["word_count"]["target_max"] == 2500
    with pytest.raises(InvalidData):
        project_platform_update(project=project, editor=None, platform="xiaohongshu")
    with pytest.raises(InvalidData):
        project_settings_update(project=project, editor=None, target_platform="xiaohongshu")
    project.refresh_from_db()
    assert project.target_platform == "fanqie"


def test_settings_patch_of_the_platform_brings_its_profile():
    project = _project()
    project = project_settings_update(project=project, editor=None, target_platform="tomato")
    assert project.target_platform == "fanqie" and project.platform_profile["platform"] == "fanqie"


def test_quick_start_answers_bind_platform_genre_and_drive_type():
    project = _project(brief="简介")
    project_platform_bind(project_id=project.pk, platform="jinjiang", genre="yanqing")
    project.refresh_from_db()
    assert (project.target_platform, project.genre, project.genre_drive_type) == ("jinjiang", "yanqing", "character")
    assert project.platform_profile["scoring"]["weight_profile_id"] == "character:v1"
    other = _project(slug="p2")
    project_platform_bind(project_id=other.pk, platform="我自己的网站", genre="xuanhuan")
    other.refresh_from_db()
    assert other.target_platform == "general" and other.genre_drive_type == "plot"


@pytest.mark.parametrize("bad, where", [
    ({"platform": "qidian"}, "schema_version"),
    ({**default_platform_profile("qidian"), "platform": "xiaohongshu"}, "$.platform"),
    ({**default_platform_profile("qidian"), "hook_policy": {"required": "yes", "min_strength": 9,
                                                            "allowed_types": [], "fix_strategy": "hook-fix"}},
     "$.hook_policy"),
])
def test_malformed_profiles_are_refused_with_the_path(bad, where):
    problems = platform_profile_problems(bad)
    assert problems and any(where in p for p in problems)


def test_weights_that_cannot_be_normalised_are_refused():
    tables = default_genre_weight_profiles()
    tables["profiles"]["plot:v1"]["weights"] = {dim: 0 for dim in WEIGHT_DIMENSIONS}
    assert any("add up to 0" in p for p in genre_weight_profiles_problems(tables))
    tables["profiles"]["plot:v1"]["weights"] = {"plot_logic": 1, "charm": 1}
    assert genre_weight_profiles_problems(tables)


@pytest.mark.parametrize("brief, platform, genre", [
    ("# 创作纲领\n\n- **题材**：玄幻\n- **平台**：qidian\n", "qidian", "xuanhuan"),
    ("- **题材**：悬疑推理\n- **平台**：番茄小说\n", "fanqie", "xuanyi"),
    ("- **题材**：romance\n- **发布平台**：tomato\n", "fanqie", "yanqing"),
    ("- **题材**：{genre}\n- **平台**：{platform}\n", "", ""),  # the template's placeholders: nothing chosen
    ("一段没有字段的简介。", "", ""),
])
def test_platform_and_genre_come_from_the_brief(brief, platform, genre):
    from projects.platforms.genres import genre_from_brief
    from projects.platforms.profiles import platform_from_brief

    assert (platform_from_brief(brief), genre_from_brief(brief)) == (platform, genre)


def test_the_quick_start_question_defaults_to_what_the_brief_says():
    from pipeline.book.quickstart import binding_question

    project = _project(brief="- **题材**：言情\n- **平台**：晋江\n")
    questions = {q["id"]: q for q in binding_question(project)["questions"]}
    assert questions["platform"]["default"] == "jinjiang" and questions["genre"]["default"] == "yanqing"
    assert [o["label"] for o in questions["platform"]["options"]] == ["qidian", "fanqie", "jinjiang", "general"]
