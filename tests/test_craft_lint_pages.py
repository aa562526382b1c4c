"""The chapter page highlights the craft lints' findings (issue #17 §2), with the rule's name in
the reader's language; the text itself is unchanged and safely escaped."""
from __future__ import annotations

import pytest
from django.urls import reverse

from projects.chapter_marks import marked_paragraphs
from tests.conftest import member_client
from tests.factories import ChapterFactory, ProjectFactory

pytestmark = pytest.mark.django_db


def _page(client, chapter) -> str:
    response = client.get(reverse("chapter-read", args=[chapter.project.slug, chapter.number]))
    assert response.status_code == 200
    return response.content.decode()


def test_findings_are_highlighted_with_translated_rule_names(make_user):
    project = ProjectFactory(ai_blacklist={"words": ["不禁"]})
    chapter = ChapterFactory(project=project, number=1, text="他停了一下——又走了。\n\n她不禁笑了<b>。")
    chinese = _page(member_client(project, make_user, "viewer"), chapter)
    assert '<mark class="lint lint-hard" data-rule="em_dash" title="破折号">——</mark>' in chinese
    assert 'data-rule="blacklist" title="AI 黑名单用语">不禁</mark>' in chinese
    assert "&lt;b&gt;" in chinese and "<b>" not in chinese.split('id="craft-lints"')[0].split("reader")[1]
    assert "文字检查" in chinese and "必须修改" in chinese

    english = _page(member_client(project, make_user, "editor", language="en"), chapter)
    assert 'title="Em dash">——</mark>' in english and "Craft lints" in english


def test_a_clean_chapter_has_no_marks(make_user):
    project = ProjectFactory()
    chapter = ChapterFactory(project=project, number=2, text="雪是半夜落下来的。林枫推开门，院子里已经白了一片。")
    page = _page(member_client(project, make_user, "viewer"), chapter)
    assert "<mark" not in page and 'id="craft-lints"' not in page


def test_marked_paragraphs_keep_every_character_once():
    text = "  第一段——有标记。\n\n第二段没有。\n第三段“不禁”。"
    marks = [{"start": 5, "end": 7, "rule": "em_dash", "severity": "hard"},
             {"start": 6, "end": 9, "rule": "x", "severity": "soft"},  # overlaps the first: not drawn
             {"start": text.index("不禁"), "end": text.index("不禁") + 2, "rule": "blacklist", "severity": "soft"}]
    paragraphs = marked_paragraphs(text, marks)
    assert ["".join(s.text for s in p) for p in paragraphs] == ["第一段——有标记。", "第二段没有。", "第三段“不禁”。"]
    assert [(s.text, s.rule) for s in paragraphs[0] if s.rule] == [("——", "em_dash")]


def test_the_dashboard_charts_each_rules_rate_per_chapter(make_user):
    from projects.models import Evaluation

    project = ProjectFactory(last_completed_chapter=3)
    for number, findings in ((1, None), (2, [{"rule": "em_dash", "rate_per_kchars": 0.67}]),
                             (3, [{"rule": "simile_density", "rate_per_kchars": 3.5},
                                  {"rule": "sentence_length_std_dev", "rate_per_kchars": None}])):
        chapter = ChapterFactory(project=project, number=number)
        data = {"overall": 4.2, "recommendation": "pass"}
        if findings is not None:
            data["anti_ai"] = {"lint_findings": findings}
        Evaluation.objects.create(project=project, chapter=chapter, data=data, overall="4.20")
    english = member_client(project, make_user, "viewer", language="en").get(
        reverse("dashboard", args=[project.slug])).content.decode()
    chart = english.split('id="lint-chart"')[1].split("</figure>\n")[0]
    assert "Craft-lint findings per 1000 characters" in chart
    assert 'data-code="em_dash"' in chart and 'data-code="simile_density"' in chart
    assert "sentence_length_std_dev" not in chart  # no rate: not charted
    assert "Em dash" in chart and "Simile density" in chart
    chinese = member_client(project, make_user, "editor").get(
        reverse("dashboard", args=[project.slug])).content.decode()
    assert "每千字文字检查发现" in chinese and "破折号" in chinese.split('id="lint-chart"')[1]
