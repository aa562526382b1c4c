"""The facts ledger in the chapter pipeline (issue #18): the summarizer returns the chapter's lasting
facts and the open ones it closed, checked strictly (what does not hold is dropped with a note,
never a failed stage); the commit stores them with the chapter, in its transaction; a rollback of
the chapter takes them back; the offline backend plays its part from the request's slice."""
from __future__ import annotations

import json
import random

import pytest

from pipeline.chapter.facts_output import MAX_NEW_FACTS, facts_from_output
from pipeline.llm.offline.writers import WRITERS
from pipeline.models import PipelineRun
from pipeline.runtime.runs import chapter_run_start
from projects.models import StoryFact
from projects.sample_project import sample_project_create
from projects.services.chapter_rollback import chapter_rollback_latest
from projects.services.facts import story_fact_create, story_facts_apply_commit, story_facts_undo_chapter

CAST = {"lin-feng": "林枫", "chen-lao": "陈老", "zhao-ming": "赵明"}


def parse(body, *, open_ids=frozenset({"fact-001"})):
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return facts_from_output(text, characters=CAST, storylines={"main-arc", "side-line"}, storyline="main-arc",
                             open_ids=set(open_ids))


# --- the summarizer's output, checked ---------------------------------------------------------------


def test_a_well_formed_answer_is_kept_and_display_names_become_ids():
    facts, notes = parse({"new": [{"kind": "promise", "text": " 林枫向陈老立誓 ",
                                   "characters": ["lin-feng", "陈老"], "foreshadowing": ["ancient_prophecy"]}],
                          "closed": [{"id": "fact-001", "status": "cancelled", "note": "赵明撕毁约定"}]})
    assert notes == []
    assert facts == {"new": [{"kind": "promise", "text": "林枫向陈老立誓", "characters": ["lin-feng", "chen-lao"],
                              "storyline": "main-arc", "foreshadowing": ["ancient_prophecy"]}],
                     "closed": [{"id": "fact-001", "status": "cancelled", "note": "赵明撕毁约定"}]}


@pytest.mark.parametrize("text", [None, "", "   "])
def test_no_facts_tag_means_no_facts(text):
    assert parse(text if text is not None else "") == ({"new": [], "closed": []}, [])


@pytest.mark.parametrize("text, note", [
    ('{"new": [', "not JSON"),
    ("[1, 2]", "must be"),
    ('{"new": "林枫受伤"}', "must be"),
    ('{"closed": {"id": "fact-001"}}', "must be"),
])
def test_malformed_answers_give_no_facts_and_a_note(text, note):
    facts, notes = parse(text)
    assert facts == {"new": [], "closed": []}
    assert len(notes) == 1 and note in notes[0]


def test_bad_items_are_dropped_one_by_one_with_a_note_saying_why():
    good = {"kind": "injury", "text": "赵明断了一臂", "characters": ["zhao-ming"]}
    facts, notes = parse({"new": [
        good,
        {"kind": "prophecy", "text": "预言", "characters": ["lin-feng"]},  # unknown kind
        {"kind": "death", "text": "", "characters": ["lin-feng"]},  # no text
        {"kind": "death", "text": "长" * 301, "characters": ["lin-feng"]},  # too long
        {"kind": "debt", "text": "欠债", "characters": ["无名氏"]},  # nobody of this book
        {"kind": "secret", "text": "秘密", "characters": ["lin-feng", "ghost"], "storyline": "no-line"},
        {"kind": "secret", "text": "秘密", "characters": "lin-feng"},  # not a list
        "林枫受伤",
    ], "closed": [
        {"id": "fact-999", "status": "fulfilled"},  # not an open fact
        {"id": "fact-001", "status": "resolved"},  # not a closing status
        {"id": "fact-001", "status": "fulfilled"},
        {"id": "fact-001", "status": "cancelled"},  # twice
        {"status": "fulfilled"},
        "fact-001",
    ]})
    assert [f["text"] for f in facts["new"]] == ["赵明断了一臂", "秘密"]
    assert facts["new"][1]["characters"] == ["lin-feng"] and facts["new"][1]["storyline"] == "main-arc"
    assert facts["closed"] == [{"id": "fact-001", "status": "fulfilled", "note": ""}]
    joined = "\n".join(notes)
    for expected in ("new[1]: unknown kind 'prophecy'", "new[2]: the text", "new[3]: the text",
                     "new[4]: it binds no character", "new[5]: unknown characters 'ghost'",
                     "new[5]: unknown storyline 'no-line'", "new[6]: characters and foreshadowing",
                     "new[7]: not an object", "closed[0]: 'fact-999' is not an open fact",
                     "closed[1]: status must be", "closed[3]: fact-001 is closed twice", "closed[4]: needs an id",
                     "closed[5]: needs an id"):
        assert expected in joined


def test_a_flood_of_new_facts_is_capped():
    facts, notes = parse({"new": [{"kind": "other", "text": f"事{i}", "characters": ["lin-feng"]}
                                  for i in range(20)]})
    assert len(facts["new"]) == MAX_NEW_FACTS and "only the first" in notes[0]


def test_a_code_fence_around_the_json_is_forgiven():
    facts, _notes = parse('```json\n{"new": [{"kind": "departure", "text": "陈老离开雪原", '
                          '"characters": ["chen-lao"]}]}\n```')
    assert facts["new"][0]["kind"] == "departure"


def test_the_offline_summarizer_plants_and_closes_facts_from_its_slice():
    summarize = WRITERS["summarize"]
    cast = [{"slug": "lin-feng", "display_name": "林枫"}, {"slug": "chen-lao", "display_name": "陈老"}]
    first = json.loads(summarize({"chapter": 4, "characters": cast, "storyline_id": "main-arc"},
                                 random.Random(1))["facts"])
    assert first["closed"] == [] and len(first["new"]) == 1
    assert first["new"][0]["characters"] == ["lin-feng", "chen-lao"] and "林枫" in first["new"][0]["text"]
    later = json.loads(summarize({"chapter": 6, "characters": cast, "open_facts": [
        {"id": "fact-002", "kind": "promise", "text": "…", "characters": ["lin-feng"]}]}, random.Random(1))["facts"])
    assert later == {"new": [], "closed": [{"id": "fact-002", "status": "fulfilled", "note": "第6章兑现"}]}
    facts, notes = parse(json.dumps(first), open_ids=set())
    assert notes == [] and facts["new"] == [first["new"][0]]  # what it writes passes the stage's checks


# --- the commit and the rollback --------------------------------------------------------------------


@pytest.mark.django_db
def test_the_commit_numbers_new_facts_closes_open_ones_and_the_undo_takes_both_back(sample_project):
    kept = story_fact_create(project=sample_project, editor=None, kind="promise", text="林枫答应护送陈老",
                             chapter=1, characters=["lin-feng", "chen-lao"])
    done = story_facts_apply_commit(project=sample_project, chapter=5, storyline_slug="main-arc", facts={
        "new": [{"kind": "death", "text": "陈老死于雪夜", "characters": ["chen-lao", "deleted-meanwhile"]},
                {"kind": "debt", "text": "x" * 301, "characters": ["lin-feng"]}],
        "closed": [{"id": kept.fact_id, "status": "fulfilled", "note": "送到了"},
                   {"id": "fact-404", "status": "cancelled"}],
    })
    assert [(f.fact_id, f.origin, f.characters, f.storyline) for f in done.created] == [
        ("fact-002", "pipeline", ["chen-lao"], "main-arc")]
    assert len(done.notes) == 2  # the text too long, the unknown id
    kept.refresh_from_db()
    assert (kept.status, kept.closed_chapter, kept.closing_note, kept.version) == ("fulfilled", 5, "送到了", 2)
    story_facts_undo_chapter(project=sample_project, chapter=5)
    kept.refresh_from_db()
    assert (kept.status, kept.closed_chapter, kept.version) == ("open", None, 3)
    assert list(StoryFact.objects.values_list("fact_id", flat=True)) == ["fact-001"]


@pytest.fixture
def eager(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.mark.django_db(transaction=True)
def test_chapters_written_offline_fill_the_ledger_and_a_rollback_undoes_the_last_one(eager):
    project = sample_project_create()
    chapter_run_start(project_id=project.pk, batch_remaining=2)
    project.refresh_from_db()
    assert project.last_completed_chapter == 3
    promise = StoryFact.objects.get(project=project)  # chapter 1 made a promise, chapter 3 fulfilled it
    assert (promise.fact_id, promise.chapter, promise.characters, promise.origin) == (
        "fact-001", 1, ["lin-feng"], "pipeline")
    assert (promise.status, promise.closed_chapter) == ("fulfilled", 3)
    run = PipelineRun.objects.get(project=project, chapter=3)
    assert run.blackboard["content"]["summary"]["facts_notes"] == []
    chapter_rollback_latest(project=project, number=3)
    promise.refresh_from_db()
    assert (promise.status, promise.closed_chapter) == ("open", None)


@pytest.mark.django_db(transaction=True)
def test_what_the_summarizer_got_wrong_is_noted_on_the_run_and_its_receipt(eager, monkeypatch):
    original = WRITERS["summarize"]

    def sloppy(slice_, rng):
        answer = original(slice_, rng)
        answer["facts"] = json.dumps({"new": [{"kind": "prophecy", "text": "天降异象", "characters": ["lin-feng"]},
                                              {"kind": "injury", "text": "林枫左臂受伤", "characters": ["林枫"]}],
                                      "closed": [{"id": "fact-404", "status": "fulfilled"}]}, ensure_ascii=False)
        return answer

    monkeypatch.setitem(WRITERS, "summarize", sloppy)
    project = sample_project_create()
    chapter_run_start(project_id=project.pk)
    assert list(StoryFact.objects.filter(project=project).values_list("kind", "characters")) == [
        ("injury", ["lin-feng"])]  # the display name became the id; the rest was dropped
    run = PipelineRun.objects.get(project=project, chapter=1)
    notes = run.blackboard["content"]["summary"]["facts_notes"]
    assert any("prophecy" in n for n in notes) and any("fact-404" in n for n in notes)
    receipt = run.stage_runs.get(stage="summarize").receipt
    assert any(n.startswith("facts: ") and "prophecy" in n for n in receipt["notes"])
