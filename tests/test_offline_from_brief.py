"""The offline backend writes from the brief's own words (#16): a quick start from a brief about a
noodle shop in a wasteland gets a wasteland and a noodle shop, not the demo novel's cultivators;
the same brief gives the same book; and no sentence repeats within an offline chapter."""
from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest

from pipeline.questions.answers import gate_answer_submit
from pipeline.llm.offline.brief_words import brief_words
from pipeline.llm.offline.writers import WRITERS
from pipeline.models import GateQuestion, GateStatus
from pipeline.book.orchestrator import advance
from pipeline.book.quickstart import world_errors
from projects.models import Character, ExtraFile, WorldDoc, WorldRule
from projects.services.projects import project_create

NOODLES = "废土上的一家面馆，老板娘收留了一个失忆的机械少年。"
DEMO_WORDS = ("林枫", "苏婉", "赵明", "陈老", "星火", "宗门", "灵力", "北境", "雪原", "魔都")
BRIEF_WORDS = ("废土", "面馆", "老板娘", "机械")


def sentences(text: str) -> list[str]:
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return [s.strip() for s in re.findall(r"[^。！？\n]+[。！？]”?", body) if s.strip()]


def test_jieba_picks_the_briefs_places_roles_and_things():
    words = brief_words(NOODLES)
    assert words.places == ("废土", "面馆") and words.roles == ("老板娘",) and "机械" in words.things
    assert brief_words("北境少年林枫在雪原上救下一位神秘老人。").people == ("林枫",)


def test_the_world_is_made_of_the_briefs_words_and_stays_valid():
    texts = WRITERS["quickstart:world"]({"brief": NOODLES}, random.Random(1))
    rules, docs, lines = (json.loads(texts[tag]) for tag in ("rules", "world_docs", "storylines"))
    assert world_errors(rules, docs, lines) == []
    everything = texts["rules"] + texts["world_docs"]
    assert "废土" in everything and "面馆" in everything and "机械" in everything
    assert not [word for word in DEMO_WORDS if word in everything]
    # deterministic from the brief, whatever the call's own seed
    assert WRITERS["quickstart:world"]({"brief": NOODLES}, random.Random(99)) == texts
    other = WRITERS["quickstart:world"]({"brief": "民国上海，一个落魄侦探接下了富商女儿失踪的案子。"}, random.Random(1))
    assert "上海" in other["world_docs"] and "废土" not in other["world_docs"]


def test_the_cast_is_named_and_placed_from_the_brief():
    cast = json.loads(WRITERS["quickstart:characters"]({"brief": NOODLES, "count": 3}, random.Random(1))["characters"])
    assert len(cast) == 3 and len({c["id"] for c in cast}) == 3
    profiles = "".join(c["profile"] for c in cast)
    assert "老板娘" in profiles and "废土" in profiles and "面馆" in profiles
    assert not [word for word in DEMO_WORDS if word in json.dumps(cast, ensure_ascii=False)]
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c["id"]) for c in cast)
    named = json.loads(WRITERS["quickstart:characters"]({"brief": "少年林枫在雪原上救下一位神秘老人。"},
                                                        random.Random(1))["characters"])
    assert named[0]["display_name"] == "林枫" and named[0]["id"] == "lin-feng"


@pytest.mark.parametrize("seed", range(12))
def test_no_sentence_repeats_within_an_offline_chapter(seed):
    cast = [{"slug": "a", "display_name": "江安"}, {"slug": "b", "display_name": "宋禾"},
            {"slug": "c", "display_name": "温照"}][: 1 + seed % 3]
    slice_ = {"chapter": seed + 1, "title": "面馆", "characters": cast, "objectives": ["收留少年", "修好招牌"],
              "place": "", "brief": NOODLES if seed % 2 else "", "target_chars": 3000 + 400 * (seed % 4)}
    chapter = WRITERS["draft"](slice_, random.Random(seed))["chapter"]
    repeated = [s for s, n in Counter(sentences(chapter)).items() if n > 1]
    assert repeated == []
    assert len(chapter) >= 2500 and len(sentences(chapter)) > 60


@pytest.mark.django_db(transaction=True)  # the steps are queued on commit and run eagerly
def test_a_quick_start_from_a_noodle_shop_brief_writes_about_the_noodle_shop(make_user, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
    owner = make_user("owner")
    project = project_create(owner=owner, slug="noodles", title="废土面馆", brief=NOODLES)
    advance(project_id=project.pk, user=owner, step="quickstart:world")
    question = GateQuestion.objects.get(project=project, status=GateStatus.OPEN)
    gate_answer_submit(question_id=question.pk, answers={"platform": "fanqie", "genre": "kehuan"}, user=owner)

    docs = "".join(WorldDoc.objects.filter(project=project).values_list("content", flat=True))
    rules = "".join(WorldRule.objects.filter(project=project).values_list("rule", flat=True))
    people = list(Character.objects.filter(project=project).values_list("display_name", "profile"))
    trial = ExtraFile.objects.get(project=project, path="logs/quickstart/trial-chapter.md").content
    assert len(people) == 3
    for text in (docs, rules, "".join(p for _, p in people)):
        assert [w for w in BRIEF_WORDS if w in text], text
    written = docs + rules + json.dumps(people, ensure_ascii=False) + trial
    assert [w for w in DEMO_WORDS if w in written] == []
    assert any(place in trial for place in ("废土", "面馆"))
    assert [s for s, n in Counter(sentences(trial)).items() if n > 1] == []
