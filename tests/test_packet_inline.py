"""The computed inline keys of chapter packets (#20 item 6, facts §12): the writer's
``statistical_targets`` in the tool's shape and ``genre_overrides`` (brief override notes, then the
brief's genre, then omitted); the judge's ``continuity_report_summary`` (the latest-summary loader's
limits; ``_degraded`` only when a report exists but cannot be read) and ``prejudge_guardrails``."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from pipeline.questions.spec import validate_instruction_packet
from pipeline.runtime.blackboard import Blackboard
from pipeline.models import PipelineRun, RunKind, RunStatus
from pipeline.steps.packet_inline import continuity_inline, continuity_summary, prejudge_guardrails
from pipeline.steps.packets import instruction_packet
from projects.filetree.importer import tree_import
from projects.filetree.source import read_tree
from projects.models import ExtraFile, Project
from projects.platforms.genre_overrides import brief_override_notes, genre_overrides
from projects.services.voice import voice_sample_save
from tests.sample_pages import VOICE_SAMPLE, paused_demo
from tests.test_filetree import CLI_TREE

BRIEF = "# 创作纲领\n\n- **题材**：{genre}\n{notes}- **目标平台**：qidian\n"


def project_like(genre: str = "", brief_genre: str = "", notes: str | None = None) -> SimpleNamespace:
    line = f"- **覆写说明**：{notes}\n" if notes is not None else ""
    return SimpleNamespace(genre=genre, brief=BRIEF.format(genre=brief_genre, notes=line))


def issue(n: int, *, kind: str = "timeline_contradiction", severity: str = "high", confidence: str = "high",
          **more) -> dict:
    return {"id": f"{kind}:key={n:02d}", "type": kind, "severity": severity, "confidence": confidence,
            "description": "时间对不上" * 100, "suggestions": ["补齐时空锚点" * 50, "第二条"],
            "evidence": [{"chapter": n, "snippet": "雪" * 300, "line": 3, "source": "x"}] * 3, **more}


# --- statistical_targets -----------------------------------------------------------------------------
@pytest.mark.django_db
def test_draft_targets_without_a_sample_are_the_facts_defaults_with_no_target(sample_project):
    inline = instruction_packet(sample_project, "chapter:001:draft")["manifest"]["inline"]
    targets = inline["statistical_targets"]
    assert targets["sentence_length_std_dev"] == {"fallback_range": [8.0, 18.0], "fallback_applied": True}
    assert targets["paragraph_length_cv"] == {"fallback_range": [0.4, 1.2], "fallback_applied": True}
    for name in ("vocabulary_diversity", "register_mixing", "emotional_arc"):
        assert targets[name]["target"] == "medium" and targets[name]["fallback_applied"] is True
    assert targets["vocabulary_diversity"]["source_field"] == "vocabulary_richness"
    assert targets["emotional_arc"]["source_field"] == "emotional_volatility"
    assert targets["narration_connectors"]["target"] == 0
    assert targets["source"] == {"mode": "platform_genre_defaults", "platform": "qidian", "genre": "xuanhuan"}
    assert "null" not in json.dumps(targets)  # optional keys are omitted (facts §12)


@pytest.mark.django_db
def test_draft_targets_with_a_voice_sample_aim_at_its_measured_spread(sample_project):
    voice_sample_save(project=sample_project, editor=None, text=VOICE_SAMPLE, source_type="reference")
    Project.objects.filter(pk=sample_project.pk).update(style_profile={"vocabulary_richness": "high"})
    project = Project.objects.get(pk=sample_project.pk)
    measured = project.voice_sample.statistics
    targets = instruction_packet(project, "chapter:001:draft")["manifest"]["inline"]["statistical_targets"]
    assert targets["source"]["mode"] == "voice_sample"
    assert targets["sentence_length_std_dev"]["target"] == round(measured["sentence_length_std_dev"], 2)
    assert targets["sentence_length_std_dev"]["fallback_applied"] is False
    assert targets["vocabulary_diversity"] == {"target": "high", "source_field": "vocabulary_richness",
                                               "fallback_applied": False}
    assert targets["register_mixing"] == {"target": "medium", "fallback_applied": True}


# --- genre_overrides --------------------------------------------------------------------------------
def test_genre_overrides_follow_the_brief_override_notes_first():
    overrides = genre_overrides(project_like("kehuan", "科幻", "单句段 15%-30%；段长上限 120 字；感叹号 ≤ 5/章。"))
    assert overrides["genre"] == "scifi"
    assert overrides["source"] == {"brief": "brief.md", "mode": "brief_override_notes"}
    assert overrides["punctuation_rhythm"]["exclamation_max_per_chapter"] == 5
    assert overrides["paragraph_structure"]["max_paragraph_chars"] == 120
    explicit = genre_overrides(project_like("xuanyi", "悬疑",
                                            "单句段 18%-28%；段长上限 140 字；省略号 ≤ 6/章；感叹号 ≤ 4/章。"))
    assert explicit["genre"] == "suspense"
    assert explicit["paragraph_structure"] == {"single_sentence_ratio": {"min": 0.18, "max": 0.28},
                                               "max_paragraph_chars": 140}
    assert explicit["punctuation_rhythm"] == {"ellipsis_max_per_chapter": 6, "exclamation_max_per_chapter": 4,
                                              "em_dash_max_per_chapter": 0}
    assert explicit["explicit_notes"].startswith("单句段 18%")


def test_genre_overrides_fall_back_to_the_genre_then_are_omitted():
    fallback = genre_overrides(project_like("xuanhuan", "玄幻"))
    assert fallback["source"]["mode"] == "brief_genre_fallback" and "explicit_notes" not in fallback
    assert fallback["paragraph_structure"]["max_paragraph_chars"] == 100
    assert fallback["punctuation_rhythm"]["exclamation_max_per_chapter"] == 8
    # the template's placeholder, or notes that state nothing, are no override
    assert genre_overrides(project_like("", "悬疑", "{genre_override_notes}"))["source"]["mode"] == \
        "brief_genre_fallback"
    assert brief_override_notes(project_like(notes="{genre_override_notes}").brief) is None
    assert genre_overrides(project_like("xuanyi", "", "节奏放慢"))["source"]["mode"] == "brief_genre_fallback"
    assert genre_overrides(project_like("", "悬疑"))["genre"] == "suspense"  # the brief's 题材 line
    assert genre_overrides(project_like("wuxia", "武侠")) is None  # no tool genre: omitted
    assert genre_overrides(project_like("", "")) is None


@pytest.mark.django_db
def test_draft_packet_carries_genre_overrides_only_for_a_tool_genre(sample_project):
    inline = instruction_packet(sample_project, "chapter:001:draft")["manifest"]["inline"]
    assert inline["genre_overrides"]["genre"] == "xuanhuan"
    Project.objects.filter(pk=sample_project.pk).update(genre="wuxia")
    inline = instruction_packet(Project.objects.get(pk=sample_project.pk), "chapter:001:draft")["manifest"]["inline"]
    assert "genre_overrides" not in inline
    assert "statistical_targets" not in instruction_packet(sample_project, "chapter:001:judge")["manifest"]["inline"]


# --- continuity_report_summary ----------------------------------------------------------------------
def test_continuity_summary_keeps_the_loaders_limits():
    report = {"schema_version": 1, "generated_at": "2026-11-24T10:00:00Z", "scope": "periodic", "volume": 1,
              "chapter_range": [1, 10],
              "issues": [issue(n) for n in range(7)] + [issue(9, kind="character_mapping", severity="medium"),
                                                        issue(8, severity="low"), issue(10, kind="storyline"),
                                                        "not an issue"],
              "stats": {"chapters_checked": 10, "issues_total": 11,
                        "issues_by_severity": {"high": 9, "medium": 1, "low": 1}}}
    summary = continuity_summary(report)
    assert len(summary["issues"]) == 5 and len(summary["ls_001_signals"]) == 5
    assert [i["id"] for i in summary["issues"]] == [f"timeline_contradiction:key={n:02d}" for n in range(5)]
    first = summary["issues"][0]
    assert len(first["description"]) == 240 and len(first["suggestion"]) == 180
    assert len(first["evidence"]) == 2 and first["evidence"][0] == {"chapter": 0, "snippet": "雪" * 120}
    assert summary["ls_001_signals"][0] == {"issue_id": first["id"], "confidence": "high",
                                            "evidence": first["evidence"], "suggestion": first["suggestion"]}
    assert summary["chapter_range"] == [1, 10] and summary["stats"]["issues_by_severity"]["high"] == 9


def test_continuity_summary_sorts_by_severity_and_skips_what_is_not_a_report():
    report = {"schema_version": 1, "issues": [issue(1, kind="timeline_contradiction", severity="medium",
                                                    confidence="medium"),
                                              issue(2, kind="location_contradiction")]}
    summary = continuity_summary(report)
    assert [i["type"] for i in summary["issues"]] == ["location_contradiction", "timeline_contradiction"]
    assert "ls_001_signals" not in summary and "chapter_range" not in summary  # omitted, not null
    assert summary["stats"] == {"chapters_checked": 0, "issues_total": 0,
                                "issues_by_severity": {"high": 0, "medium": 0, "low": 0}}
    assert continuity_summary({"schema_version": 2, "issues": []}) is None
    assert continuity_summary([]) is None


@pytest.mark.django_db
def test_a_tool_trees_latest_continuity_report_reaches_the_judge_packet(make_user):
    project = tree_import(read_tree(CLI_TREE), slug="wucheng", owner=make_user("owner")).project
    inline = instruction_packet(project, "chapter:003:judge")["manifest"]["inline"]
    assert inline["continuity_report_summary"]["scope"] == "periodic"
    assert inline["continuity_report_summary"]["issues"] == []
    assert "continuity_report_summary_degraded" not in inline
    ExtraFile.objects.filter(project=project, path="logs/continuity/latest.json").update(content="{not json")
    inline = instruction_packet(project, "chapter:003:judge")["manifest"]["inline"]
    assert inline["continuity_report_summary_degraded"] is True and "continuity_report_summary" not in inline
    ExtraFile.objects.filter(project=project, path="logs/continuity/latest.json").delete()
    assert continuity_inline(project) == {}  # no report at all: the keys are omitted


@pytest.mark.django_db
def test_novelsites_own_latest_audit_is_summarized_when_it_is_newer(sample_project):
    audit = {"schema_version": 1, "scope": "volume_end", "volume": 1, "chapter_range": [1, 30],
             "issues": [issue(4)], "stats": {"chapters_checked": 30, "issues_total": 1,
                                             "issues_by_severity": {"high": 1, "medium": 0, "low": 0}}}
    board = Blackboard({})
    board.as_("worker").write_content("book", "audit", audit)
    PipelineRun.objects.create(project=sample_project, kind=RunKind.REVIEW, status=RunStatus.DONE, stage="done",
                               blackboard=board.to_dict())
    ExtraFile.objects.create(project=sample_project, path="logs/continuity/latest.json",
                             content=json.dumps({"schema_version": 1, "chapter_range": [1, 5], "issues": []}))
    summary = continuity_inline(sample_project)["continuity_report_summary"]
    assert summary["chapter_range"] == [1, 30] and summary["ls_001_signals"][0]["issue_id"] == issue(4)["id"]


# --- prejudge_guardrails ----------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_the_judge_packet_of_a_staged_chapter_carries_its_guardrails(settings, make_user):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    demo, question = paused_demo(settings, make_user("owner"))
    packet = instruction_packet(demo, "chapter:002:judge")
    assert validate_instruction_packet(packet) == []
    guardrails = packet["manifest"]["inline"]["prejudge_guardrails"]
    assert guardrails["status"] in ("pass", "warn") and guardrails["has_blocking_issues"] is False
    assert guardrails["blocking_reasons"] == [] and "report_path" not in guardrails
    run = question.run
    board = Blackboard(run.blackboard)
    text = board.as_("skill").read_content("chapter", "refined") or board.as_("skill").read_content("chapter", "draft")
    board.as_("worker").write_content("chapter", "refined", text + "\n\n他停了一下——又走了。")
    PipelineRun.objects.filter(pk=run.pk).update(blackboard=board.to_dict())
    guardrails = prejudge_guardrails(demo, 2)
    assert guardrails["status"] == "violation" and "craft_lint" in guardrails["blocking_reasons"]
    assert any(found["rule"] == "em_dash" for found in guardrails["issues"])
    assert prejudge_guardrails(demo, 3) is None  # nothing staged for chapter 3: the key is omitted
    assert "prejudge_guardrails" not in instruction_packet(demo, "chapter:003:judge")["manifest"]["inline"]
