"""No page of a sample project shows a raw code as text (#16): every state, stage, step id, gate
topic, decision, score dimension, genre and platform reads as a translated label (the code stays
in ``title``/``data-code`` attributes and in the API); Markdown is rendered and JSON documents are
tables and lists in the reading views, in Chinese and in English."""
from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from pipeline.models import PipelineRun
from projects.labels import label
from projects.schemas import SCORE_DIMENSIONS
from tests.sample_pages import sample_pages

pytestmark = pytest.mark.django_db(transaction=True)

STATES = r"\b(INIT|QUICK_START|VOL_PLANNING|WRITING|CHAPTER_REWRITE|VOL_REVIEW|ERROR_RETRY)\b"
STEP_ID = r"\b(quickstart|volume|chapter|review|promote|voice):[a-z0-9]"
TOPIC = r"\b(chapter|volume)\.\d+\.[a-z_]+|\binit\.platform_binding\b"
DECISION_DICT = r"\{\s*'decision'|\{\s*\"decision\""
SNAKE_CODES = r"\b(" + "|".join(d for d in (*SCORE_DIMENSIONS, "hook_strength", "pause_for_user", "force_passed",
                                            "main_arc") if "_" in d) + r")\b"
PINYIN_CODES = r"\b(xuanhuan|xianxia|dushi|kehuan|yanqing|xuanyi|qidian|fanqie|jinjiang|xiaohongshu|wechat)\b"
# codes that are English words: raw only on the Chinese pages (the English label may be the same word)
ENGLISH_WORD_CODES = (r"\b(drafting|drafted|refined|judged|revising|committed|character|immersion|foreshadowing|"
                      r"pacing|draft|summarize|refine|judge|commit|queued|running|waiting|error|done|cancelled|"
                      r"quickstart|promotion|accept|revise|rewrite|approve|regenerate|casual|general|twitter|"
                      r"pass|polish|hard|soft|active|retired|planted|long|short|medium|pipeline|human|import)\b")
MARKDOWN = r"\*\*|^#{1,6} |^- \*\*"


def visible_text(body: str, *, reading: bool) -> str:
    """What a person reads: no script, style or attribute values; a reading view also without the
    "advanced" raw-JSON details and the text areas (editors, and promotion posts kept as they will
    be pasted)."""
    body = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", body)
    if reading:
        body = re.sub(r'(?is)<details class="advanced">.*?</details>', " ", body)
        body = re.sub(r"(?is)<textarea\b.*?</textarea>", " ", body)  # editors, and the posts to copy as they are
    body = re.sub(r"(?s)<[^>]*>", "\n", body)  # tags (and their attribute values) go
    return html.unescape(body)


def pages(sample) -> list[tuple[str, str, bool]]:
    """(name, url, is a reading view) of every page of the sample."""
    demo, planned, failed = sample.demo.slug, sample.planned.slug, sample.failed.slug
    urls = [("projects", reverse("projects-home"), True)]
    for slug in (demo, planned, failed):
        urls += [(f"{slug} {name}", reverse(name, args=[slug]), not name.startswith("settings"))
                 for name in ("dashboard", "chapter-list", "world", "state", "gates", "plan", "runs", "promotions",
                              "members", "settings", "settings-voice", "trial")]
        urls += [(f"{slug} run {run.pk}", reverse("run", args=[slug, run.pk]), True)
                 for run in PipelineRun.objects.filter(project__slug=slug)]
    urls += [("chapter 1", reverse("chapter-read", args=[demo, 1]), True),
             ("chapter 1 history", reverse("chapter-history", args=[demo, 1]), True),
             ("state at 1", reverse("state", args=[demo]) + "?chapter=1", True),
             ("promotion", reverse("promotion", args=[demo, sample.promotion.pk]), True),
             ("storyline schedule", reverse("schedule-edit", args=[demo, 1]), False),
             ("facts", reverse("fact-list", args=[demo]) + "?status=all", True),
             ("new fact", reverse("fact-new", args=[demo]), False)]
    return urls


@pytest.fixture
def sample(settings, make_user, client):
    owner = make_user("owner")
    client.force_login(owner)
    return sample_pages(settings, owner)


def test_no_page_shows_a_raw_code_markdown_or_json(client, sample):
    problems = []
    for language in ("zh-hans", "en"):
        for name, url, reading in pages(sample):
            response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
            assert response.status_code == 200, (name, url)
            text = visible_text(response.content.decode(), reading=reading)
            patterns = [STATES, STEP_ID, TOPIC, DECISION_DICT, SNAKE_CODES, PINYIN_CODES]
            if language == "zh-hans":
                patterns.append(ENGLISH_WORD_CODES)
            if reading:
                patterns += [MARKDOWN, r"[{}]"]
            for pattern in patterns:
                for match in re.finditer(pattern, text, flags=re.M):
                    context = text[max(0, match.start() - 40):match.end() + 40].replace("\n", " ")
                    problems.append(f"{language} {name}: {match.group(0)!r} in …{context}…")
    assert not problems, "\n".join(problems[:40])


def test_codes_stay_available_as_tooltips(client, sample):
    body = client.get(reverse("dashboard", args=[sample.demo.slug])).content.decode()
    assert 'id="orchestrator-state" data-code="WRITING"' in body
    assert 'data-code="chapter:002:review"' in body and 'data-code="chapter.002.judge_pause"' in body
    gates = client.get(reverse("gates", args=[sample.planned.slug])).content.decode()
    assert 'title="qidian"' in gates and "起点" in gates and 'title="xuanhuan"' in gates and "玄幻" in gates
    english = client.get(reverse("gates", args=[sample.planned.slug]), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Qidian" in english and "Xuanhuan" in english


def test_labels_translate_codes_with_numbers_and_fall_back_to_the_code(settings):
    from django.utils import translation

    with translation.override("zh-hans"):
        assert label("step", "chapter:004:draft") == "第 4 章 · 起草"
        assert label("topic", "chapter.006.judge_pause") == "第 6 章：评审暂停，等你决定"
        assert label("answer", "approve") == "批准"
        assert label("state", "WRITING") == "写作中"
        assert label("genre", "xuanhuan") == "玄幻"
        assert label("reason", "no_plan:chapter-004:vol-01") == "第 4 章还没有规划：先规划第 1 卷"
    with translation.override("en"):
        assert label("step", "chapter:004:draft") == "Chapter 4 · draft"
        assert label("answer", "approve") == "Approved"
        assert label("dimension", "plot_logic") == "Plot logic"
    assert label("step", "something:new") == "something:new"
    assert label("no-such-kind", "x") == "x" and label("state", None) == ""
