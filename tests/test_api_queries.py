"""Every API list makes the same number of queries for a book of 5 chapters and one of 200 (and
as many characters, foreshadowing items, runs with stage attempts and LLM calls), and chapter lists
never load the text."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from pipeline.models import LLMCall, PipelineRun, RunKind, RunStatus, StageRun
from projects.models import Chapter, Character, Evaluation, Foreshadowing, Project, StoryFact, WorldDoc, WorldRule

pytestmark = pytest.mark.usefixtures("fresh_throttle_cache")

LISTS = ["", "/members", "/volumes", "/chapters", "/chapters?volume=1", "/chapters/3/receipts", "/characters",
         "/storylines", "/world-rules", "/world-docs", "/foreshadowing", "/facts", "/runs", "/gates"]


def grow_book(project: Project, upto: int) -> None:
    """Chapters 2..``upto`` (chapter 1 exists) with evaluations, plus characters, rules, documents,
    foreshadowing and done runs in proportion: bulk inserts, no pipeline."""
    start = project.chapters.count() + 1
    volume = project.volumes.get(number=1)
    chapters = Chapter.objects.bulk_create(
        Chapter(project=project, volume=volume, number=n, title=f"第{n}章", text="雪。" * 2000, word_count=4000)
        for n in range(start, upto + 1))
    Evaluation.objects.bulk_create(Evaluation(project=project, chapter=c, data={}, overall="4.00") for c in chapters)
    Character.objects.bulk_create(Character(project=project, slug=f"extra-{n}", display_name=f"路人{n}")
                                  for n in range(start, upto + 1))
    WorldRule.objects.bulk_create(WorldRule(project=project, rule_id=f"T-{n:04d}", rule="规则")
                                  for n in range(start, upto + 1))
    WorldDoc.objects.bulk_create(WorldDoc(project=project, name=f"doc-{n}") for n in range(start, upto + 1))
    Foreshadowing.objects.bulk_create(
        Foreshadowing(project=project, fid=f"f-{n}", scope="short", planted_chapter=n, target_resolve_end=n + 1)
        for n in range(start, upto + 1))
    StoryFact.objects.bulk_create(StoryFact(project=project, fact_id=f"fact-{n:03d}", kind="promise", text="誓言",
                                            chapter=n, characters=[f"extra-{n}"]) for n in range(start, upto + 1))
    for n in range(start, upto + 1):
        run = PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=3, status=RunStatus.DONE)
        stage = StageRun.objects.create(run=run, stage="draft", status="succeeded", receipt={"blocks": []})
        LLMCall.objects.create(run=run, stage_run=stage, call_key=f"{run.pk}:draft:1:{n}", backend="offline",
                               model="m", request_sha256="0" * 64, output_text="正文" * 1000)
    Project.objects.filter(pk=project.pk).update(last_completed_chapter=upto)


def _count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return len(queries)


@pytest.mark.django_db
@pytest.mark.parametrize("suffix", LISTS)
def test_list_query_count_does_not_grow_with_the_book(world, suffix, django_assert_num_queries):
    client, url = world.client("viewer"), f"/api/projects/{world.project.slug}{suffix}"
    grow_book(world.project, 5)
    small = _count(client, url)
    grow_book(world.project, 200)
    with django_assert_num_queries(small):
        assert client.get(url).status_code == 200
    with django_assert_num_queries(small):  # a full page of 200 costs no more than a page of 5
        assert client.get(url + ("&" if "?" in url else "?") + "page_size=200").status_code == 200


@pytest.mark.django_db
def test_project_list_query_count_does_not_grow_with_the_projects(world, django_assert_num_queries):
    from projects.models import Membership
    from tests.factories import ProjectFactory

    client = world.client("viewer")
    small = _count(client, "/api/projects")
    for project in ProjectFactory.create_batch(30):
        Membership.objects.create(project=project, user=world.users["viewer"], role="viewer")
    with django_assert_num_queries(small):
        assert len(client.get("/api/projects").json()["results"]) == 31


@pytest.mark.django_db
def test_chapter_list_never_loads_the_text(world):
    grow_book(world.project, 5)
    with CaptureQueriesContext(connection) as queries:
        body = world.client("viewer").get(f"/api/projects/{world.project.slug}/chapters").json()
    chapter_queries = [q["sql"] for q in queries if 'FROM "projects_chapter"' in q["sql"]]
    assert chapter_queries and all('"projects_chapter"."text"' not in sql for sql in chapter_queries)
    assert [c["number"] for c in body["results"]] == [1, 2, 3, 4, 5]
    assert "text" not in body["results"][0]


@pytest.mark.django_db
def test_cursor_pagination_walks_every_chapter_once(world):
    grow_book(world.project, 120)
    client, url, seen = world.client("viewer"), f"/api/projects/{world.project.slug}/chapters?page_size=50", []
    while url:
        page = client.get(url).json()
        seen += [c["number"] for c in page["results"]]
        url = page["next"]
    assert seen == list(range(1, 121))


@pytest.mark.django_db
def test_receipts_list_the_calls_without_their_output(world):
    grow_book(world.project, 3)
    body = world.client("viewer").get(f"/api/projects/{world.project.slug}/chapters/3/receipts").json()
    assert body["results"][0]["stage"] == "draft"
    call = body["results"][0]["calls"][0]
    assert call["backend"] == "offline" and "output_text" not in call


@pytest.mark.django_db
def test_foreshadowing_flags_overdue_items(world):
    grow_book(world.project, 10)
    items = {f["id"]: f for f in world.client("viewer").get(
        f"/api/projects/{world.project.slug}/foreshadowing?page_size=200").json()["results"]}
    assert items["f-5"]["overdue"] is True  # short scope, due by chapter 6, the book is at 10
    assert items["f-10"]["overdue"] is False
    # facts §12: short scope, a plot-driven book (threshold 6 - 2 = 4): silent since chapter 5
    assert (items["f-5"]["dormant_for"], items["f-10"]["dormant_for"]) == (5, None)
