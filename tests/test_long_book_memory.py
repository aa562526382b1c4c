"""A 280-chapter book (10 volumes, 12 characters) written through the services, with facts planted
in chapters 3–28 and contracts in chapters 160–280 that need them (#18): every fact is in the
writer's prompt for that chapter, at a distance of at least 100 chapters.

- state facts (items, a relationship, a location, an injury) reach the writer through the cast's
  state;
- events that live only in a chapter summary reach it through the memory levels, consolidated as
  the maintenance step does (archives of 5 chapters, a summary per volume, the synopsis), by the
  deterministic offline consolidator, each level sized to the chapters it covers;
- a secret written at the end of a long profile reaches it whole;
- a returning character's last scene (not a later passing mention of her name) is recalled;
- a foreshadowing item the contract names comes with its description and its history.

The prompt is rendered as the draft stage renders it (``pipeline.chapter.prompt_preview``), budget
trimming included.
"""
from __future__ import annotations

import time

import pytest

from pipeline.chapter import memory
from pipeline.llm.offline.writers import consolidate
from pipeline.chapter.prompt_preview import draft_prompt_preview
from projects.models import ArchivedSummary, Character
from projects.services.editing import story_object_create
from projects.services.memory import archived_summary_add
from tests.book_builder import commit_chapter, contract_of, plan_contracts

pytestmark = pytest.mark.django_db

CHAPTERS = 280
FILLER = "前方山路被风雪封住，众人只得绕行。"
LONG_PAST = ("## 外貌\n" + "她常穿青色布衣，袖口绣着细小的竹叶纹样。" * 8
             + "\n\n## 经历\n" + "少年时随父亲走遍北境各州。" * 12)

# slug, name, profile; the secret sits past the first 400 characters
SECRETS = {
    "su-wan": ("苏晚", "北境药庐的女医，十九岁。", "苏晚是星火宗宗主的遗孤，体内封着最后一缕星火。"),
    "ye-qing": ("叶青", "断桥边的棋客，来历不明。", "叶青正是当年出卖星火宗的内应，每年清明都去宗门废墟祭拜。"),
    "han-shuang": ("韩霜", "镖局的女镖头，使双刀。", "韩霜的亲弟弟死在赵家手里，她接近林枫只为借刀复仇。"),
}
OTHERS = {"gu-yun": "顾云", "mo-li": "莫离", "bai-ye": "白夜", "shen-mo": "沈默", "tang-yi": "唐一", "xu-lan": "许岚"}

# chapter planted: (ops, the chapter whose contract needs it, its cast beside lin-feng, expected text)
STATE_FACTS = {
    3: ([{"op": "set", "path": "characters.han-shuang.items", "value": ["青铜钥匙"]}], 160, "han-shuang", "青铜钥匙"),
    9: ([{"op": "set", "path": "characters.gu-yun.location", "value": "断剑崖"}], 180, "gu-yun", "断剑崖"),
    14: ([{"op": "set", "path": "characters.mo-li.relationships.lin-feng", "value": 77}], 210, "mo-li",
         '"relationships": {"lin-feng": 77}'),
    22: ([{"op": "set", "path": "characters.bai-ye.items", "value": ["半张星图"]}], 240, "bai-ye", "半张星图"),
    28: ([{"op": "set", "path": "characters.han-shuang.injury", "value": "左臂旧伤未愈"}], 280, "han-shuang",
         "左臂旧伤未愈"),
}
# chapter: (its summary's event, the chapter that needs it)
SUMMARY_FACTS = {
    4: ("林枫在古井底摸到一块刻着星纹的石板", 150),
    11: ("陈老把星火诀的残页烧成灰，只留下最后一行", 200),
    19: ("赵明在雪夜里放走了被俘的星火宗弟子", 250),
    26: ("林枫答应替沈默守住魔都地下钱庄的秘密", 275),
}
# the returning characters: (their scene, a passing mention of the name, their return)
RETURNS = {"su-wan": (17, 100, 200), "ye-qing": (24, 120, 260)}
SCENES = {17: "苏晚在药庐为林枫解毒，留下一枚银针", 24: "叶青在断桥上与林枫对弈，故意输了一局",
          100: "林枫路过药庐旧址，想起苏晚说过的话", 120: "茶馆里有人提起叶青的棋局"}
FORESHADOW_TARGET = 270


def _summary(number: int) -> str:
    event = (SUMMARY_FACTS.get(number, (None,))[0] or SCENES.get(number) or f"第{number}章，{FILLER}")
    return f"## 第 {number} 章摘要\n### 关键事件\n- {event}。\n### 故事线标记\n- storyline_id: main-arc"


def _cast(number: int) -> list[str]:
    cast = ["lin-feng"] + (["chen-lao"] if number % 7 == 0 else []) + (["zhao-ming"] if number % 13 == 0 else [])
    for _planted, (_ops, target, slug, _text) in STATE_FACTS.items():
        if number == target:
            cast.append(slug)
    for slug, (scene, _mention, back) in RETURNS.items():
        if number in (scene, back):
            cast.append(slug)
    if number in (150, 275):
        cast.append("han-shuang")  # a named character whose secret must be whole
    return list(dict.fromkeys(cast))


def _maintain(project, number: int) -> None:
    """What the maintenance step does after chapter ``number``, with the offline consolidator."""
    if (plan := memory.archive_due(project, number)) is not None:
        _store(project, plan)
    if number % 30 == 0:  # a volume's end: its summary (after the archive above), then the synopsis
        if (plan := memory.volume_due(project, number // 30, number - 29, number)) is not None:
            _store(project, plan)
        if (plan := memory.synopsis_due(project)) is not None:
            _store(project, plan)


def _store(project, plan: memory.Consolidation) -> None:
    text = consolidate({"summaries": plan.texts, "max_chars": plan.max_chars, "level": plan.level}, None)["summary"]
    archived_summary_add(project=project, level=plan.level, chapter_start=plan.chapter_start,
                         chapter_end=plan.chapter_end, text=text, volume_number=plan.volume_number,
                         supersedes=plan.supersedes)


@pytest.fixture
def long_book(sample_project):
    project = sample_project
    for slug, (name, identity, secret) in SECRETS.items():
        profile = f"{identity}\n\n## 性格\n说话不多，句句带刺。\n\n{LONG_PAST}\n\n## 秘密\n{secret}"
        story_object_create(instance=Character(project=project, slug=slug, display_name=name, profile=profile,
                                               contracts=[]), editor=None)
    for slug, name in OTHERS.items():
        story_object_create(instance=Character(project=project, slug=slug, display_name=name,
                                               profile=f"{name}，北境人。"), editor=None)
    contracts = {n: contract_of(n, _cast(n)) for n in range(1, CHAPTERS + 1)}
    contracts[FORESHADOW_TARGET] = contract_of(FORESHADOW_TARGET, _cast(FORESHADOW_TARGET),
                                               foreshadowing_updates={"ancient_prophecy": "advanced"})
    plan_contracts(project, contracts)
    return project


def test_facts_planted_early_reach_the_writer_more_than_100_chapters_later(long_book):
    project = long_book
    started = time.perf_counter()
    prompts: dict[int, str] = {}
    receipts: dict[int, dict] = {}
    live: dict[int, list] = {}  # live memory levels when the prompt was made
    targets = ({t for _ops, t, _slug, _text in STATE_FACTS.values()} | {t for _e, t in SUMMARY_FACTS.values()}
               | {back for _s, _m, back in RETURNS.values()} | {FORESHADOW_TARGET})
    for number in range(1, CHAPTERS + 1):
        if number in targets:  # the writer's prompt for this chapter, with the book as it then is
            preview = draft_prompt_preview(project, number)
            prompts[number], receipts[number] = preview.text, preview.receipt
            live[number] = list(ArchivedSummary.objects.filter(project=project, superseded=False)
                                .values_list("level", "chapter_start", "chapter_end"))
        ops = list(STATE_FACTS.get(number, ([],))[0])
        if number == 5:
            ops.append({"op": "foreshadow", "path": "ancient_prophecy", "value": "planted",
                        "detail": "石碑上刻着预言的前半句"})
        if number == 60:
            ops.append({"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced",
                        "detail": "魔都的说书人讲出了后半句"})
        commit_chapter(project, number, summary=_summary(number), ops=ops)
        _maintain(project, number)
    elapsed = time.perf_counter() - started

    for planted, (_ops, target, _slug, text) in STATE_FACTS.items():
        assert target - planted >= 100
        assert text in prompts[target], f"state fact of chapter {planted} missing at chapter {target}"
    for planted, (event, target) in SUMMARY_FACTS.items():
        assert target - planted >= 100
        assert event in prompts[target], f"summary-only event of chapter {planted} missing at chapter {target}"
    for slug, (scene, mention, back) in RETURNS.items():
        name = SECRETS[slug][0]
        assert f"{name} 上次出场（第{scene}章）：## 第 {scene} 章摘要" in prompts[back]
        assert SCENES[scene] in prompts[back]
        assert f"上次出场（第{mention}章）" not in prompts[back]
        assert SECRETS[slug][2] in prompts[back], f"{name}'s secret is not whole at chapter {back}"
    assert SECRETS["han-shuang"][2] in prompts[150] and SECRETS["han-shuang"][2] in prompts[280]
    assert "远古预言暗示主角命运" in prompts[FORESHADOW_TARGET]
    assert "石碑上刻着预言的前半句" in prompts[FORESHADOW_TARGET] \
        and "魔都的说书人讲出了后半句" in prompts[FORESHADOW_TARGET]

    # bounded: the whole prompt fits the writer's budget untrimmed, every memory level is listed
    for number, receipt in receipts.items():
        assert receipt["total_tokens"] <= receipt["budget"] and not receipt["trimmed"], number
    late = receipts[280]["memory_levels"]
    assert [m["level"] for m in late][:3] == ["synopsis", "volume", "volume"]
    assert late[0]["chapters"] == [1, 210] and late[0]["allowed"] > memory.LEVEL_BASE_CHARS
    for number, receipt in receipts.items():  # every live level is listed, or (an archive, in a young
        listed = {(m["level"], *m["chapters"]) for m in receipt["memory_levels"]}  # book) its chapters' summaries
        shown = set(receipt["chapter_summaries"])
        for level, start, end in live[number]:
            assert (level, start, end) in listed or (level == "archive" and set(range(start, end + 1)) <= shown)
    assert elapsed < 120, f"the book took {elapsed:.0f} s"
