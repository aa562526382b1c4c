"""The dashboard and the chapter list make the same number of queries for a book of 5 chapters
and one of 200 (the pages never loop over the book)."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from pipeline.models import PipelineRun, RunKind, RunStatus, StageRun
from projects.models import Chapter, Evaluation, Project, Volume
from projects.services.projects import project_create

pytestmark = pytest.mark.django_db

EVALUATION = {"overall": 4.1, "recommendation": "pass",
              "scores": {name: {"score": 4, "weight": 0.125} for name in
                         ("plot", "character", "pacing", "style", "dialogue", "world", "emotion", "hook")},
              "metadata": {"deterministic_checks": {"blacklist": {"statistical_profile": {"blacklist_hit_rate": 0.4}}}}}


def grow(project: Project, upto: int) -> None:
    """Chapters (with evaluations and a chapter run each) up to ``upto``, in bulk."""
    start = project.chapters.count() + 1
    volume, _ = Volume.objects.get_or_create(project=project, number=1)
    chapters = Chapter.objects.bulk_create(
        Chapter(project=project, volume=volume, number=n, title=f"第{n}章", text="雪。" * 50, word_count=100)
        for n in range(start, upto + 1))
    Evaluation.objects.bulk_create(Evaluation(project=project, chapter=c, data=EVALUATION, overall=Decimal("4.1"))
                                   for c in chapters)
    runs = PipelineRun.objects.bulk_create(PipelineRun(project=project, kind=RunKind.CHAPTER, chapter=c.number,
                                                       status=RunStatus.DONE, stage="commit") for c in chapters)
    StageRun.objects.bulk_create(StageRun(run=r, stage=s, status="succeeded", input_tokens=1000, output_tokens=500,
                                          cache_read_tokens=300, cost_usd=Decimal("0.01"))
                                 for r in runs for s in ("draft", "judge"))
    Project.objects.filter(pk=project.pk).update(last_completed_chapter=upto, orchestrator_state="WRITING")


@pytest.mark.parametrize(("name", "queries"), [("dashboard", 20), ("chapter-list", 6)])
def test_pages_make_the_same_number_of_queries_at_5_and_200_chapters(client, make_user, django_assert_num_queries,
                                                                      name, queries):
    owner = make_user("owner")
    project = project_create(owner=owner, slug="snow", title="雪原长夜")
    client.force_login(owner)
    url = reverse(name, args=["snow"])
    for size in (5, 200):
        grow(project, size)
        with django_assert_num_queries(queries):
            response = client.get(url)
        assert response.status_code == 200
    if name == "chapter-list":
        assert "第200章" in response.content.decode()
    else:
        assert "<polyline" in response.content.decode()
