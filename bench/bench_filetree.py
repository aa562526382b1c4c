#!/usr/bin/env python
"""Benchmark of the novel-tree exporter and importer on a 1000-chapter book.

    .venv/bin/python bench/bench_filetree.py [--chapters 1000] [--database-url URL]

Builds a project the size of a long serial novel (not timed): ``sample_project_create`` plus
N chapters of ~3000 Chinese characters in volumes of 30, a summary, an evaluation and a pipeline
log per chapter, one state delta per chapter (a valid changelog chain whose replay is the stored
state), the foreshadowing ledger those deltas imply, and a state snapshot per closed volume.

Then it times, each in a fresh Python process so that the peak RSS belongs to that phase alone:

1. ``export_to_directory`` into a temp directory
2. ``export_to_zip`` into a temp file
3. ``read_tree`` + ``tree_import`` of that directory under a new slug
4. ``read_tree`` + ``tree_import`` of that zip under a new slug

Each phase runs twice: once plain (wall time, peak RSS, query count) and once under
``tracemalloc`` (peak of Python allocations during the phase; tracing slows Python down, so its
time is not the one reported). The export's query count is also taken for a small project
(``--small-chapters``, 100 by default) to show it does not grow with the number of chapters.

Figures are printed with PASS/FAIL against the targets (export <= 5 s, import <= 10 s, peak
RSS <= 500 MB). The exit code is 0 whatever the figures; it is non-zero only when the benchmark
itself cannot run. Everything it creates (temp directory, SQLite file, PostgreSQL database) is
removed at the end unless ``--keep`` is given.

Default database: a throwaway SQLite file in the temp directory. With
``--database-url postgres://postgres@127.0.0.1:5432/novelsite_bench`` the script creates that
database (connecting to the ``postgres`` maintenance database with the same credentials), and
drops it at the end; it refuses to touch a database that already exists unless
``--recreate-db`` is given.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

SLUG = "bench"
SMALL_SLUG = "bench-small"
SEED = 20261122
CHAPTERS_PER_VOLUME = 30
CHAPTER_CHARS = 3000
RESULT_MARK = "BENCH_RESULT "

TARGETS = {  # phase kind -> seconds
    "export": 5.0,
    "import": 10.0,
}
RSS_TARGET_MB = 500.0

PHASES = ("export-dir", "export-zip", "import-dir", "import-zip")


# --- Django setup ---------------------------------------------------------------------------------


def setup_django(database_url: str) -> None:
    """Must run before anything imports Django models. The environment is set first, because
    ``novelsite.settings`` reads DATABASE_URL when it is imported."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "novelsite.settings"
    # Production-like: with DEBUG on, Django keeps the SQL text of every query (for the import,
    # the interpolated bulk INSERTs of the whole book) in connection.queries.
    os.environ["DEBUG"] = "0"
    # production settings refuse to start without a secret (never a real one here)
    os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 40)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


# --- Memory figures -------------------------------------------------------------------------------


def _proc_status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def peak_rss_mb() -> float:
    """Peak RSS of this process. ``ru_maxrss`` is KB on Linux, bytes on macOS. On Linux VmHWM is
    read too: it is the high-water mark of this process image alone, whereas getrusage figures are
    kept across fork+exec (a child could inherit its parent's peak)."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    maxrss_mb = maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024
    hwm = _proc_status_kb("VmHWM")
    return hwm / 1024 if hwm is not None else maxrss_mb


def ru_maxrss_mb() -> float:
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / (1024 * 1024) if sys.platform == "darwin" else maxrss / 1024


def current_rss_mb() -> float | None:
    rss = _proc_status_kb("VmRSS")
    return rss / 1024 if rss is not None else None


# --- Deterministic content ------------------------------------------------------------------------

POOL = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定"
    "行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其"
    "些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建"
    "月公无系军很情者最立代想已通并提直题程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知"
    "较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压"
    "志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声"
    "报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容"
    "儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写"
    "存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞雪夜星剑"
)
SPEAKERS = ("林枫", "陈老", "赵明", "少女", "掌柜", "守卫")
SAY = ("说", "低声道", "冷笑道", "问", "答道", "沉声道")
LOCATIONS = ("北境雪原", "幽暗森林", "魔都", "星火旧址", "南方港口", "断崖古寺", "落雁城", "寒潭")
EMOTIONS = ("警觉", "决意", "迷茫", "愤怒", "平静", "欣喜", "疲惫", "忐忑")
SEASONS = ("春", "夏", "秋", "冬")
OTHERS = ("chen-lao", "zhao-ming")
SCORE_WEIGHTS = {
    "plot_logic": 0.18, "character": 0.18, "immersion": 0.15, "foreshadowing": 0.10,
    "pacing": 0.08, "style_naturalness": 0.15, "emotional_impact": 0.08, "storyline_coherence": 0.08,
}


def _words(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(POOL, k=n))


def _sentence(rng: random.Random) -> str:
    parts = [_words(rng, rng.randint(4, 12)) for _ in range(rng.randint(1, 3))]
    return "，".join(parts) + rng.choice("。。。！？")


def chapter_text(rng: random.Random, chars: int = CHAPTER_CHARS) -> str:
    """About ``chars`` non-whitespace characters: narration paragraphs and dialogue lines."""
    paragraphs: list[str] = []
    count = 0
    while count < chars:
        if rng.random() < 0.35:
            line = _sentence(rng)
            paragraph = f"“{line}”{rng.choice(SPEAKERS)}{rng.choice(SAY)}。"
        else:
            paragraph = "".join(_sentence(rng) for _ in range(rng.randint(2, 5)))
        paragraphs.append(paragraph)
        count += len(paragraph)
    return "\n\n".join(paragraphs)


def summary_text(rng: random.Random, number: int) -> str:
    """≈250 characters in the sections of facts §10.10."""
    return "\n".join([
        f"## 第 {number} 章摘要",
        "",
        _words(rng, 70) + "。",
        "",
        "### 关键事件",
        f"- {_words(rng, 40)}。",
        f"- {_words(rng, 35)}。",
        f"- {_words(rng, 30)}。",
        "",
        "### 伏笔变更",
        f"- [推进] ancient_prophecy：{_words(rng, 18)}",
        "",
        "### 故事线标记",
        "- storyline_id: main-arc",
    ])


def evaluation_data(rng: random.Random, number: int) -> dict[str, Any]:
    """The flat judge output of seed 000 §9.2 / facts §10.11, 8 weighted scores."""
    scores = {}
    for dimension, weight in SCORE_WEIGHTS.items():
        scores[dimension] = {"score": rng.choice((3, 4, 4, 4, 5)), "weight": weight,
                             "reason": _words(rng, 20), "evidence": "原文引用：" + _words(rng, 24)}
    overall = round(sum(s["score"] * s["weight"] for s in scores.values()), 2)
    recommendation = "pass" if overall >= 4.0 else "polish" if overall >= 3.5 else "revise"
    return {
        "chapter": number,
        "contract_verification": {
            "l1_checks": [{"rule_id": "W-001", "status": "pass", "confidence": "high", "detail": _words(rng, 16)}],
            "l2_checks": [{"contract_id": "C-LIN-FENG-001", "status": "pass", "confidence": "high",
                           "detail": _words(rng, 16)}],
            "l3_checks": [],
            "ls_checks": [{"rule_id": "LS-001", "status": "pass", "confidence": "medium", "constraint_type": "hard",
                           "detail": _words(rng, 12)}],
            "has_violations": False,
        },
        "scores": scores,
        "overall": overall,
        "recommendation": recommendation,
        "risk_flags": [],
        "required_fixes": [],
        "issues": [],
        "strengths": [_words(rng, 10)],
    }


def log_data(rng: random.Random, number: int) -> dict[str, Any]:
    """The per-chapter pipeline log of seed 000 §9.2, with tokens and cost filled in."""
    started = datetime(2026, 3, 1, 8, 0, tzinfo=timezone(timedelta(hours=8))) + timedelta(hours=number)
    stages = []
    for name, model in (("draft", "sonnet"), ("summarize", "sonnet"), ("refine", "opus"), ("judge", "sonnet")):
        input_tokens, output_tokens = rng.randint(8000, 30000), rng.randint(500, 5000)
        stages.append({"name": name, "model": model, "duration_ms": rng.randint(5000, 60000),
                       "input_tokens": input_tokens, "output_tokens": output_tokens,
                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": rng.randint(0, 6000),
                       "cost_usd": round((input_tokens * 3 + output_tokens * 15) / 1_000_000, 6)})
    return {
        "chapter": number,
        "storyline_id": "main-arc",
        "started_at": started.isoformat(timespec="seconds"),
        "stages": stages,
        "gate_decision": "pass",
        "revisions": 0,
        "total_duration_ms": sum(s["duration_ms"] for s in stages),
        "total_cost_usd": round(sum(s["cost_usd"] for s in stages), 6),
    }


def chapter_delta(rng: random.Random, number: int, base: int) -> dict[str, Any]:
    """One Summarizer delta per chapter (seed 000 §9.2 ops). The state stays book-sized: items
    added to the inventory are removed three additions later, a foreshadowing clue is planted every
    10 chapters, advanced 15 chapters later and resolved 30 chapters later, and a new character
    enters every 25 chapters."""
    ops: list[dict[str, Any]] = [
        {"op": "set", "path": "characters.lin-feng.location", "value": rng.choice(LOCATIONS)},
        {"op": "set", "path": "characters.lin-feng.emotional_state", "value": rng.choice(EMOTIONS)},
        {"op": "inc", "path": f"characters.lin-feng.relationships.{rng.choice(OTHERS)}",
         "value": rng.randint(-5, 5)},
        {"op": "set", "path": "world_state.time_marker",
         "value": f"第{3 + number // 120}年{SEASONS[number // 30 % 4]}"},
    ]
    if number % 7 == 0:
        ops.append({"op": "add", "path": "characters.lin-feng.inventory", "value": f"信物{number}"})
        if number > 21:
            ops.append({"op": "remove", "path": "characters.lin-feng.inventory", "value": f"信物{number - 21}"})
    if number % 25 == 0:
        ops.append({"op": "set", "path": f"characters.npc-{number:04d}.display_name", "value": _words(rng, 2)})
        ops.append({"op": "set", "path": f"characters.npc-{number:04d}.location", "value": rng.choice(LOCATIONS)})
    if number == 3:
        ops.append({"op": "foreshadow", "path": "ancient_prophecy", "value": "planted", "detail": "老者提及预言碎片"})
    elif number > 3 and number % 50 == 0:
        ops.append({"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced", "detail": _words(rng, 12)})
    if number % 10 == 0:
        ops.append({"op": "foreshadow", "path": f"clue-{number:04d}", "value": "planted", "detail": _words(rng, 12)})
    if number % 10 == 5 and number > 15:
        ops.append({"op": "foreshadow", "path": f"clue-{number - 15:04d}", "value": "advanced",
                    "detail": _words(rng, 12)})
    if number % 10 == 0 and number > 30:
        ops.append({"op": "foreshadow", "path": f"clue-{number - 30:04d}", "value": "resolved",
                    "detail": _words(rng, 12)})
    return {"chapter": number, "base_state_version": base, "storyline_id": "main-arc", "ops": ops}


# --- Building the project (not timed) --------------------------------------------------------------


def build_project(slug: str, chapters: int) -> dict[str, int]:
    """A ``chapters``-chapter book under ``slug``, with bulk inserts; returns row counts."""
    from django.db import transaction

    from projects.evaluations import chapter_log_columns, evaluation_columns
    from projects.models import (
        STATUS_RANK,
        ChangeSource,
        Chapter,
        ChapterLog,
        ChapterSummary,
        Evaluation,
        Foreshadowing,
        ForeshadowingEvent,
        Project,
        StateChange,
        StoryState,
        Storyline,
        Volume,
        VolumeStateSnapshot,
    )
    from projects.sample_project import sample_project_create
    from projects.state_ops import apply_delta
    from projects.text_stats import count_chars

    rng = random.Random(SEED)
    batch = 200
    with transaction.atomic():
        project = sample_project_create(slug=slug)
        main_arc = Storyline.objects.get(project=project, slug="main-arc")
        last_volume = -(-chapters // CHAPTERS_PER_VOLUME)

        # volumes: vol 1 comes from the sample; all but the last are closed
        Volume.objects.filter(project=project, number=1).update(status="closed" if last_volume > 1 else "writing")
        new_volumes = []
        for number in range(2, last_volume + 1):
            first = (number - 1) * CHAPTERS_PER_VOLUME + 1
            outline = "\n".join(f"### 第 {c} 章: {_words(rng, 4)}\n- **Storyline**: main-arc\n- **Conflict**: "
                                f"{_words(rng, 20)}\n" for c in range(first, first + CHAPTERS_PER_VOLUME))
            new_volumes.append(Volume(
                project=project, number=number, title=f"第{number}卷", outline=f"## 第 {number} 卷大纲\n\n{outline}",
                storyline_schedule={"volume": number, "active_storylines": ["main-arc"]},
                status="closed" if number < last_volume else "writing",
            ))
        Volume.objects.bulk_create(new_volumes, batch_size=batch)
        volumes = {v.number: v for v in Volume.objects.filter(project=project)}

        # chapters, then their summary, evaluation and log
        rows = []
        for number in range(1, chapters + 1):
            text = chapter_text(rng)
            rows.append(Chapter(project=project, volume=volumes[-(-number // CHAPTERS_PER_VOLUME)], number=number,
                                storyline=main_arc, title=_words(rng, 4), text=text,
                                word_count=count_chars(text)))  # bulk_create skips Chapter.save()
        created = Chapter.objects.bulk_create(rows, batch_size=batch)
        by_number = {c.number: c for c in created}
        if any(c.pk is None for c in created):  # a backend that does not return ids
            by_number = {c.number: c for c in Chapter.objects.filter(project=project).only("id", "number")}
        del rows, created
        summaries, evaluations, logs = [], [], []
        for number in range(1, chapters + 1):
            chapter = by_number[number]
            summaries.append(ChapterSummary(project=project, chapter=chapter, storyline_slug="main-arc",
                                            text=summary_text(rng, number)))
            evaluation = evaluation_data(rng, number)
            evaluations.append(Evaluation(project=project, chapter=chapter, data=evaluation,
                                          **evaluation_columns(evaluation)))
            log = log_data(rng, number)
            logs.append(ChapterLog(project=project, chapter=chapter, data=log, **chapter_log_columns(log)))
        ChapterSummary.objects.bulk_create(summaries, batch_size=batch)
        Evaluation.objects.bulk_create(evaluations, batch_size=batch)
        ChapterLog.objects.bulk_create(logs, batch_size=batch)
        del summaries, evaluations, logs

        # the changelog: one delta per chapter, applied in memory from the stored state
        state_row = StoryState.objects.get(project=project)
        state = state_row.data
        changes, snapshots = [], []
        ledger: dict[str, Foreshadowing] = {}
        events: dict[tuple[str, int, str], ForeshadowingEvent] = {}
        for number in range(1, chapters + 1):
            delta = chapter_delta(rng, number, state["state_version"])
            state = apply_delta(state, delta)  # raises if the chain is not valid
            changes.append(StateChange(project=project, state_version=state["state_version"],
                                       base_state_version=delta["base_state_version"], chapter=number,
                                       storyline_slug="main-arc", delta=delta, source=ChangeSource.PIPELINE))
            for op in delta["ops"]:  # the ledger as projects.services.foreshadowing would keep it
                if op["op"] != "foreshadow":
                    continue
                fid, action = op["path"], op["value"]
                row = ledger.get(fid) or Foreshadowing(project=project, fid=fid, description=_words(rng, 14),
                                                       scope="long" if fid == "ancient_prophecy" else "short",
                                                       status=action)
                if fid.startswith("clue-") and row.target_resolve_end is None:
                    row.target_resolve_start, row.target_resolve_end = number + 20, number + 40
                if STATUS_RANK[action] > STATUS_RANK[row.status]:
                    row.status = action
                if action == "planted":
                    row.planted_chapter = row.planted_chapter or number
                    row.planted_storyline = row.planted_storyline or "main-arc"
                row.last_updated_chapter = max(row.last_updated_chapter or 0, number)
                ledger[fid] = row
                events.setdefault((fid, number, action), ForeshadowingEvent(chapter=number, action=action,
                                                                            detail=op.get("detail", "")))
            if number % CHAPTERS_PER_VOLUME == 0 and number // CHAPTERS_PER_VOLUME < last_volume:
                snapshots.append(VolumeStateSnapshot(project=project, volume_number=number // CHAPTERS_PER_VOLUME,
                                                     data=state))
        StateChange.objects.bulk_create(changes, batch_size=500)
        VolumeStateSnapshot.objects.bulk_create(snapshots, batch_size=batch)
        Foreshadowing.objects.bulk_create(ledger.values(), batch_size=batch)
        rows_by_fid = {row.fid: row for row in Foreshadowing.objects.filter(project=project)}
        for (fid, _number, _action), event in events.items():
            event.foreshadowing = rows_by_fid[fid]
        ForeshadowingEvent.objects.bulk_create(events.values(), batch_size=500)
        state_row.data = state
        state_row.state_version = state["state_version"]
        state_row.schema_version = state["schema_version"]
        state_row.save()
        Project.objects.filter(pk=project.pk).update(last_completed_chapter=chapters, current_volume=last_volume,
                                                     last_committed_volume=last_volume)
    return {
        "chapters": Chapter.objects.filter(project=project).count(),
        "volumes": len(volumes),
        "state_changes": StateChange.objects.filter(project=project).count(),
        "foreshadowing": len(ledger),
        "state_version": state["state_version"],
    }


# --- One timed phase, in its own process ------------------------------------------------------------


def run_phase(phase: str, workdir: Path, traced: bool, run: int) -> dict[str, Any]:
    """Run one phase in this (fresh) process and return its figures. ``run`` numbers the
    repetitions, so that each writes its own export and imports under its own slug."""
    import tracemalloc

    from django.db import connection

    from projects.filetree.export import export_to_directory, export_to_zip
    from projects.filetree.importer import tree_import
    from projects.filetree.source import read_tree
    from projects.models import Chapter, Project, StateChange

    suffix = ("-traced" if traced else "") + (f"-{run}" if run else "")
    queries = 0

    def count(execute, sql, params, many, context):
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    connection.ensure_connection()
    rss_start = current_rss_mb()
    extra: dict[str, Any] = {}
    with connection.execute_wrapper(count):
        if traced:
            tracemalloc.start()
        started = time.perf_counter()
        if phase == "export-dir":
            target = workdir / f"export-dir{suffix}"
            export_to_directory(Project.objects.get(slug=SLUG), target)
        elif phase == "export-zip":
            target = workdir / f"export{suffix}.zip"
            with open(target, "wb") as handle:
                export_to_zip(Project.objects.get(slug=SLUG), handle)
        elif phase in ("import-dir", "import-zip"):
            location = workdir / ("export-dir" if phase == "import-dir" else "export.zip")
            report = tree_import(read_tree(location), slug=f"bench-{phase}{suffix}")
            extra = {"files": report.files, "warnings": report.warnings, "kept": len(report.kept)}
        else:
            raise SystemExit(f"unknown phase {phase!r}")
        seconds = time.perf_counter() - started
        traced_peak = None
        if traced:
            traced_peak = tracemalloc.get_traced_memory()[1] / (1024 * 1024)
            tracemalloc.stop()
    if phase.startswith("export"):
        if target.is_dir():
            files = [p for p in target.rglob("*") if p.is_file()]
            extra = {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}
        else:
            extra = {"bytes": target.stat().st_size}
        if suffix:  # only the first plain export is imported; the others are only measured
            shutil.rmtree(target) if target.is_dir() else target.unlink()
    else:
        imported = Project.objects.get(slug=f"bench-{phase}{suffix}")
        extra["chapters"] = Chapter.objects.filter(project=imported).count()
        extra["state_changes"] = StateChange.objects.filter(project=imported).count()
    return {"phase": phase, "traced": traced, "seconds": seconds, "rss_start_mb": rss_start,
            "peak_rss_mb": peak_rss_mb(), "ru_maxrss_mb": ru_maxrss_mb(), "tracemalloc_peak_mb": traced_peak,
            "queries": queries, **extra}


def run_export_queries(slugs: list[str]) -> dict[str, Any]:
    """Queries of one export (every file of tree_files consumed) per project."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from projects.filetree.export import tree_files
    from projects.models import Chapter, Project

    counts = {}
    for slug in slugs:
        with CaptureQueriesContext(connection) as captured:
            project = Project.objects.get(slug=slug)
            files = sum(1 for _ in tree_files(project))
        counts[slug] = {"queries": len(captured.captured_queries), "files": files,
                        "chapters": Chapter.objects.filter(project=project).count()}
    return {"phase": "export-queries", "counts": counts}


def spawn(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run this script with ``args`` in a new interpreter; return the figures it prints."""
    command = [sys.executable, str(Path(__file__).resolve()), *args]
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True, check=False)
    result = None
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK):])
        else:
            print(line)
    if done.returncode != 0 or result is None:
        raise RuntimeError(f"phase {' '.join(args)} failed (exit code {done.returncode})")
    return result


# --- Databases --------------------------------------------------------------------------------------


def _postgres_admin(url: str):
    import psycopg

    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise SystemExit("--database-url needs a database name, e.g. postgres://postgres@127.0.0.1:5432/novelsite_bench")
    admin_url = urlunsplit((parts.scheme.replace("postgis", "postgres"), parts.netloc, "/postgres", parts.query, ""))
    return psycopg.connect(admin_url, autocommit=True), name


def create_postgres(url: str, recreate: bool) -> None:
    from psycopg import sql

    admin, name = _postgres_admin(url)
    with admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and not recreate:
            raise SystemExit(f"database {name!r} exists; drop it, or pass --recreate-db to let the benchmark "
                             f"drop and recreate it")
        if exists:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_postgres(url: str) -> None:
    from psycopg import sql

    admin, name = _postgres_admin(url)
    with admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


# --- Report --------------------------------------------------------------------------------------------


def print_report(results: dict[str, dict], traced: dict[str, dict], queries: dict[str, Any], info: dict) -> None:
    print()
    print(f"Novel-tree export/import benchmark: {info['chapters']} chapters, database {info['vendor']}, "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"  built in {info['build_seconds']:.1f} s (not timed): {info['rows']}")
    if "small_rows" in info:
        print(f"  small project for the query count: {info['small_rows']['chapters']} chapters")
    print()
    header = (f"{'phase':<12} {'seconds':>8} {'target':>8} {'time':>5} {'peak RSS MB':>12} {'RSS target':>11} "
              f"{'rss':>5} {'tracemalloc MB':>15} {'queries':>8}  details")
    print(header)
    print("-" * len(header))
    for phase in PHASES:
        figures = results[phase]
        kind = phase.split("-")[0]
        limit = TARGETS[kind]
        time_ok = "PASS" if figures["seconds"] <= limit else "FAIL"
        rss = figures["peak_rss_mb"]
        rss_ok = "PASS" if rss <= RSS_TARGET_MB else "FAIL"
        traced_peak = traced.get(phase, {}).get("tracemalloc_peak_mb")
        traced_text = f"{traced_peak:.1f}" if traced_peak is not None else "-"
        if kind == "export":
            details = f"{figures['bytes'] / 1e6:.1f} MB" + (f" in {figures['files']} files"
                                                            if "files" in figures else "")
        else:
            details = (f"{figures['files']} files → {figures['chapters']} chapters, "
                       f"{figures['state_changes']} state changes, {len(figures['warnings'])} warnings")
        print(f"{phase:<12} {figures['seconds']:>8.2f} {limit:>7.1f}s {time_ok:>5} {rss:>12.1f} "
              f"{RSS_TARGET_MB:>10.0f}  {rss_ok:>5} {traced_text:>15} {figures['queries']:>8}  {details}")
        for warning in figures.get("warnings", []):
            print(f"{'':<12} warning: {warning}")
        if len(figures.get("all_seconds", [])) > 1:
            print(f"{'':<12} median of {len(figures['all_seconds'])} runs: "
                  + ", ".join(f"{s:.2f}" for s in figures["all_seconds"]) + " s")
    print()
    print("peak RSS: high-water mark of the phase's own process (VmHWM; ru_maxrss where /proc is missing),")
    starts = [f"{p} {results[p]['rss_start_mb']:.0f}" for p in PHASES if results[p]["rss_start_mb"] is not None]
    print("  including the interpreter and Django" + (f" (RSS when the phase started: {', '.join(starts)} MB)."
                                                   if starts else "."))
    if traced:
        print("tracemalloc: peak of Python allocations during the phase, measured in a second run of it.")
    if queries:
        counts = queries["counts"]
        parts = [f"{c['chapters']} chapters → {c['queries']} queries ({c['files']} files)" for c in counts.values()]
        print("export queries (CaptureQueriesContext over tree_files): " + "; ".join(parts))
        if len(counts) == 2:
            big, small = sorted(counts.values(), key=lambda c: c["chapters"], reverse=True)
            grow = big["queries"] - small["queries"]
            extra_chapters = big["chapters"] - small["chapters"]
            batches = -(-extra_chapters // info["chapter_batch"]) + 1
            if grow <= batches:
                print(f"  {grow} more queries for {extra_chapters} more chapters: chapters are read in keyset "
                      f"batches of {info['chapter_batch']}, not one query per chapter")
            else:
                print(f"  WARNING: {grow} more queries for {extra_chapters} more chapters; more than the "
                      f"{batches} extra keyset batches of {info['chapter_batch']} chapters would explain")
    failures = [p for p in PHASES
                if results[p]["seconds"] > TARGETS[p.split("-")[0]] or results[p]["peak_rss_mb"] > RSS_TARGET_MB]
    print()
    print("RESULT: " + ("PASS (all targets met)" if not failures else "FAIL: " + ", ".join(failures)))


# --- Main ------------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chapters", type=int, default=1000, help="chapters of the benchmark book (default 1000)")
    parser.add_argument("--small-chapters", type=int, default=100,
                        help="chapters of the second book whose export queries are counted (0: skip; default 100)")
    parser.add_argument("--database-url", default=None,
                        help="default: a throwaway SQLite file; "
                             "e.g. postgres://postgres@127.0.0.1:5432/novelsite_bench "
                             "(created and dropped by the benchmark)")
    parser.add_argument("--recreate-db", action="store_true",
                        help="drop and recreate the PostgreSQL database if it exists")
    parser.add_argument("--repeat", type=int, default=1,
                        help="plain runs of each phase; the median time and the highest peak RSS are reported "
                             "(default 1)")
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the second, traced run of each phase")
    parser.add_argument("--keep", action="store_true", help="keep the temp directory and the database")
    # internal: one phase in a child process
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--run", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--slugs", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child_main(args: argparse.Namespace) -> int:
    setup_django(args.database_url)
    if args.phase == "export-queries":
        result = run_export_queries(args.slugs.split(","))
    else:
        result = run_phase(args.phase, Path(args.workdir), args.traced, args.run)
    print(RESULT_MARK + json.dumps(result, ensure_ascii=False), flush=True)
    return 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.phase:
        return child_main(args)

    workdir = Path(tempfile.mkdtemp(prefix="novelsite-bench-"))
    database_url = args.database_url or f"sqlite:///{(workdir / 'bench.sqlite3').as_posix()}"
    is_postgres = database_url.startswith(("postgres://", "postgresql://", "pgsql://", "postgis://"))
    created_db = False
    try:
        if is_postgres:
            create_postgres(database_url, args.recreate_db)
            created_db = True
        setup_django(database_url)
        from django.core.management import call_command
        from django.db import connection, connections

        from projects.filetree import export as export_module

        print(f"workdir {workdir}; database {connection.vendor}; migrating …", flush=True)
        call_command("migrate", verbosity=0, interactive=False)
        started = time.perf_counter()
        rows = build_project(SLUG, args.chapters)
        info: dict[str, Any] = {"chapters": args.chapters, "vendor": connection.vendor, "rows": rows,
                                "chapter_batch": export_module.CHAPTER_BATCH}
        if args.small_chapters:
            info["small_rows"] = build_project(SMALL_SLUG, args.small_chapters)
        info["build_seconds"] = time.perf_counter() - started
        # A real book is written over months, and autovacuum/analyze have long seen its rows: give
        # the planner its statistics (and PostgreSQL its visibility map) before timing anything.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
        print(f"built {rows} in {info['build_seconds']:.1f} s", flush=True)
        connections.close_all()  # the children open their own connections

        env = {**os.environ, "PYTHONHASHSEED": "0"}
        child = ["--database-url", database_url, "--workdir", str(workdir)]
        results, traced = {}, {}
        for phase in PHASES:
            runs = []
            for run in range(max(1, args.repeat)):
                runs.append(spawn([*child, "--phase", phase, "--run", str(run)], env))
                print(f"  {phase}: {runs[-1]['seconds']:.2f} s, peak RSS {runs[-1]['peak_rss_mb']:.0f} MB", flush=True)
            results[phase] = {**runs[0], "seconds": statistics.median(r["seconds"] for r in runs),
                              "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                              "all_seconds": [r["seconds"] for r in runs]}
        if not args.no_tracemalloc:
            for phase in PHASES:
                traced[phase] = spawn([*child, "--phase", phase, "--traced"], env)
                print(f"  {phase} (tracemalloc): peak {traced[phase]['tracemalloc_peak_mb']:.1f} MB", flush=True)
        slugs = [SLUG] + ([SMALL_SLUG] if args.small_chapters else [])
        queries = spawn([*child, "--phase", "export-queries", "--slugs", ",".join(slugs)], env)
        print_report(results, traced, queries, info)
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # Django never got set up
            pass
        if args.keep:
            print(f"kept {workdir}" + (f" and the database {database_url}" if created_db else ""))
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            if created_db:
                drop_postgres(database_url)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
