"""What the writer is told about the story far behind it (#18): foreshadowing tasks with what
the item is, its scope and its history; character profiles by section (a secret whole, never cut
in the middle); the last real appearance of a returning character, not the last mention of her
name; memory levels sized to the chapters they cover, each listed in the prompt receipt.
The 200-chapter book is in tests/test_long_book_memory.py."""
from __future__ import annotations

import pytest

from pipeline.chapter.context import chapter_context
from projects.models import ChangeSource, ChapterContract, StoryState
from projects.services.story_state import story_state_apply_patch

pytestmark = pytest.mark.django_db


def _delta(project, chapter: int, ops: list[dict]) -> None:
    version = StoryState.objects.get(project=project).state_version
    story_state_apply_patch(project=project, delta={"chapter": chapter, "base_state_version": version,
                                                    "storyline_id": "main-arc", "ops": ops},
                            source=ChangeSource.IMPORT)


def _contract_set(project, chapter: int, **changes) -> None:
    row = ChapterContract.objects.get(project=project, chapter=chapter)
    data = dict(row.data)
    for key, value in changes.items():
        if key == "foreshadowing_updates":
            data["postconditions"] = {**data["postconditions"], "foreshadowing_updates": value}
        else:
            data[key] = value
    ChapterContract.objects.filter(pk=row.pk).update(data=data)


# --- Foreshadowing tasks -------------------------------------------------------------------------


def test_a_named_foreshadowing_task_carries_description_scope_and_history(sample_project):
    _delta(sample_project, 1, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "planted",
                                "detail": "陈老临终前念出预言的前半句"}])
    _delta(sample_project, 2, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced",
                                "detail": "密信上出现同样的星纹"}])
    _contract_set(sample_project, 3, foreshadowing_updates={"ancient_prophecy": "advanced"})

    tasks = chapter_context(sample_project, 3).foreshadowing_tasks

    task = next(t for t in tasks if t["id"] == "ancient_prophecy")
    assert task["description"] == "远古预言暗示主角命运"
    assert task["scope"] == "long" and task["planted_chapter"] == 1
    assert task["target_resolve_range"] == [10, 20]
    assert task["history"] == [{"chapter": 1, "action": "planted", "detail": "陈老临终前念出预言的前半句"},
                               {"chapter": 2, "action": "advanced", "detail": "密信上出现同样的星纹"}]
    assert "推进" in task["instruction"]
    assert [t["id"] for t in tasks].count("ancient_prophecy") == 1  # not repeated as dormant


def test_an_item_not_yet_in_the_ledger_is_described_from_the_volume_plan(sample_project):
    _contract_set(sample_project, 1, foreshadowing_updates={"ancient_prophecy": "planted", "no-such-item": "planted"})

    tasks = {t["id"]: t for t in chapter_context(sample_project, 1).foreshadowing_tasks}

    assert tasks["ancient_prophecy"]["description"] == "远古预言暗示主角命运"
    assert tasks["ancient_prophecy"]["target_resolve_range"] == [10, 20]
    assert tasks["no-such-item"] == {"id": "no-such-item", "instruction": "本章需要埋设此伏笔"}


def test_a_long_history_keeps_the_planting_and_the_latest_events(sample_project):
    _delta(sample_project, 1, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "planted"}])
    for chapter in range(2, 12):
        _delta(sample_project, chapter, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced",
                                          "detail": "星纹" * 100}])
    _contract_set(sample_project, 3, foreshadowing_updates={"ancient_prophecy": "resolved"})

    task = chapter_context(sample_project, 3).foreshadowing_tasks[0]

    assert [e["chapter"] for e in task["history"]] == [1, 7, 8, 9, 10, 11]
    assert all(len(e.get("detail", "")) <= 80 for e in task["history"])


def test_malformed_foreshadowing_in_a_hand_edited_contract_or_plan_gives_no_task_and_no_error(sample_project):
    from projects.models import Volume

    _contract_set(sample_project, 1, foreshadowing_updates=["ancient_prophecy"])
    assert chapter_context(sample_project, 1).foreshadowing_tasks == []

    Volume.objects.filter(project=sample_project, number=1).update(foreshadowing_plan={"items": "nonsense"})
    _contract_set(sample_project, 1, foreshadowing_updates={"ancient_prophecy": "planted"})
    assert chapter_context(sample_project, 1).foreshadowing_tasks == [
        {"id": "ancient_prophecy", "instruction": "本章需要埋设此伏笔"}]


# --- Profiles by section -------------------------------------------------------------------------

PROFILE = """苏晚，北境药师之女，十九岁。

## 性格与说话
说话轻，爱用反问。

## 外貌
左眉有一道浅疤。

## 能力
""" + "能辨百草。" * 300 + """

## 秘密
她其实是星火宗宗主的遗孤，体内封着最后一缕星火。她一直瞒着林枫。"""


def test_a_named_character_gets_identity_voice_and_the_whole_secret_written_late():
    from pipeline.chapter.profile_sections import profile_for_writer

    text = profile_for_writer(PROFILE, named=True)

    assert text.startswith("苏晚，北境药师之女")
    assert "说话轻，爱用反问。" in text
    assert "她其实是星火宗宗主的遗孤，体内封着最后一缕星火。她一直瞒着林枫。" in text
    assert "左眉有一道浅疤" in text
    assert "能辨百草" not in text  # 1500 characters of abilities do not fit beside the rest: left out whole


def test_a_fallback_character_gets_a_secret_only_when_the_chapter_mentions_her():
    from pipeline.chapter.profile_sections import profile_for_writer

    assert "遗孤" not in profile_for_writer(PROFILE, named=False)
    assert "说话轻" in profile_for_writer(PROFILE, named=False)
    assert "遗孤" in profile_for_writer(PROFILE, named=False, mentioned=True)


@pytest.mark.parametrize("heading,kind", [("身份", "identity"), ("Background", "identity"), ("真实身份", "secret"),
                                          ("Secrets", "secret"), ("能力与功法", "abilities"), ("Voice", "voice"),
                                          ("说话方式", "voice"), ("外貌", "appearance"), ("杂记", "other")])
def test_section_headings_are_recognised_in_chinese_and_english(heading, kind):
    from pipeline.chapter.profile_sections import section_kind

    assert section_kind(heading) == kind


def test_a_profile_without_headings_is_whole_when_short_and_cut_at_a_sentence_end_when_long():
    from pipeline.chapter.profile_sections import PLAIN_MAX_CHARS, profile_for_writer

    assert profile_for_writer("出身北境的少年修士，执拗而聪明。", named=True) == "出身北境的少年修士，执拗而聪明。"
    long = "他走过雪原。" * 200
    text = profile_for_writer(long, named=True)
    assert len(text) <= PLAIN_MAX_CHARS + 1 and text.endswith("他走过雪原。…")
    assert profile_for_writer("", named=True) == ""


def test_hostile_profiles_stay_bounded():
    from pipeline.chapter.profile_sections import SECTION_HARD_MAX, profile_for_writer

    many = "\n".join(f"## 秘密{i}\n" + "秘" * 2000 for i in range(50))
    assert len(profile_for_writer(many, named=True)) <= SECTION_HARD_MAX + 100
    one = "## 身份\n" + "甲" * 100_000
    assert len(profile_for_writer(one, named=True)) <= SECTION_HARD_MAX + 20
    assert profile_for_writer("##\n###   \n# 身份\n", named=True) == "##\n###   \n# 身份"  # no section: as written


def test_the_writer_gets_the_sections_and_the_contracts_whole(sample_project):
    from pipeline.chapter.stages import draft
    from projects.models import Character

    Character.objects.filter(project=sample_project, slug="lin-feng").update(
        profile=PROFILE, contracts=[{"id": "C-LIN-FENG-001", "type": "personality", "rule": "遇事先怀疑，再行动",
                                     "valid_from_chapter": 1, "valid_until": None, "exceptions": ["面对陈老时"]}])

    ctx = chapter_context(sample_project, 1)
    cast = next(b for b in draft.blocks(ctx, []) if b.name == "cast").content

    assert "体内封着最后一缕星火。她一直瞒着林枫。" in cast
    assert "遇事先怀疑，再行动（例外：面对陈老时）" in cast


# --- Recall by appearance ------------------------------------------------------------------------


def test_a_returning_character_recalls_her_real_scene_not_a_later_passing_mention(sample_project):
    from tests.book_builder import commit_chapter, contract_of, plan_contracts

    plan_contracts(sample_project, {n: contract_of(n, ["lin-feng", "chen-lao"] if n in (5, 30) else ["lin-feng"])
                                    for n in range(1, 31)})
    for number in range(1, 30):
        summary = {5: "陈老在雪原木屋传授林枫星火诀的第一式。",
                   20: "林枫在魔都酒楼里偶然想起陈老说过的话。"}.get(number, f"林枫赶路，第{number}天。")
        ops = [{"op": "set", "path": "characters.zhao-ming.location", "value": "魔都"}] if number == 8 else []
        commit_chapter(sample_project, number, summary=summary, ops=ops)
    plan_contracts(sample_project, {30: contract_of(30, ["lin-feng", "chen-lao", "zhao-ming"])})

    recalled = chapter_context(sample_project, 30).recall

    assert ("陈老", 5, "陈老在雪原木屋传授林枫星火诀的第一式。") in recalled
    assert ("赵明", 8, "林枫赶路，第8天。") in recalled  # his state changed there: he was in that chapter
    assert all(name != "林枫" for name, _n, _t in recalled)  # in every chapter: nothing to recall


def test_appearances_go_with_a_rolled_back_chapter_and_are_rebuilt_after_an_import(sample_project):
    from projects.models import CharacterAppearance
    from projects.services.appearances import character_appearances_add, character_appearances_rebuild
    from tests.book_builder import commit_chapter, contract_of, plan_contracts

    plan_contracts(sample_project, {1: contract_of(1, ["lin-feng", "陈老", "nobody", "__proto__"])})
    commit_chapter(sample_project, 1, summary="雪原。",
                   ops=[{"op": "set", "path": "characters.zhao-ming.mood", "value": "怒"},
                        {"op": "set", "path": "world_state.weather", "value": "雪"}])
    rows = set(CharacterAppearance.objects.filter(project=sample_project).values_list(
        "chapter_number", "character_slug", "source"))
    # names resolve to slugs; unknown keys and world ops are no appearance
    assert rows == {(1, "lin-feng", "contract"), (1, "chen-lao", "contract"), (1, "zhao-ming", "delta")}

    chapter = sample_project.chapters.get(number=1)
    character_appearances_add(project=sample_project, chapter=chapter, slugs=["zhao-ming"], source="ledger")
    CharacterAppearance.objects.filter(project=sample_project, source="contract").delete()
    assert character_appearances_rebuild(project=sample_project) == 3
    assert CharacterAppearance.objects.filter(project=sample_project).count() == 4  # the ledger's row kept
    with pytest.raises(ValueError):
        character_appearances_add(project=sample_project, chapter=chapter, slugs=["x"], source="rumour")

    chapter.delete()
    assert not CharacterAppearance.objects.filter(project=sample_project).exists()


# --- Memory levels sized to what they cover ------------------------------------------------------


def test_a_level_covering_more_chapters_may_be_longer_up_to_a_bound():
    from pipeline.chapter.memory import LEVEL_BASE_CHARS, LEVEL_MAX_CHARS, level_chars

    assert level_chars(5) == LEVEL_BASE_CHARS
    assert LEVEL_BASE_CHARS < level_chars(30) < level_chars(60) < level_chars(210) <= LEVEL_MAX_CHARS
    assert level_chars(5000) == LEVEL_MAX_CHARS and level_chars(0) == LEVEL_BASE_CHARS


def test_the_levels_together_stay_within_the_writers_memory_bound():
    from pipeline.chapter.memory import MEMORY_MAX_CHARS, levels_for_writer

    sentence = "林枫在第三章把玉佩交给了苏晚。"
    levels = [("synopsis", 1, 900, sentence * 400), ("volume", 901, 930, sentence * 100),
              ("volume", 931, 960, sentence * 100)] + [("archive", s, s + 4, sentence * 40) for s in (961, 966, 971)]
    slots = levels_for_writer(levels)

    assert sum(len(s.text) for s in slots) <= MEMORY_MAX_CHARS + len(slots)
    assert [s.allowed for s in slots[3:]] == [400, 400, 400]  # the recent archives keep their size
    assert slots[0].allowed > slots[1].allowed  # the synopsis stands for more chapters
    assert all(s.text.endswith("。…") for s in slots)  # cut after a whole sentence
    assert levels_for_writer([]) == []


def test_the_consolidator_is_told_the_size_and_the_receipt_lists_every_level(sample_project):
    from pipeline.llm.offline.writers import consolidate
    from pipeline.chapter.memory import Consolidation, level_chars
    from pipeline.chapter.stages import draft
    from projects.services.memory import archived_summary_add
    from tests.book_builder import commit_chapter

    plan = Consolidation("synopsis", 1, 210, ["甲事。；乙事"] * 400, [])
    assert plan.max_chars == level_chars(210)
    summary = consolidate({"summaries": ["- 事" + str(i) for i in range(999)], "max_chars": 900}, None)["summary"]
    assert 850 <= len(summary) <= 900

    for number in (1, 2):
        commit_chapter(sample_project, number, summary=f"第{number}章。")
    archived_summary_add(project=sample_project, level="synopsis", chapter_start=1, chapter_end=1,
                         text="很久以前的一件事。" * 100)
    archived_summary_add(project=sample_project, level="archive", chapter_start=2, chapter_end=2, text="近事。")
    ctx = chapter_context(sample_project, 3)

    receipt = draft.memory_receipt(ctx.memory_levels)["memory_levels"]
    # a young book's room holds chapter 2's own summary instead of its archive (#17 §4), never
    # instead of the synopsis
    assert [(m["level"], m["chapters"]) for m in receipt] == [("synopsis", [1, 1])]
    assert ctx.recent_summaries == [(2, "第2章。")]
    assert receipt[0]["chars"] == 397  # whole sentences within 400
    assert receipt[0]["stored_chars"] == 900 and receipt[0]["allowed"] == 400
    assert "[全书梗概 第1–1章] 很久以前的一件事。" in draft.memory_text(ctx.memory_levels)


def test_the_migration_backfills_the_appearances_of_chapters_committed_before_it(sample_project):
    import importlib

    from django.apps import apps

    from projects.models import CharacterAppearance
    from tests.book_builder import commit_chapter, contract_of, plan_contracts

    plan_contracts(sample_project, {1: contract_of(1, ["lin-feng", "chen-lao"]), 2: contract_of(2, ["lin-feng"])})
    commit_chapter(sample_project, 1, summary="一。")
    commit_chapter(sample_project, 2, summary="二。", ops=[{"op": "set", "path": "characters.zhao-ming.location",
                                                          "value": "魔都"}])
    written = set(CharacterAppearance.objects.values_list("chapter_number", "character_slug", "source"))
    CharacterAppearance.objects.all().delete()  # as before the migration

    importlib.import_module("projects.migrations.0006_character_appearances").backfill(apps, None)

    assert set(CharacterAppearance.objects.values_list("chapter_number", "character_slug", "source")) == written
    assert (2, "zhao-ming", "delta") in written


def test_a_young_books_memory_room_is_filled_with_its_chapters_own_summaries():
    """#17 §4: the summaries of archived chapters come back, newest first, while the room has space,
    so chapter 30's prompt is about as big as chapter 1000's; an archive whose chapters all came back
    goes, and the total stays within the room."""
    from pipeline.jacquard.tokens import estimate_tokens
    from pipeline.chapter.memory import WRITER_MEMORY_TOKENS, memory_for_writer

    summary = "林枫在雪原上追查预言，与苏晚起了争执，最后决定南下。" * 9  # ~250 characters, a real summary's size
    recent = [(n, summary) for n in range(21, 30)]
    archives = [("archive", s, s + 4, "五章的要点。" * 60) for s in (1, 6, 11, 16)]
    earlier = [(n, summary) for n in range(20, 0, -1)]
    shown, slots = memory_for_writer(archives, recent, earlier)
    numbers = [n for n, _text in shown]
    assert numbers == sorted(numbers) and numbers[-9:] == list(range(21, 30))
    assert 16 in numbers and ("archive", 16, 20) not in {(s.level, s.chapter_start, s.chapter_end) for s in slots}
    total = sum(estimate_tokens(t) for _n, t in shown) + sum(estimate_tokens(s.text) for s in slots)
    assert WRITER_MEMORY_TOKENS - estimate_tokens(summary) < total <= WRITER_MEMORY_TOKENS
    assert slots[0].chapter_start == 1  # the oldest archive is still there


def test_an_old_books_synopsis_and_volumes_are_never_replaced_by_detail():
    from pipeline.chapter.memory import memory_for_writer

    levels = [("synopsis", 1, 900, "很久以前的事。" * 200), ("volume", 901, 930, "卷事。" * 300)]
    recent = [(n, "近事。" * 20) for n in range(931, 935)]
    earlier = [(930, "第930章。"), (929, "第929章。")]
    shown, slots = memory_for_writer(levels, recent, earlier)
    assert [s.level for s in slots] == ["synopsis", "volume"]
    assert [n for n, _t in shown] == list(range(931, 935))  # chapter 930 lies in a volume summary
