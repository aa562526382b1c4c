"""The book bible every chapter stage opens with (#17 §4): what it holds, that it stays the same
from chapter to chapter and from stage to stage until a person edits the story, that it stays
within 6K tokens however big the book, that it is cached with a breakpoint of its own, and what the
writer (the previous chapter's ending) and the judge (a rubric, the weights) get after it."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from pipeline.chapter.book_bible import MAX_TOKENS, book_bible
from pipeline.jacquard.runner import RequestCaptured, capture_requests
from pipeline.jacquard.tokens import estimate_tokens
from pipeline.llm.backends import resolve
from pipeline.llm.cache_policy import min_cacheable_tokens
from pipeline.models import PromptTemplate
from pipeline.chapter.prompt_preview import stage_prompt_preview
from pipeline.runtime.runs import chapter_run_start
from projects.models import Character, Project, WorldDoc, WorldRule
from projects.sample_project import sample_project_create

pytestmark = pytest.mark.django_db(transaction=True)  # the eager chain runs on commit


@pytest.fixture
def project(make_user, settings) -> Project:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
    project = sample_project_create(owner=make_user("owner"))
    project.style_profile = {**project.style_profile,
                             "style_exemplars": ["雪落在城门上，他没有回头，只把缰绳往手里又绕了一圈。"],
                             "writing_directives": [{"directive": "对话短而有潜台词", "do": "让人物话里有话",
                                                     "dont": "让人物直说心事"}, "少用形容词"]}
    project.save(update_fields=["style_profile"])
    return project


def system_texts(preview) -> list[str]:
    return [block.text for block in preview.request.system]


def test_the_bible_holds_the_craft_the_book_the_platform_the_voice_the_world_and_the_cast(project):
    bible = book_bible(project)
    assert "写作守则" in bible and "破折号" in bible and "“”" in bible  # the craft rules
    assert project.title in bible and project.brief.strip()[:20] in bible
    assert "2500–3500" in bible  # the platform's word range (the demo writes for qidian)
    assert "对话短而有潜台词" in bible and "让人物直说心事" in bible and "少用形容词" in bible
    assert "雪落在城门上" in bible  # an exemplar, verbatim
    assert "林枫：喜欢用反问句" in bible and "lin-feng" not in bible  # speech patterns by name, not slug
    assert "W-001（硬性，不得违反）" in bible and "幽暗森林夜间" in bible  # every established rule
    assert "【geography】" in bible  # a digest of the world documents
    assert "- 赵明：" in bible  # the roster, one line each
    assert "不禁" in bible  # the words to avoid


def test_the_bible_is_the_same_from_chapter_to_chapter_and_stage_to_stage(project):
    before = book_bible(project)
    chapter_run_start(project_id=project.pk)  # chapter 1 commits: state, summaries, facts move on
    project.refresh_from_db()
    assert book_bible(project) == before

    draft = stage_prompt_preview(project, 2, "draft")
    judge = stage_prompt_preview(project, 1, "judge")
    summarize = stage_prompt_preview(project, 1, "summarize")
    refine = stage_prompt_preview(project, 1, "refine")
    for preview in (draft, judge, summarize, refine):
        assert system_texts(preview)[0] == before  # first, word for word
        assert preview.request.system[0].cacheable and preview.request.system[0].cache_break
        assert preview.receipt["cache"]["cacheable"] is True
    # each request marks the end of the bible, so the next stage reads it from the cache
    body = draft.api_body()
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_a_persons_edit_changes_the_bible(project):
    before = book_bible(project)
    WorldRule.objects.create(project=project, rule_id="W-099", rule="星火不能在雪原上点燃", constraint_type="hard",
                             position=99)
    after = book_bible(project)
    assert after != before and "W-099（硬性，不得违反）：星火不能在雪原上点燃" in after


def test_the_bible_reaches_the_default_models_cache_minimum(project):
    _backend, model = resolve("draft", {})
    default_anthropic_model = "claude-sonnet-5-5"
    tokens = estimate_tokens(book_bible(project))
    assert tokens >= min_cacheable_tokens(default_anthropic_model)
    assert tokens >= min_cacheable_tokens(model)


def test_a_huge_book_keeps_the_bible_within_6k_tokens_and_says_what_it_left_out(project):
    project.brief = "北境少年卷入宗门遗秘，一路南下。" * 300
    project.save(update_fields=["brief"])
    WorldRule.objects.bulk_create(WorldRule(project=project, rule_id=f"W-{n:03d}",
                                            rule=f"第{n}条规则：" + "灵力运转有其代价。" * 8,
                                            constraint_type="hard" if n % 3 else "soft", position=n)
                                  for n in range(10, 160))
    WorldDoc.objects.bulk_create(WorldDoc(project=project, name=f"doc-{n}", content="雪原上的宗门旧事。" * 60)
                                 for n in range(40))
    Character.objects.bulk_create(Character(project=project, slug=f"npc-{n}", display_name=f"路人{n}号",
                                            profile="北境的一名猎户，沉默寡言，熟悉雪原上的每一条小路。" * 3)
                                  for n in range(400))
    bible = book_bible(project)
    assert estimate_tokens(bible) <= MAX_TOKENS
    assert "位人物从略" in bible and "条规则从略" in bible
    assert "写作守则" in bible and "W-001（硬性，不得违反）" in bible  # the craft and the first rules stay


def test_a_projects_own_bible_template_is_used(project):
    PromptTemplate.objects.create(project=project, name="bible.j2", source="本书《{{ title }}》的简版手册。" * 40)
    assert book_bible(project).startswith(f"本书《{project.title}》的简版手册。")


def test_the_writer_reads_the_previous_chapters_ending_verbatim(project):
    first = stage_prompt_preview(project, 1, "draft")
    assert "上一章结尾（原文）" not in "\n".join(b.text for m in first.request.messages for b in m.blocks)
    chapter_run_start(project_id=project.pk)
    text = project.chapters.get(number=1).text.strip()
    second = stage_prompt_preview(project, 2, "draft")
    user = "\n".join(b.text for m in second.request.messages for b in m.blocks)
    assert "上一章结尾（原文）" in user and text[-200:] in user
    ending = user.split("上一章结尾（原文）：\n", 1)[1].split("\n</DATA>", 1)[0]
    assert 400 <= len(ending) <= 800 and text.endswith(ending)  # whole lines, about 800 characters


def test_the_judge_gets_a_rubric_with_the_projects_weights_after_the_bible(project):
    chapter_run_start(project_id=project.pk)
    judge = stage_prompt_preview(project, 1, "judge")
    texts = system_texts(judge)
    rubric = texts[2]  # bible, role, rubric: all stable, all cached
    assert rubric.startswith("# 评分细则") and judge.request.system[2].cacheable
    for dimension in ("plot_logic", "character", "immersion", "foreshadowing", "pacing", "style_naturalness",
                      "emotional_impact", "storyline_coherence", "hook_strength"):
        assert f"## {dimension}" in rubric
    assert "1 分：" in rubric and "5 分：" in rubric and "证据：" in rubric
    assert "权重 0." in rubric and "权重 0.00" not in rubric.split("## hook_strength")[0]


def test_nightly_batches_ask_for_the_hour_long_cache(project, settings):
    from pipeline.runtime.blackboard import Blackboard
    from pipeline.chapter.context import chapter_context
    from pipeline.runtime.claims import Claim
    from pipeline.chapter.stages import draft

    settings.NOVELSITE_BATCH_CACHE_TTL = "1h"
    board = Blackboard()
    board.as_("orchestrator").initialise(meta={"kind": "chapter", "chapter": 1}, steps=["draft"])
    ctx = chapter_context(project, 1)
    requests = {}
    for label, batch in (("by hand", None), ("batch", 12345)):
        claim = Claim(run_id=0, project_id=project.pk, stage="draft", owner="t", attempt=1, stage_run_id=0,
                      chapter=1, blackboard=board.to_dict(), project=project, batch_id=batch)
        with capture_requests(), pytest.raises(RequestCaptured) as captured:
            draft.execute(claim, ctx, board)
        requests[label] = captured.value
    assert requests["by hand"].request.cache_ttl == "5m" and requests["batch"].request.cache_ttl == "1h"
    assert requests["batch"].receipt["cache"]["ttl"] == "1h"


def test_a_wrong_cache_lifetime_setting_is_caught_by_check(settings):
    from novelsite.checks import celery_settings_check

    settings.NOVELSITE_BATCH_CACHE_TTL = "2h"
    assert [e.id for e in celery_settings_check()] == ["novelsite.E005"]


def test_novel_prompt_shows_the_bible_first(project, capsys):
    call_command("novel", "prompt", project.slug, "1")
    out = capsys.readouterr().out
    first = out.split("--- system", 2)[1]
    assert "[cache breakpoint after this block]" in first.splitlines()[0] and "本书写作手册" in first


@pytest.mark.parametrize("language, label", [(None, "缓存到此处"), ("en", "cached up to here")])
def test_the_run_page_shows_members_every_calls_full_prompt(project, make_user, language, label):
    from django.test import Client
    from django.urls import reverse

    from pipeline.models import LLMCall, PipelineRun
    from tests.conftest import member_client

    chapter_run_start(project_id=project.pk)
    run = PipelineRun.objects.filter(project=project, chapter=1).first()
    stored = LLMCall.objects.filter(run=run).order_by("pk").first()
    assert stored.prompt["system"][0]["text"] == book_bible(project) and stored.prompt["system"][0]["cache_breakpoint"]
    assert stored.prompt["messages"] and stored.prompt["messages"][0]["role"] == "user"

    reviewer = member_client(project, make_user, "reviewer", language=language)
    page = reviewer.get(reverse("run", args=[project.slug, run.pk])).content.decode()
    assert page.count('class="call-prompt"') == LLMCall.objects.filter(run=run).count()
    assert "本书写作手册" in page and label in page
    assert "评分细则" in page  # the judge's call, rubric included
    outsider = Client()
    outsider.force_login(make_user("outsider", staff=False))
    assert outsider.get(reverse("run", args=[project.slug, run.pk])).status_code == 404


def test_a_voice_samples_measured_figures_reach_the_bible(project):
    from projects.services.voice import voice_sample_save
    from projects.style_targets import statistical_targets
    from tests.test_voice import SAMPLE

    before = book_bible(project)
    voice_sample_save(project=project, editor=None, text=SAMPLE)
    targets = statistical_targets(project)
    bible = book_bible(project)
    assert targets["source"] == "sample" and bible != before
    assert f"平均句长约 {targets['avg_sentence_length']:g} 字" in bible
    low, high = targets["sentence_length_std_dev"]
    assert f"句长的标准差保持在 {low:g}–{high:g}" in bible
