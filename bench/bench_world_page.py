#!/usr/bin/env python
"""The world page of the #15 heavy import: a ~120 KB zip holding 12 world documents of ~480,000
characters of Markdown each. Prints the page's latency and memory before and after the fix.

    .venv/bin/python bench/bench_world_page.py [--requests 10] [--docs 12] [--chars 480000]

Setup (not timed): a throwaway SQLite file, ``migrate``, the sample project exported and imported
again with the heavy documents added (``tests/heavy_world.py``), through ``read_zip`` and
``tree_import`` as an upload would go.

- before: what the world view did on every request until #15, rendering every character profile
  and world document whole (``render_markdown`` of the full text). Timed directly, because that
  rendering was the whole cost of the page (~1.7 s per document).
- after, cold: the real page through Django's test client (session login, every middleware, the
  template) with an empty cache: the folded excerpts are rendered once.
- after, warm: the same page again, ``--requests`` times (p50 / max): nothing is rendered.
- reader: one page of one heavy document (``/p/<slug>/world/docs/<name>/?page=2``), cold and warm.

Peak memory is tracemalloc's peak (Python allocations only) in a separate, untimed run of the step;
``--no-tracemalloc`` skips those runs (the "before" one takes as long again). Exit code 0 whatever
the figures; PASS/FAIL against the target: warm p50 <= 100 ms and cold <= 2 s.
"""
from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_WARM_P50_MS = 100.0
TARGET_COLD_MS = 2000.0


def setup_django(tmp: str) -> None:
    sys.path.insert(0, str(REPO_ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "novelsite.settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench_world.sqlite3"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
    os.environ.setdefault("SECRET_KEY", "bench-world-" + os.urandom(24).hex())
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("CACHE_URL", None)  # the per-process memory cache: no state from earlier runs
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build(docs: int, chars: int):
    from django.contrib.auth import get_user_model

    from projects.filetree.export import tree_files
    from projects.filetree.importer import tree_import
    from projects.filetree.source import read_zip
    from projects.sample_project import sample_project_create
    from tests.heavy_world import heavy_world_zip

    user = get_user_model().objects.create_user("bench", password="bench-pw-1234")
    archive = heavy_world_zip(dict(tree_files(sample_project_create(slug="base"))), docs=docs, chars=chars)
    report = tree_import(read_zip(io.BytesIO(archive)), slug="heavy", owner=user)
    return user, report.project, len(archive)


def timed(step):
    started = time.perf_counter()
    result = step()
    return result, (time.perf_counter() - started) * 1000


def peak_mb(step, enabled: bool) -> str:
    """tracemalloc's peak for one more run of ``step`` (traced runs are ~2x slower: never timed)."""
    if not enabled:
        return "  n/a"
    tracemalloc.start()
    step()
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return f"{peak:6.1f}"


def legacy_render(project) -> int:
    """The world view's Markdown work before #15: every text, whole, on every request."""
    from projects.markdown import render_markdown
    from projects.models import Character, WorldDoc

    html = [render_markdown(c.profile) for c in Character.objects.filter(project=project)]
    html += [render_markdown(d.content) for d in WorldDoc.objects.filter(project=project)]
    return sum(len(h) for h in html)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--docs", type=int, default=12)
    parser.add_argument("--chars", type=int, default=480_000)
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the (slow) memory runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-world-") as tmp:
        setup_django(tmp)
        user, project, zip_bytes = build(args.docs, args.chars)
        print(f"setup: {args.docs} world documents of {args.chars} characters, imported from a "
              f"{zip_bytes / 1000:.0f} KB zip")
        from django.core.cache import cache
        from django.test import Client
        from django.urls import reverse

        trace = not args.no_tracemalloc
        html_bytes, before_ms = timed(lambda: legacy_render(project))
        before_mb = peak_mb(lambda: legacy_render(project), trace)
        print(f"before       one view {before_ms:8.0f} ms  peak {before_mb} MB  "
              f"({html_bytes / 1e6:.1f} M characters of HTML)")
        client = Client()
        client.force_login(user)
        url = reverse("world", args=[project.slug])
        cache.clear()
        response, cold_ms = timed(lambda: client.get(url))
        assert response.status_code == 200
        cache.clear()
        cold_mb = peak_mb(lambda: client.get(url), trace)
        print(f"after, cold  one view {cold_ms:8.0f} ms  peak {cold_mb} MB  "
              f"(page {len(response.content) / 1000:.0f} KB)")
        times = []
        for _ in range(args.requests):
            _, elapsed = timed(lambda: client.get(url))
            times.append(elapsed)
        warm = statistics.median(times)
        print(f"after, warm  p50 {warm:8.1f} ms  max {max(times):6.1f} ms over {args.requests} views")
        reader = reverse("world-doc", args=[project.slug, "heavy-01"]) + "?page=2"
        _, reader_cold = timed(lambda: client.get(reader))
        _, reader_warm = timed(lambda: client.get(reader))
        print(f"reader       page 2 cold {reader_cold:6.0f} ms  warm {reader_warm:6.1f} ms")
        verdict = "PASS" if warm <= TARGET_WARM_P50_MS and cold_ms <= TARGET_COLD_MS else "FAIL"
        print(f"[{verdict}: warm p50 <= {TARGET_WARM_P50_MS:.0f} ms, cold <= {TARGET_COLD_MS:.0f} ms; "
              f"before/after-cold speed-up {before_ms / cold_ms:.0f}x]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
