"""The facts ledger over a long book (issue #18, done-when): 280 chapters committed through the
project's own commit service, facts of every kind planted in chapters 3-30, contracts at chapters
150-280 that bring those characters (or that foreshadowing) back, and every fact they need is in
the writer's rendered prompt, 120 or more chapters after it was established; closed facts and
facts of people not in the scene are not, and the block stays within its budget.

The prompt is rendered as the draft stage renders it: its blocks, the project's draft.j2 and the
Jacquard plugins up to the assembled request (only the LLM call is left out)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipeline.chapter import memory
from pipeline.chapter.context import ChapterContext, chapter_context, context_restore, context_snapshot
from pipeline.chapter.facts_recall import FACTS_BUDGET, open_facts_for
from pipeline.jacquard.runner import Assembler, CallContext, CallSpec, Planner, SkeinBuilder, TemplateRenderer
from pipeline.jacquard.tokens import estimate_tokens
from pipeline.prompts.overrides import prompt_template_source
from pipeline.chapter.stages import draft
from pipeline.chapter.stages.base import skein_of
from pipeline.chapter.stages.maintain import _open_facts
from pipeline.jacquard.skein import PromptBlock
from projects.models import ChapterContract, Character, StoryFact, Volume
from projects.sample_project import sample_project_create
from projects.services.chapter_commit import StagedChapter, chapter_commit_story
from projects.services.editing import story_object_create

pytestmark = pytest.mark.django_db

PEOPLE = {"su-wan": "苏婉", "mo-yu": "墨羽", "bai-shi": "白石", "he-qing": "何青"}
# (chapter, kind, characters, text, foreshadowing): one fact of every kind, planted early
PLANTED = [
    (3, "promise", ["lin-feng", "chen-lao"], "林枫在雪原向陈老立誓：三年之内把星火残卷送回宗门旧址", []),
    (5, "debt", ["zhao-ming", "lin-feng"], "赵明在断崖渡口欠下林枫一条命，亲口说日后必还", []),
    (8, "injury", ["su-wan"], "苏婉右手经脉被寒毒所伤，从此不能握剑", []),
    (11, "death", ["bai-shi", "su-wan"], "白石为救苏婉死在幽暗森林，尸骨葬在老槐树下", []),
    (14, "departure", ["zhao-ming"], "赵明离开魔都世家，发誓不再踏进赵府大门", []),
    (18, "identity", ["mo-yu"], "墨羽向林枫亮明身份：他是星火宗最后一任宗主的儿子", []),
    (22, "secret", ["mo-yu", "su-wan"], "苏婉知道墨羽身上藏着宗门密钥，却瞒着所有人", []),
    (26, "other", ["he-qing"], "何青手里的半块玉牌能打开星火旧址的石门", ["jade-token"]),
    (30, "promise", ["lin-feng"], "林枫答应雪原村民：开春前赶走北境的狼群", []),
]
CLOSED = (4, "debt", ["lin-feng", "chen-lao"], "陈老欠林枫一壶酒", [])  # planted, then paid in chapter 40
# Each contract: (chapter, cast, foreshadowing, the planted facts it needs by chapter)
CONTRACTS = [
    (150, ["lin-feng", "chen-lao"], [], [3, 5, 30]),
    (200, ["zhao-ming"], [], [5, 14]),
    (240, ["su-wan", "mo-yu"], [], [8, 11, 18, 22]),
    (280, ["lin-feng"], ["jade-token"], [3, 5, 26, 30]),
]
LAST = 279


def _cast_and_volumes(project):
    for slug, name in PEOPLE.items():
        story_object_create(instance=Character(project=project, slug=slug, display_name=name,
                                               profile=f"{name}，北境人。"), editor=None)
    for number in range(2, 11):
        story_object_create(instance=Volume(project=project, number=number, title=f"第{number}卷"), editor=None)
    for chapter, cast, foreshadowing, _needs in CONTRACTS:
        volume = Volume.objects.get(project=project, number=(chapter - 1) // 30 + 1)
        Volume.objects.filter(pk=volume.pk).update(outline=volume.outline + (
            f"\n\n### 第 {chapter} 章: 重逢\n- **Storyline**: main-arc\n- **POV**: {cast[0]}\n"
            "- **Location**: 星火旧址\n- **Conflict**: 旧事重提\n"))
        story_object_create(instance=ChapterContract(project=project, volume=volume, chapter=chapter, data={
            "chapter": chapter, "storyline_id": "main-arc", "excitement_type": "setup",
            "preconditions": {"character_states": {slug: {} for slug in cast}, "required_world_rules": []},
            "objectives": [{"id": f"OBJ-{chapter}-1", "type": "plot", "required": True, "description": "旧人重逢"}],
            "postconditions": {"state_changes": {}, "foreshadowing_updates": {f: "resolved" for f in foreshadowing}},
            "acceptance_criteria": ["人物言行与已确立的事实一致"]}), editor=None)


def _facts_of(chapter: int) -> dict | None:
    new = [{"kind": kind, "text": text, "characters": chars, "foreshadowing": fs}
           for number, kind, chars, text, fs in [*PLANTED, CLOSED] if number == chapter]
    if chapter % 7 == 0:  # the book goes on: lasting facts of passers-by, which no later scene needs
        new.append({"kind": "other", "text": f"第{chapter}章的过客在渡口留下一封信", "characters": ["he-qing"]
                    if chapter < 60 else [], "foreshadowing": []})
    if 100 <= chapter < 140 and chapter % 4 == 0:  # and more about the hero: the block must choose
        new.append({"kind": "injury", "text": f"林枫在第{chapter}章的混战里擦伤了额头", "characters": ["lin-feng"],
                    "foreshadowing": []})
    closed = [{"id": "fact-002", "status": "fulfilled", "note": "陈老补上了那壶酒"}] if chapter == 40 else []
    return {"new": [n for n in new if n["characters"] or n["kind"] != "other"], "closed": closed}


def _commit(project, number: int, state_version: int) -> None:
    chapter_commit_story(project=project, staged=StagedChapter(
        number=number, volume_number=(number - 1) // 30 + 1, storyline_slug="main-arc", title=f"第{number}章",
        text=f"第{number}章。林枫赶路。", summary=f"## 第 {number} 章摘要\n### 关键事件\n- 赶路。",
        delta={"chapter": number, "base_state_version": state_version, "storyline_id": "main-arc",
               "ops": [{"op": "set", "path": "world_state.time_marker", "value": f"第{number}日"}]},
        memory=None, evaluation={}, log={}, facts=_facts_of(number)))


def draft_prompt(ctx: ChapterContext) -> str:
    """The draft stage's request as it would be sent: its own parts (``draft.prompt_parts``), draft.j2,
    templates rendered, fitted to the stage's budget (the runner's plugins before the call)."""
    parts = draft.prompt_parts(ctx, [])
    task = PromptBlock("task", "user", template=prompt_template_source(project_id=ctx.project.pk, name="draft.j2"),
                       required=True, priority=100)
    spec = CallSpec(stage="draft", slice=parts["slice_"], build_skein=lambda _s: skein_of([*parts["blocks"], task]),
                    call_key="test", tags=["chapter"], template_context=parts["template_context"])
    call = CallContext(spec=spec)
    for plugin in (Planner(), SkeinBuilder(), TemplateRenderer(), Assembler()):
        plugin.run(call)
    assert not any(t.name == "open-facts" for t in call.assembled.trimmed)
    texts = [block.text for block in call.assembled.system]
    texts += [block.text for message in call.assembled.messages for block in message.blocks]
    return "\n".join(texts)


@pytest.fixture(scope="module")
def long_book(django_db_setup, django_db_blocker):
    """Built once for the module (about 15 s) inside a transaction rolled back at the end."""
    from django.db import transaction

    with django_db_blocker.unblock(), transaction.atomic():
        project = sample_project_create()
        _cast_and_volumes(project)
        contexts = {}
        version = project.story_state.state_version
        for number in range(1, LAST + 1):
            if number in {c[0] for c in CONTRACTS}:
                contexts[number] = chapter_context(project, number)
            _commit(project, number, version)
            version += 1
        contexts[280] = chapter_context(project, 280)
        yield project, contexts
        transaction.set_rollback(True)


def test_every_planted_fact_is_in_the_writers_prompt_a_hundred_chapters_later(long_book):
    project, contexts = long_book
    assert project.chapters.count() == LAST
    planted_text = {chapter: text for chapter, _kind, _chars, text, _fs in [*PLANTED, CLOSED]}
    by_chapter = {f.chapter: f for f in StoryFact.objects.filter(project=project, chapter__lte=30)
                  if f.text == planted_text.get(f.chapter)}
    assert {by_chapter[c].kind for c, *_ in PLANTED} == {"promise", "debt", "injury", "death", "departure",
                                                          "identity", "secret", "other"}
    for chapter, cast, _fs, needs in CONTRACTS:
        ctx = contexts[chapter]
        prompt = draft_prompt(ctx)
        for planted in needs:
            fact = by_chapter[planted]
            assert chapter - planted >= 100
            assert fact.text in prompt and f"[{fact.fact_id}]" in prompt, (chapter, fact.fact_id)
        assert by_chapter[4].text not in prompt  # paid back in chapter 40: no longer open
        assert "过客在渡口" not in prompt  # nobody in this scene
        assert sum(estimate_tokens(f["line"]) + 1 for f in ctx.open_facts) <= FACTS_BUDGET


def test_the_ranking_puts_the_scenes_shared_facts_first_and_respects_a_small_budget(long_book):
    project, _contexts = long_book
    facts = open_facts_for(project, 150, ["lin-feng", "chen-lao"], [], storyline="main-arc")
    assert facts[0]["text"] == PLANTED[0][3]  # the promise binds both people of the scene
    assert [f["chapter"] for f in facts[:3]] == [3, 5, 30]
    small = open_facts_for(project, 150, ["lin-feng", "chen-lao"], [], budget=80, storyline="main-arc")
    assert small[0]["chapter"] == 3 and len(small) < len(facts)  # a shorter, lower fact may fill the rest
    assert sum(estimate_tokens(f["line"]) + 1 for f in small) <= 80
    assert open_facts_for(project, 150, [], [], storyline="") == []


def test_the_context_snapshot_keeps_the_open_facts(long_book):
    project, contexts = long_book
    ctx = contexts[240]
    restored = context_restore(project, context_snapshot(ctx))
    assert restored is not None and restored.open_facts == ctx.open_facts


def test_the_consolidator_is_given_the_open_facts_of_the_chapters_it_folds(long_book):
    project, contexts = long_book
    ctx = SimpleNamespace(project=project, chapter=LAST, all_characters=contexts[150].all_characters)
    plan = memory.Consolidation("archive", 1, 30, ["……"], [])
    lines = _open_facts(ctx, plan)
    assert any(PLANTED[0][3] in line and "林枫、陈老" in line for line in lines)
    assert not any(CLOSED[3] in line for line in lines)  # paid back: nothing to keep
    assert len(lines) == len(PLANTED) + 4  # and the passers-by of chapters 7, 14, 21 and 28 (he-qing)
