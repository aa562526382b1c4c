#!/usr/bin/env python
"""Benchmark of the web pages on a 1000-chapter book: p50 / p95 response time of the dashboard
and of the chapter list, rendered in-process through Django's test client (session login, every
middleware, templates; no network).

    .venv/bin/python bench/bench_web.py [--chapters 1000] [--requests 40] [--database-url URL]

Setup (not timed): a throwaway SQLite file in a temp directory (or the given, empty, database),
``migrate``, then with bulk inserts a project in WRITING with N chapters of about 3000 characters
in volumes of 30, an evaluation per chapter (8 weighted scores, deterministic checks with the
blacklist rate), a done chapter run with five stage runs (tokens, cache tokens, cost) per chapter.
Each page is requested twice to warm up, then ``--requests`` times; the script prints p50 / p95 /
max in milliseconds and the query count, and PASS/FAIL against the target p50 <= 50 ms.
Exit code 0 whatever the figures.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_P50_MS = 50.0
DIMENSIONS = ("plot_logic", "character", "immersion", "foreshadowing", "pacing", "style_naturalness",
              "emotional_impact", "storyline_coherence")


def setup_django(database_url: str | None, tmp: str) -> None:
    sys.path.insert(0, str(REPO_ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "novelsite.settings"
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{tmp}/bench_web.sqlite3"
    os.environ["DEBUG"] = "0"  # production settings: no SQL kept in memory, cached templates
    os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
    os.environ.setdefault("SECRET_KEY", "bench-web-" + os.urandom(24).hex())
    os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(chapters: int):
    from django.contrib.auth import get_user_model

    from pipeline.models import PipelineRun, RunKind, RunStatus, StageRun
    from projects.models import Chapter, Evaluation, Project, Volume
    from projects.services.projects import project_create

    user = get_user_model().objects.create_user("bench", password="bench-pw-1234")
    project = project_create(owner=user, slug="bench", title="千章之书")
    volumes = Volume.objects.bulk_create(Volume(project=project, number=v + 1, title=f"第{v + 1}卷")
                                         for v in range((chapters + 29) // 30))
    paragraph = "林枫踏雪而行，远处的山峦在暮色中渐渐隐去。" * 12 + "\n"
    rows = Chapter.objects.bulk_create(
        Chapter(project=project, volume=volumes[(n - 1) // 30], number=n, title=f"第{n}章", text=paragraph * 12,
                word_count=3000) for n in range(1, chapters + 1))
    evaluation = {"overall": 4.0, "recommendation": "pass",
                  "scores": {d: {"score": 4, "weight": 0.125} for d in DIMENSIONS},
                  "deterministic_checks": {"blacklist": {"statistical_profile": {"blacklist_hit_rate": 0.3}}}}
    Evaluation.objects.bulk_create(Evaluation(project=project, chapter=c, data=evaluation, overall=Decimal("4.0"))
                                   for c in rows)
    runs = PipelineRun.objects.bulk_create(PipelineRun(project=project, kind=RunKind.CHAPTER, chapter=c.number,
                                                       status=RunStatus.DONE, stage="commit") for c in rows)
    StageRun.objects.bulk_create(
        StageRun(run=r, stage=s, status="succeeded", input_tokens=9000, output_tokens=3000, cache_read_tokens=6000,
                 cost_usd=Decimal("0.012")) for r in runs for s in ("draft", "summarize", "refine", "judge", "commit"))
    Project.objects.filter(pk=project.pk).update(last_completed_chapter=chapters, orchestrator_state="WRITING",
                                                 current_volume=len(volumes))
    return user


def measure(client, url: str, requests: int) -> tuple[list[float], int]:
    from django.db import connection

    for _ in range(2):
        assert client.get(url).status_code == 200, url
    queries = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(url)
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    return times, len(queries)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-web-") as tmp:
        setup_django(args.database_url, tmp)
        started = time.perf_counter()
        user = build(args.chapters)
        print(f"setup: {args.chapters} chapters in {time.perf_counter() - started:.1f} s")
        from django.test import Client
        from django.urls import reverse

        client = Client()
        client.force_login(user)
        for name in ("dashboard", "chapter-list"):
            times, queries = measure(client, reverse(name, args=["bench"]), args.requests)
            times.sort()
            p50 = statistics.median(times)
            p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
            verdict = "PASS" if p50 <= TARGET_P50_MS else "FAIL"
            print(f"{name:13s} p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  max {times[-1]:6.1f} ms  "
                  f"{queries} queries  [{verdict}: p50 <= {TARGET_P50_MS:.0f} ms]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
