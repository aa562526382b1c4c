#!/usr/bin/env python
"""Benchmark of the chapter pipeline: orchestration overhead, parallel efficiency of the workers,
and the writer's prompt over a 1000-chapter book.

    .venv/bin/python bench/bench_pipeline.py [--part 1|2|3|all] [--chapters 1000] [--keep]

Needs PostgreSQL (the script creates and drops its own database, ``novelsite_bench_pipeline`` by
default) and, for parts 1 and 2, Redis (``redis://127.0.0.1:6379/5`` by default, a private queue
``novelsite-bench-pipeline-<random>`` on it) and real Celery worker subprocesses. The LLM is the
offline backend throughout.

1. Orchestration overhead: one project writes a batch of chapters (``chapter_run_start`` with
   ``batch_remaining``) through ``celery -A novelsite worker --pool=prefork --concurrency=1``. Per
   chapter: wall time of the run (created → finished) and overhead = wall − the time spent inside
   its LLM calls (sum of ``LLMCall.duration_ms``). First with a zero-latency offline LLM (20
   chapters; the overhead in milliseconds, for the record, no target), then with a model that takes
   ``--model-seconds`` (20) per call, as a real one does (a warm-up chapter, then 2 measured):
   target, overhead <= 2 % of the chapter's LLM time.
2. Parallel efficiency: 16 projects × 3 chapters, 200 ms per LLM call
   (``NOVELSITE_OFFLINE_JSON='{"latency_ms": 200}'``), once on one worker with ``--concurrency=4``
   (wall T4) and once, 16 other projects with the same books, with ``--concurrency=1`` (wall T1).
   Efficiency = T1 / (4 × T4), scaled by the two batches' LLM time should it differ. Target >= 90 %.
   Also printed: the LLM share, LLM time / (processes × wall), for both.
3. The writer's prompt over a long book, in-process and eager (no broker): a project with 34
   planned volumes of 30 chapters (outline blocks and a contract per chapter) writes the whole book
   in one batch. The draft stage's receipt (estimator tokens, block by block) at chapters 30, 300
   and 1000: target <= 12K tokens each and ch1000 / ch30 <= 1.10; and input/output tokens per
   committed chapter, all stages, from the StageRun rows.

The exit code is 0 whatever the figures; 1 when a part could not produce its figures (a run
stopped in error, a timeout), 2 when the benchmark cannot run at all (no PostgreSQL or Redis).
Workers, the Redis keys of the private queue, the database and the temp directory are removed at
the end in all cases, unless ``--keep`` is given (then the database and the temp directory with
the worker logs are kept; workers are always stopped).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/novelsite_bench_pipeline"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/5"
RESULT_MARK = "BENCH_RESULT "
CHAPTERS_PER_VOLUME = 30

OVERHEAD_SHARE_TARGET = 0.02  # orchestration overhead over a chapter's LLM time, with a realistic model
EFFICIENCY_TARGET = 0.90
PROMPT_TARGET_TOKENS = 8_000  # the writer prompt's per-chapter part (issue #17 §4)
PROMPT_GROWTH_TARGET = 1.10  # the per-chapter part at the last checkpoint over chapter 30's
BIBLE_MAX_TOKENS = 6_000  # the cached book bible
BIBLE_BLOCKS = ("book-bible",)  # the receipt's names of the bible's blocks
PROMPT_CHECKPOINTS = (30, 300, 1000)


# --- Django setup ---------------------------------------------------------------------------------


def setup_django(database_url: str, redis_url: str) -> None:
    """Before anything imports Django models: ``novelsite.settings`` reads the environment when it
    is imported. An empty ``redis_url`` makes Celery eager (tasks run in this process)."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["REDIS_URL"] = redis_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "novelsite.settings"
    os.environ["DEBUG"] = "0"  # with DEBUG on, Django keeps the SQL of every query in memory
    # production settings refuse to start without a secret (never a real one here)
    os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 40)
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()


# --- The book (not timed) --------------------------------------------------------------------------

TITLES = ("风起", "夜行", "石板", "对峙", "渡口", "密谈", "雪崩", "旧信", "血誓", "残卷", "灯下", "归途",
          "暗潮", "试剑", "孤城", "寒潭", "迷阵", "星落", "故人", "破晓")
PLACES = ("北境雪原", "幽暗森林", "魔都", "星火旧址", "断崖渡口", "落雁城", "南方港口", "断崖古寺")
CONFLICTS = ("追兵逼近", "真相半露", "盟友生疑", "旧敌现身", "宝物失窃", "宗门内乱", "误入禁地", "约战将至")
ARCS = ("决意南下", "学会隐忍", "看清对手", "重拾信任", "直面过去", "承担责任")


def _volume_foreshadowing(volume: int) -> list[dict[str, Any]]:
    """Per volume, three short clues (planted, advanced 5 chapters later, resolved 10 later) and a
    medium thread planted near the end and resolved in the next volume."""
    first = (volume - 1) * CHAPTERS_PER_VOLUME + 1
    items = []
    for k, offset in enumerate((2, 10, 18), start=1):
        planted = first + offset
        items.append({"id": f"v{volume:02d}-clue-{k}",
                      "description": f"第{volume}卷线索{k}：{TITLES[(volume + k) % 20]}之谜",
                      "scope": "short", "target_resolve_range": [planted + 8, planted + 12],
                      "_events": {planted: "planted", planted + 5: "advanced", planted + 10: "resolved"}})
    planted = first + 24
    items.append({"id": f"v{volume:02d}-thread", "description": f"第{volume}卷暗线：{CONFLICTS[volume % 8]}的幕后之人",
                  "scope": "medium", "target_resolve_range": [planted + 10, planted + 25],
                  "_events": {planted: "planted", planted + 18: "resolved"}})
    return items


def _foreshadowing_events(volumes: int) -> dict[int, dict[str, str]]:
    """chapter -> {fid: status} over the book, with the long ``ancient_prophecy`` of the sample
    (planted in chapter 3, advanced every 100 chapters)."""
    events: dict[int, dict[str, str]] = {3: {"ancient_prophecy": "planted"}}
    for chapter in range(100, volumes * CHAPTERS_PER_VOLUME + 1, 100):
        events.setdefault(chapter, {})["ancient_prophecy"] = "advanced"
    for volume in range(1, volumes + 1):
        for item in _volume_foreshadowing(volume):
            for chapter, status in item["_events"].items():
                events.setdefault(chapter, {})[item["id"]] = status
    return events


def _cast_of(chapter: int) -> list[str]:
    """Lin Feng in every chapter; Chen Lao every 7th, Zhao Ming every 13th (so the recall of a
    character back after an absence is exercised)."""
    return ["lin-feng"] + (["chen-lao"] if chapter % 7 == 0 else []) + (["zhao-ming"] if chapter % 13 == 0 else [])


def _outline_block(chapter: int, title: str, place: str, updates: dict[str, str]) -> str:
    verbs = {"planted": "埋设", "advanced": "推进", "resolved": "回收"}
    foreshadowing = "；".join(f"{fid} {verbs[status]}" for fid, status in updates.items()) or "无"
    return "\n".join([
        f"### 第 {chapter} 章: {title}",
        "- **Storyline**: main-arc",
        "- **POV**: lin-feng",
        f"- **Location**: {place}",
        f"- **Conflict**: {CONFLICTS[chapter % len(CONFLICTS)]}",
        f"- **Arc**: {ARCS[chapter % len(ARCS)]}",
        f"- **Foreshadowing**: {foreshadowing}",
        "- **StateChanges**: lin-feng.location",
        "- **TransitionHint**: null",
    ])


def _contract(chapter: int, title: str, place: str, updates: dict[str, str]) -> dict[str, Any]:
    """The shape of ``projects.sample_project._contract``, with the chapter's cast and foreshadowing."""
    objectives = [{"id": f"OBJ-{chapter}-1", "type": "plot", "required": True,
                   "description": f"完成「{title}」的主要冲突"}]
    if updates:
        objectives.append({"id": f"OBJ-{chapter}-2", "type": "foreshadowing", "required": False,
                           "description": "处理本章的伏笔：" + "、".join(updates)})
    return {
        "chapter": chapter,
        "storyline_id": "main-arc",
        "excitement_type": "setup",
        "preconditions": {"character_states": {slug: {"location": place} for slug in _cast_of(chapter)},
                          "required_world_rules": ["W-001"]},
        "objectives": objectives,
        "postconditions": {"state_changes": {"lin-feng": {"location": place}}, "foreshadowing_updates": dict(updates)},
        "acceptance_criteria": ["林枫的行动符合其性格契约"],
    }


def build_book(slug: str, chapters: int) -> Any:
    """``sample_project_create`` (world, cast, storyline, state) with ``chapters`` chapters planned
    in volumes of 30: outline blocks with the 8 ``- **Key**: value`` lines, a schedule, a
    foreshadowing plan and a contract per chapter. Bulk inserts; the contracts are validated
    against their schema first (bulk_create skips ``full_clean``)."""
    from django.db import transaction

    from projects.json_validation import validate_json
    from projects.models import ChapterContract, Volume
    from projects.sample_project import sample_project_create

    volumes = -(-chapters // CHAPTERS_PER_VOLUME)
    events = _foreshadowing_events(volumes)
    with transaction.atomic():
        project = sample_project_create(slug=slug)
        ChapterContract.objects.filter(project=project).delete()  # the sample's three: replaced below
        outlines, contracts = {}, []
        for volume in range(1, volumes + 1):
            first = (volume - 1) * CHAPTERS_PER_VOLUME + 1
            last = min(first + CHAPTERS_PER_VOLUME - 1, chapters)
            blocks = [f"## 第 {volume} 卷大纲", "", f"本卷主题：{ARCS[volume % len(ARCS)]}。", ""]
            for chapter in range(first, last + 1):
                title, place = TITLES[chapter % len(TITLES)], PLACES[(chapter // 3) % len(PLACES)]
                updates = events.get(chapter, {})
                blocks += [_outline_block(chapter, title, place, updates), ""]
                contract = _contract(chapter, title, place, updates)
                validate_json("CHAPTER_CONTRACT", contract, label=f"chapter {chapter} contract")
                contracts.append((volume, chapter, contract))
            outlines[volume] = "\n".join(blocks).rstrip() + "\n"

        def plan(volume: int) -> dict[str, Any]:
            items = [{k: v for k, v in item.items() if not k.startswith("_")} for item in _volume_foreshadowing(volume)]
            if volume == 1:
                items.insert(0, {"id": "ancient_prophecy", "description": "远古预言暗示主角命运", "scope": "long",
                                 "target_resolve_range": [900, 1000]})
            return {"schema_version": 1, "volume": volume, "items": items}

        Volume.objects.filter(project=project, number=1).update(outline=outlines[1], foreshadowing_plan=plan(1))
        Volume.objects.bulk_create([
            Volume(project=project, number=volume, title=f"第{volume}卷", outline=outlines[volume],
                   storyline_schedule={"volume": volume, "active_storylines": ["main-arc"]},
                   foreshadowing_plan=plan(volume))
            for volume in range(2, volumes + 1)
        ], batch_size=200)
        by_number = {v.number: v for v in Volume.objects.filter(project=project)}
        ChapterContract.objects.bulk_create([
            ChapterContract(project=project, volume=by_number[volume], chapter=chapter, data=data)
            for volume, chapter, data in contracts
        ], batch_size=500)
    project.refresh_from_db()
    return project


# --- Figures --------------------------------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _proc_cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process, from /proc (None where /proc is missing or the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def cpu_snapshot(worker: Worker | None) -> dict[str, Any]:
    """CPU seconds so far of the worker (main and pool processes, from /proc), and PostgreSQL's
    counters for the benchmark's database (``pg_stat_database``: sessions opened, time spent
    executing statements), which also cover backends that have exited since."""
    from django.db import connection

    snapshot: dict[str, Any] = {"worker": {}, "sessions": None, "active_ms": None}
    if worker is not None:
        for pid in [worker.process.pid, *_children(worker.process.pid)]:
            if (seconds := _proc_cpu_seconds(pid)) is not None:
                snapshot["worker"][pid] = seconds
    time.sleep(1.1)  # backends flush their statistics at most once a second
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        try:
            cursor.execute("SELECT sessions, active_time FROM pg_stat_database WHERE datname = current_database()")
            snapshot["sessions"], snapshot["active_ms"] = cursor.fetchone()
        except Exception:  # PostgreSQL < 14 has neither column
            pass
    return snapshot


def cpu_used(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float | None]:
    """Between two snapshots: worker CPU seconds (None without /proc), PostgreSQL sessions opened
    and seconds spent executing statements."""
    worker = sum(seconds - before["worker"].get(pid, 0.0) for pid, seconds in after["worker"].items()) \
        if after["worker"] else None
    sessions = after["sessions"] - before["sessions"] if after["sessions"] is not None else None
    active = (after["active_ms"] - before["active_ms"]) / 1000 if after["active_ms"] is not None else None
    return {"worker": worker, "sessions": sessions, "postgres": active}


def stage_breakdown(runs: list[Any]) -> dict[str, dict[str, float]]:
    """Per stage name: median time inside the stage minus its LLM calls, and median gap before it
    (previous stage finished, or the run created → this stage claimed)."""
    from django.db.models import Sum

    from pipeline.models import StageRun

    inside: dict[str, list[float]] = {}
    gaps: dict[str, list[float]] = {}
    for run in runs:
        previous = run.created_at
        rows = StageRun.objects.filter(run=run).annotate(llm=Sum("llm_calls__duration_ms")).order_by("started_at", "pk")
        for row in rows:
            gaps.setdefault(row.stage, []).append((row.started_at - previous).total_seconds() * 1000)
            inside.setdefault(row.stage, []).append(float(row.duration_ms or 0) - float(row.llm or 0))
            previous = row.finished_at or previous
    return {stage: {"inside_ms": statistics.median(inside[stage]), "gap_ms": statistics.median(gaps[stage]),
                    "count": len(inside[stage])} for stage in inside}


def run_figures(runs: list[Any]) -> list[dict[str, Any]]:
    """Per chapter run: wall (created → finished), time inside LLM calls, time inside stages
    (StageRun.duration_ms, claim → completion), number of stages and LLM calls."""
    from django.db.models import Count, Sum

    from pipeline.models import LLMCall, StageRun

    ids = [run.pk for run in runs]
    llm = {row["run"]: row for row in LLMCall.objects.filter(run__in=ids).values("run")
           .annotate(ms=Sum("duration_ms"), calls=Count("pk"))}
    stages = {row["run"]: row for row in StageRun.objects.filter(run__in=ids).values("run")
              .annotate(ms=Sum("duration_ms"), count=Count("pk"))}
    figures = []
    for run in runs:
        wall = (run.finished_at - run.created_at).total_seconds() * 1000
        llm_ms = float(llm.get(run.pk, {}).get("ms") or 0)
        stage_ms = float(stages.get(run.pk, {}).get("ms") or 0)
        figures.append({"chapter": run.chapter, "project": run.project_id, "wall_ms": wall, "llm_ms": llm_ms,
                        "overhead_ms": wall - llm_ms, "in_stage_ms": stage_ms - llm_ms, "between_ms": wall - stage_ms,
                        "stages": int(stages.get(run.pk, {}).get("count") or 0),
                        "llm_calls": int(llm.get(run.pk, {}).get("calls") or 0),
                        "created_at": run.created_at.timestamp(), "finished_at": run.finished_at.timestamp()})
    return figures


# --- Workers (parts 1 and 2) -------------------------------------------------------------------------


class Worker:
    """``celery -A novelsite worker --pool=prefork`` on the private queue, in its own process group
    so that stopping it stops its pool processes too (and nothing else)."""

    def __init__(self, *, name: str, concurrency: int, queue: str, env: dict[str, str], workdir: Path,
                 offline: dict[str, Any]) -> None:
        self.nodename = f"{name}-{uuid.uuid4().hex[:8]}@bench"
        self.log_path = workdir / f"{name}.log"
        # ``-Q`` makes the worker consume the private queue; ``task.default_queue`` (Celery's
        # command-line configuration after ``--``) makes the stages it enqueues itself (the next
        # stage, the next chapter of a batch) go to that queue too, not to the shared "celery".
        command = [sys.executable, "-m", "celery", "-A", "novelsite", "worker", "--pool=prefork",
                   f"--concurrency={concurrency}", "-Q", queue, "-n", self.nodename, "--loglevel=WARNING",
                   "--without-gossip", "--without-mingle", "--without-heartbeat", "--",
                   f"task.default_queue={queue}"]
        worker_env = {**env, "NOVELSITE_OFFLINE_JSON": json.dumps(offline), "PYTHONDONTWRITEBYTECODE": "1"}
        self.command = command
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, cwd=REPO_ROOT, env=worker_env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_ready(self, timeout: float = 60.0) -> float:
        from novelsite.celery import app

        started = time.monotonic()
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited with {self.process.returncode}:\n{self.log_tail()}")
            if app.control.ping(destination=[self.nodename], timeout=0.5):
                return time.monotonic() - started
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"worker did not answer a ping within {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # warm shutdown of the worker and its pool
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=10)


def wait_for_runs(project_ids: list[int], expected: int, *, timeout: float, workers: list[Worker]) -> list[Any]:
    """Poll until ``expected`` chapter runs of these projects are done. Raises when a run stops
    (error, waiting at a gate, cancelled) or the time is up."""
    from pipeline.models import PipelineRun, RunKind, RunStatus

    deadline = time.monotonic() + timeout
    runs = PipelineRun.objects.filter(project__in=project_ids, kind=RunKind.CHAPTER)
    while True:
        done = runs.filter(status=RunStatus.DONE).count()
        if done >= expected:
            return list(runs.filter(status=RunStatus.DONE).order_by("project_id", "chapter"))
        stopped = runs.filter(status__in=(RunStatus.ERROR, RunStatus.WAITING, RunStatus.CANCELLED)).first()
        if stopped is not None:
            raise RuntimeError(f"run {stopped} of project {stopped.project_id} stopped: {stopped.error or '-'}\n"
                               + "\n".join(w.log_tail(1500) for w in workers))
        for worker in workers:
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker exited with {worker.process.returncode}:\n{worker.log_tail()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {done} of {expected} chapter runs done after {timeout:.0f} s\n"
                               + "\n".join(w.log_tail(1500) for w in workers))
        # Every figure comes from the runs' own timestamps, not from when this loop notices them:
        # polling more often would only take CPU from the workers being measured.
        time.sleep(0.25)


def part1_overhead(args: argparse.Namespace, env: dict[str, str], queue: str, workdir: Path,
                   workers: list[Worker]) -> dict[str, Any]:
    chapters, realistic = args.overhead_chapters, args.model_chapters
    project = build_book("bench-overhead", 2 + chapters + realistic)
    zero = overhead_batch(project, chapters, latency_ms=0, name="overhead", env=env, queue=queue, workdir=workdir,
                          workers=workers)
    model = None
    if realistic > 0:
        print(f"  part 1: {realistic} chapters with {args.model_seconds:g} s per LLM call "
              f"(about {realistic * 5 * args.model_seconds / 60:.0f} min) …", flush=True)
        model = overhead_batch(project, realistic, latency_ms=int(args.model_seconds * 1000), name="model",
                               env=env, queue=queue, workdir=workdir, workers=workers)
    return {"part": 1, **zero, "model": model, "model_seconds": args.model_seconds}


def overhead_batch(project, chapters: int, *, latency_ms: int, name: str, env: dict[str, str], queue: str,
                   workdir: Path, workers: list[Worker]) -> dict[str, Any]:
    """A warm-up chapter (imports, connections, caches; not counted), then a batch of ``chapters``
    on a fresh one-process worker whose LLM takes ``latency_ms`` per call."""
    from pipeline.models import PipelineRun, RunKind, RunStatus
    from pipeline.runtime.runs import chapter_run_start

    worker = Worker(name=name, concurrency=1, queue=queue, env=env, workdir=workdir,
                    offline={"latency_ms": latency_ms})
    workers.append(worker)
    done_before = PipelineRun.objects.filter(project=project, kind=RunKind.CHAPTER, status=RunStatus.DONE).count()
    per_chapter_s = 5 * latency_ms / 1000
    try:
        ready = worker.wait_ready()
        print(f"  part 1 ({name}): worker up in {ready:.1f} s; warm-up chapter …", flush=True)
        chapter_run_start(project_id=project.pk)
        warmup = run_figures(wait_for_runs([project.pk], done_before + 1, timeout=120 + per_chapter_s,
                                           workers=[worker]))[-1]
        print(f"  part 1 ({name}): a batch of {chapters} chapters …", flush=True)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        speed = reference_loop_ms()
        before = cpu_snapshot(worker)
        started = time.perf_counter()
        chapter_run_start(project_id=project.pk, batch_remaining=chapters - 1)
        runs = wait_for_runs([project.pk], done_before + chapters + 1,
                             timeout=60 + (15 + per_chapter_s) * chapters, workers=[worker])
        observed = time.perf_counter() - started
        cpu = cpu_used(before, cpu_snapshot(worker))
    finally:
        worker.stop()
    measured = sorted(runs, key=lambda run: run.chapter)[-chapters:]
    return {"chapters": run_figures(measured), "warmup": warmup, "observed_seconds": observed,
            "command": " ".join(worker.command[1:]), "stages": stage_breakdown(measured), "cpu": cpu,
            "load": load, "speed": speed, "latency_ms": latency_ms}


def part2_parallel(args: argparse.Namespace, env: dict[str, str], queue: str, workdir: Path,
                   workers: list[Worker]) -> dict[str, Any]:
    """The batch on ``--concurrency`` processes, then (unless that is 1 or ``--no-serial``) the
    same batch on one process, the reference that parallel efficiency is measured against."""
    parallel = timed_batch(args, env, queue, workdir, workers, name="parallel", concurrency=args.concurrency)
    serial = None
    if args.concurrency > 1 and not args.no_serial:
        serial = timed_batch(args, env, queue, workdir, workers, name="serial", concurrency=1)
    return {"part": 2, **parallel, "serial": serial, "latency_ms": args.latency_ms, "projects": args.projects,
            "project_chapters": args.project_chapters}


def timed_batch(args: argparse.Namespace, env: dict[str, str], queue: str, workdir: Path,
                workers: list[Worker], *, name: str, concurrency: int) -> dict[str, Any]:
    """``--projects`` new books of ``--project-chapters`` chapters, all started at once on a new
    worker with ``concurrency`` processes after a warm-up chapter per process; the batch's wall
    is the bench's clock before the first start → the last run's ``finished_at``."""
    from django.utils import timezone

    from pipeline.runtime.runs import chapter_run_start

    projects = [build_book(f"bench-{name}-{i:02d}", args.project_chapters) for i in range(args.projects)]
    warm = [build_book(f"bench-{name}-warmup-{i:02d}", 1) for i in range(concurrency)]
    offline = {"latency_ms": args.latency_ms}
    worker = Worker(name=name, concurrency=concurrency, queue=queue, env=env, workdir=workdir, offline=offline)
    workers.append(worker)
    try:
        ready = worker.wait_ready()
        print(f"  part 2 ({concurrency} process{'es' if concurrency > 1 else ''}): worker up in {ready:.1f} s; "
              f"warm-up: {len(warm)} project{'s' if len(warm) > 1 else ''} × 1 chapter …", flush=True)
        for project in warm:
            chapter_run_start(project_id=project.pk)
        wait_for_runs([p.pk for p in warm], len(warm), timeout=120, workers=[worker])
        expected = args.projects * args.project_chapters
        print(f"  part 2 ({concurrency} process{'es' if concurrency > 1 else ''}): "
              f"{args.projects} projects × {args.project_chapters} chapters …", flush=True)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        speed = reference_loop_ms()
        before = cpu_snapshot(worker)
        started_at = timezone.now()
        started = time.perf_counter()
        for project in projects:
            chapter_run_start(project_id=project.pk, batch_remaining=args.project_chapters - 1)
        sent = time.perf_counter() - started
        timeout = 120 + expected * 10 * (2 if concurrency == 1 else 1)
        runs = wait_for_runs([p.pk for p in projects], expected, timeout=timeout, workers=[worker])
        observed = time.perf_counter() - started
        cpu = cpu_used(before, cpu_snapshot(worker))
    finally:
        worker.stop()
    figures = run_figures(runs)
    finished = max(f["finished_at"] for f in figures)
    return {"chapters": figures, "started_at": started_at.timestamp(), "finished_at": finished,
            "cpu": cpu, "load": load, "speed": speed, "observed_seconds": observed, "send_seconds": sent,
            "concurrency": concurrency,
            "command": " ".join(worker.command[1:]) + f"  (NOVELSITE_OFFLINE_JSON='{json.dumps(offline)}')"}


# --- Part 3: a long book, eager, in its own process -----------------------------------------------------


def part3_book(chapters: int) -> dict[str, Any]:
    from django.conf import settings
    from django.db import connection
    from django.db.models import Count, Sum

    from pipeline.runtime import progress
    from pipeline.models import LLMCall, PipelineRun, RunKind, StageRun
    from pipeline.runtime.runs import chapter_run_start
    from projects.models import ArchivedSummary, Chapter, Project

    assert settings.CELERY_TASK_ALWAYS_EAGER, "part 3 runs eager (REDIS_URL empty)"
    started = time.perf_counter()
    project = build_book("bench-book", chapters)
    build_seconds = time.perf_counter() - started

    queries = 0

    def count(execute, sql, params, many, context):
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    wanted = {c for c in PROMPT_CHECKPOINTS if c <= chapters} | {chapters}
    marks: list[tuple[int, float, int]] = []  # (chapter, seconds since the start, queries so far)
    step = max(1, min(100, chapters // 10))

    levels_seen: dict[int, list[str]] = {}  # checkpoint chapter -> the memory levels its writer saw

    def listener(event: dict[str, Any]) -> None:
        if event.get("event") == "start" and event.get("stage") == "draft" and event.get("chapter") in wanted:
            live = ArchivedSummary.objects.filter(project=project, superseded=False, chapter_end__lt=event["chapter"])
            levels_seen[event["chapter"]] = [f"{level} {start}–{end}" for level, start, end in live.order_by(
                "chapter_start").values_list("level", "chapter_start", "chapter_end")]
        if event.get("event") != "done" or event.get("stage") != "commit" or not event.get("committed"):
            return
        marks.append((event["chapter"], time.perf_counter() - t0, queries))
        if len(marks) % step == 0 or event["chapter"] == chapters:
            since = marks[-step - 1][1] if len(marks) > step else 0.0
            last = min(step, len(marks))
            print(f"  part 3: chapter {event['chapter']:>4}/{chapters}  {marks[-1][1]:7.1f} s  "
                  f"last {last}: {(marks[-1][1] - since) / last * 1000:5.0f} ms/chapter", flush=True)

    print(f"  part 3: built {chapters} planned chapters in {build_seconds:.1f} s; writing the book (eager) …",
          flush=True)
    t0 = time.perf_counter()
    with connection.execute_wrapper(count), progress.listening(listener):
        chapter_run_start(project_id=project.pk, batch_remaining=chapters - 1)
    seconds = time.perf_counter() - t0

    project = Project.objects.get(pk=project.pk)
    committed = Chapter.objects.filter(project=project).count()
    last_run = PipelineRun.objects.filter(project=project, kind=RunKind.CHAPTER).order_by("-pk").first()
    stage_runs = StageRun.objects.filter(run__project=project, run__kind=RunKind.CHAPTER)
    by_stage = {row["stage"]: row for row in stage_runs.values("stage").annotate(
        input=Sum("input_tokens"), output=Sum("output_tokens"), n=Count("pk"))}
    totals = stage_runs.aggregate(input=Sum("input_tokens"), output=Sum("output_tokens"))

    def segment(first: int, last: int) -> dict[str, Any]:
        rows = stage_runs.filter(run__chapter__gte=first, run__chapter__lte=last)
        agg = rows.aggregate(input=Sum("input_tokens"), output=Sum("output_tokens"))
        n = max(1, Chapter.objects.filter(project=project, number__gte=first, number__lte=last).count())
        return {"first": first, "last": last, "input": (agg["input"] or 0) / n, "output": (agg["output"] or 0) / n}

    segments = [segment(1, min(100, committed))]
    if committed > 200:
        segments.append(segment(committed - 99, committed))

    checkpoints = {}
    for chapter in sorted({c for c in PROMPT_CHECKPOINTS if c <= committed} | ({committed} if committed else set())):
        draft = (StageRun.objects.filter(run__project=project, run__kind=RunKind.CHAPTER, run__chapter=chapter,
                                         stage="draft", status="succeeded").order_by("-pk").first())
        if draft is None:
            continue
        receipt = draft.receipt
        bible = sum(b["tokens"] for b in receipt.get("blocks", []) if b["name"] in BIBLE_BLOCKS)
        checkpoints[chapter] = {
            "total_tokens": receipt.get("total_tokens"), "budget": receipt.get("budget"),
            "bible_tokens": bible, "per_chapter_tokens": (receipt.get("total_tokens") or 0) - bible,
            "cache": receipt.get("cache") or {},
            "input_tokens": draft.input_tokens, "output_tokens": draft.output_tokens,
            "blocks": [(b["name"], b["tokens"]) for b in receipt.get("blocks", [])],
            "trimmed": receipt.get("trimmed", []), "levels": levels_seen.get(chapter, []),
        }

    # the cost per chapter along the book, per slice of ``step`` chapters
    costs = []
    for index in range(0, len(marks), step):
        chunk = marks[index:index + step]
        start_time, start_queries = (marks[index - 1][1], marks[index - 1][2]) if index else (0.0, 0)
        costs.append({"first": chunk[0][0], "last": chunk[-1][0],
                      "ms_per_chapter": (chunk[-1][1] - start_time) / len(chunk) * 1000,
                      "queries_per_chapter": (chunk[-1][2] - start_queries) / len(chunk)})
    levels = dict(ArchivedSummary.objects.filter(project=project, superseded=False).values_list("level")
                  .annotate(n=Count("pk")))
    return {
        "part": 3, "chapters": chapters, "committed": committed, "seconds": seconds, "build_seconds": build_seconds,
        "last_run": {"chapter": last_run.chapter, "status": last_run.status, "stage": last_run.stage,
                     "error": last_run.error[:500]} if last_run else None,
        "stage_runs": stage_runs.count(), "llm_calls": LLMCall.objects.filter(run__project=project).count(),
        "tokens_per_chapter": {"input": (totals["input"] or 0) / max(1, committed),
                               "output": (totals["output"] or 0) / max(1, committed)},
        "by_stage": {stage: {"input": row["input"] / max(1, committed), "output": row["output"] / max(1, committed),
                             "calls": row["n"]} for stage, row in by_stage.items()},
        "segments": segments, "checkpoints": checkpoints, "costs": costs, "memory_levels": levels,
        "queries": queries, "vendor": connection.vendor, "cache_minimum": _default_cache_minimum(),
    }


def _default_cache_minimum() -> dict[str, Any]:
    """The minimum cacheable prefix of the model a new site writes with (anthropic's default)."""
    from novelsite.llm_providers import FALLBACK_MODEL as DEFAULT_ANTHROPIC_MODEL
    from pipeline.llm.cache_policy import min_cacheable_tokens

    return {"model": DEFAULT_ANTHROPIC_MODEL, "tokens": min_cacheable_tokens(DEFAULT_ANTHROPIC_MODEL)}


def spawn_part3(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """Part 3 in a fresh interpreter: eager Celery needs REDIS_URL empty when the settings load."""
    command = [sys.executable, str(Path(__file__).resolve()), "--phase", "part3", "--chapters", str(args.chapters),
               "--database-url", args.database_url]
    child_env = {**env, "REDIS_URL": "", "NOVELSITE_OFFLINE_JSON": "{}"}
    process = subprocess.Popen(command, env=child_env, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    result = None
    try:
        for line in process.stdout:
            if line.startswith(RESULT_MARK):
                result = json.loads(line[len(RESULT_MARK):])
            else:
                print(line, end="", flush=True)
        process.wait()
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=30)
    if process.returncode != 0 or result is None:
        raise RuntimeError(f"part 3 failed (exit code {process.returncode})")
    return result


# --- Databases and Redis -------------------------------------------------------------------------------


def _postgres_admin(url: str):
    import psycopg

    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    if not name or not parts.scheme.startswith("postgres"):
        raise SystemExit(f"--database-url must be a PostgreSQL URL with a database name, not {url!r}")
    admin_url = urlunsplit((parts.scheme, parts.netloc, "/postgres", parts.query, ""))
    return psycopg.connect(admin_url, autocommit=True), name


def create_postgres(url: str, recreate: bool) -> None:
    from psycopg import sql

    admin, name = _postgres_admin(url)
    with admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists and not recreate:
            raise SystemExit(f"database {name!r} exists (a run with --keep?); drop it, or pass --recreate-db")
        if exists:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def drop_postgres(url: str) -> None:
    from psycopg import sql

    admin, name = _postgres_admin(url)
    with admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def redis_check(url: str) -> None:
    import redis

    with redis.Redis.from_url(url, socket_connect_timeout=3) as client:
        client.ping()


def redis_cleanup(url: str, queue: str, nodenames: list[str]) -> None:
    """Remove what the private queue and our workers left in Redis, and nothing of anyone else's."""
    import redis

    with redis.Redis.from_url(url, socket_connect_timeout=3) as client:
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        for key in client.scan_iter(match="_kombu.binding.*pidbox*"):
            stale = [m for m in client.smembers(key) if any(n.encode() in m for n in nodenames)]
            if stale:
                client.srem(key, *stale)
        # kombu's shared bookkeeping of fanout bindings (control pings): dropped only when nothing
        # else is left in this Redis database, i.e. nobody else uses it
        if set(client.scan_iter(count=100)) <= {b"_kombu.binding_deadlines"}:
            client.delete("_kombu.binding_deadlines")


# --- Report ------------------------------------------------------------------------------------------------


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report_part1(result: dict[str, Any], rows: list[tuple]) -> None:
    figures = result["chapters"]
    overhead = [f["overhead_ms"] for f in figures]
    wall = [f["wall_ms"] for f in figures]
    llm = [f["llm_ms"] for f in figures]
    med, p95 = statistics.median(overhead), percentile(overhead, 0.95)
    print()
    print(f"Part 1 — orchestration overhead per chapter: {len(figures)} chapters of one project in one batch, "
          f"zero-latency offline LLM, one worker (for the record: the target is relative to a real model, below)")
    print(f"  worker: {result['command']}")
    print("  overhead = run wall (PipelineRun.created_at → finished_at) − time inside LLM calls "
          "(sum of LLMCall.duration_ms of the run)")
    print(f"  {'':<22} {'median':>8} {'p95':>8} {'min':>8} {'max':>8}")
    for label, values in (("overhead ms", overhead), ("wall ms", wall), ("inside LLM calls ms", llm),
                          ("  in stages, not LLM", [f["in_stage_ms"] for f in figures]),
                          ("  between stages", [f["between_ms"] for f in figures])):
        print(f"  {label:<22} {statistics.median(values):>8.1f} {percentile(values, 0.95):>8.1f} "
              f"{min(values):>8.1f} {max(values):>8.1f}")
    stages = sorted({f["stages"] for f in figures})
    calls = sorted({f["llm_calls"] for f in figures})
    print(f"  stages per chapter: {stages}; LLM calls per chapter: {calls}; batch observed by the bench: "
          f"{result['observed_seconds']:.2f} s ({result['observed_seconds'] / len(figures) * 1000:.0f} ms/chapter)")
    warm = result["warmup"]
    print(f"  warm-up chapter (not counted): wall {warm['wall_ms']:.0f} ms, overhead {warm['overhead_ms']:.0f} ms")
    print("  \"in stages, not LLM\": StageRun.duration_ms (claimed → completed) minus LLM time: context reads, "
          "prompt assembly, parsing, checks, writes;")
    print("  \"between stages\": the rest of the wall: end of the completing transaction, broker hop, task start, "
          "claim transaction.")
    print("  per stage (medians):  " + "  ".join(
        f"{stage} {f['gap_ms']:.0f}+{f['inside_ms']:.0f}" for stage, f in result["stages"].items())
        + "  ms (gap before + inside, not LLM)")
    print_cpu(result, len(figures))
    rows.append(("1 overhead median, 0 ms model", f"{med:.1f} ms", "-", "-"))
    rows.append(("1 overhead p95, 0 ms model", f"{p95:.1f} ms", "-", "-"))
    rows.append(("1 wall/chapter median, 0 ms model", f"{statistics.median(wall):.1f} ms", "-", "-"))
    if result.get("model"):
        report_part1_model(result["model"], result["model_seconds"], rows)


def report_part1_model(model: dict[str, Any], seconds: float, rows: list[tuple]) -> None:
    """The figure users feel: what the orchestration adds to a chapter whose model takes ``seconds``
    per call, as a share of the chapter's LLM time."""
    figures = model["chapters"]
    print()
    print(f"Part 1 — the same, with {seconds:g} s per LLM call: {len(figures)} chapters after a warm-up chapter")
    print(f"  {'chapter':>7} {'wall s':>9} {'LLM s':>9} {'calls':>5} {'overhead ms':>12} {'share':>7}")
    shares = []
    for f in figures:
        share = f["overhead_ms"] / f["llm_ms"] if f["llm_ms"] else float("inf")
        shares.append(share)
        print(f"  {f['chapter']:>7} {f['wall_ms'] / 1000:>9.2f} {f['llm_ms'] / 1000:>9.2f} {f['llm_calls']:>5} "
              f"{f['overhead_ms']:>12.0f} {share * 100:>6.2f}%")
    print("  per stage (medians):  " + "  ".join(
        f"{stage} {f['gap_ms']:.0f}+{f['inside_ms']:.0f}" for stage, f in model["stages"].items())
        + "  ms (gap before + inside, not LLM)")
    worst = max(shares)
    target = f"≤ {OVERHEAD_SHARE_TARGET * 100:.0f} % of LLM time"
    rows.append((f"1 overhead at {seconds:g} s/call, worst", f"{worst * 100:.2f} %", target,
                 verdict(worst <= OVERHEAD_SHARE_TARGET)))


def _batch_figures(batch: dict[str, Any]) -> dict[str, float]:
    figures = batch["chapters"]
    wall = batch["finished_at"] - batch["started_at"]
    llm = sum(f["llm_ms"] for f in figures) / 1000
    return {"wall": wall, "llm": llm, "calls": sum(f["llm_calls"] for f in figures),
            "share": llm / (batch["concurrency"] * wall)}


def report_part2(result: dict[str, Any], rows: list[tuple]) -> None:
    figures = result["chapters"]
    workers = result["concurrency"]
    parallel = _batch_figures(result)
    per_project: dict[int, float] = {}
    for f in figures:
        per_project[f["project"]] = per_project.get(f["project"], 0.0) + f["llm_ms"] / 1000
    critical = max(per_project.values())
    print()
    print(f"Part 2 — parallel efficiency: {result['projects']} projects × {result['project_chapters']} chapters, "
          f"{result['latency_ms']} ms per LLM call, {workers} worker processes against 1")
    print(f"  worker: {result['command']}")
    print(f"  T{workers} = wall of the batch on {workers} processes (first chapter_run_start → last run finished) "
          f"= {parallel['wall']:.2f} s (sending the {result['projects']} starts took "
          f"{result['send_seconds'] * 1000:.0f} ms)")
    print(f"  {parallel['calls']} LLM calls, {parallel['llm'] / parallel['calls'] * 1000:.0f} ms each on average; "
          f"longest project's own LLM time (its critical path) {critical:.2f} s, below "
          f"{parallel['llm'] / workers:.2f} s (all LLM time / {workers}), so {workers} processes can be kept busy")
    print_cpu(result, len(figures), wall=parallel["wall"])
    overhead = [f["overhead_ms"] for f in figures]
    print(f"  per chapter under load: wall median {statistics.median(f['wall_ms'] for f in figures):.0f} ms, "
          f"overhead median {statistics.median(overhead):.0f} ms, p95 {percentile(overhead, 0.95):.0f} ms "
          f"(includes waiting in the queue behind other projects)")
    serial_result = result.get("serial")
    share_label = f"LLM share, {workers} process{'es' if workers > 1 else ''}"
    if serial_result is None:
        print(f"  LLM share = LLM time / ({workers} × T{workers}) = {parallel['share'] * 100:.1f} % "
              f"(no one-process reference run: no parallel efficiency)")
        rows.append((f"2 {share_label}", f"{parallel['share'] * 100:.1f} %", "-", "-"))
        return
    serial = _batch_figures(serial_result)
    efficiency = parallel["share"] / serial["share"]
    print(f"  T1 = the same batch ({result['projects']} other projects with the same books) "
          f"on 1 process = {serial['wall']:.2f} s; "
          f"{serial['calls']} LLM calls, {serial['llm']:.2f} s of LLM time (against {parallel['llm']:.2f} s)")
    print_cpu(serial_result, len(serial_result["chapters"]), wall=serial["wall"])
    print("  LLM share = the part of the processes' time spent inside LLM calls = LLM time / (processes × wall):")
    print(f"    {workers} processes: {parallel['llm']:.2f} / ({workers} × {parallel['wall']:.2f}) "
          f"= {parallel['share'] * 100:.1f} %;  1 process: {serial['llm']:.2f} / {serial['wall']:.2f} "
          f"= {serial['share'] * 100:.1f} %")
    print(f"  parallel efficiency = LLM share with {workers} / LLM share with 1 = {efficiency * 100:.1f} % "
          f"(= T1 / ({workers} × T{workers}) for the same LLM time; speedup {efficiency * workers:.2f} of {workers})")
    print("  The LLM share with one process bounds the one with more: what one process loses is per-chapter "
          "overhead (part 1)")
    print("  at this latency, not parallelism; what the efficiency shows is what adding processes loses on top "
          "of that.")
    rows.append(("2 parallel efficiency", f"{efficiency * 100:.1f} %", f"≥ {EFFICIENCY_TARGET * 100:.0f} %",
                 verdict(efficiency >= EFFICIENCY_TARGET)))
    rows.append((f"2 {share_label}", f"{parallel['share'] * 100:.1f} %", "-", "-"))
    rows.append(("2 LLM share, 1 process", f"{serial['share'] * 100:.1f} %", "-", "-"))


REFERENCE_LOOP_QUIET_MS = 37  # reference_loop_ms() on this machine when it ran fastest (2026-11-23)


def reference_loop_ms() -> float:
    """The machine's speed right now: the best of 5 runs of a fixed pure-Python workload (JSON
    round trips and dict work, like the pipeline's own Python). On a shared machine it varies by
    half or more from one minute to the next; every figure of the part moves with it."""
    data = {"chapter": "第一章" * 400, "scores": [{"k": i, "v": i / 7} for i in range(200)]}
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(60):
            copy = json.loads(json.dumps(data, ensure_ascii=False))
            sum(len(str(item)) for item in copy["scores"])
        best = min(best, time.perf_counter() - started)
    return best * 1000


def print_cpu(result: dict[str, Any], chapters: int, wall: float | None = None) -> None:
    load = result.get("load")
    if load is not None:
        print(f"  load average (1 min) when the part started: {load:.2f} on {os.cpu_count()} CPUs "
              f"(other processes competing for the CPUs inflate every figure)")
    speed = result.get("speed")
    if speed is not None:
        print(f"  machine speed when the part started: reference loop {speed:.0f} ms (it took "
              f"{REFERENCE_LOOP_QUIET_MS} ms on this machine at its fastest; every figure scales with it)")
    cpu = result.get("cpu") or {}
    parts = []
    if cpu.get("worker") is not None:
        parts.append(f"worker processes {cpu['worker'] / chapters * 1000:.0f} ms CPU (/proc)")
    if cpu.get("postgres") is not None:
        parts.append(f"PostgreSQL {cpu['postgres'] / chapters * 1000:.0f} ms executing statements and "
                     f"{cpu['sessions'] / chapters:.1f} new connections (pg_stat_database)")
    if parts:
        print("  per chapter: " + "; ".join(parts))
    if wall and cpu.get("worker") is not None:
        busy = cpu["worker"] + (cpu.get("postgres") or 0.0)
        print(f"  worker CPU + PostgreSQL statement time: {busy:.1f} s in a wall of {wall:.1f} s, i.e. "
              f"{busy / wall:.2f} of the {os.cpu_count()} CPUs")


def report_part3(result: dict[str, Any], rows: list[tuple]) -> None:
    committed = result["committed"]
    print()
    print(f"Part 3 — the writer's prompt over a {result['chapters']}-chapter book (eager, in-process, "
          f"{result['vendor']}, zero-latency offline LLM)")
    per_chapter = result["seconds"] / max(1, committed) * 1000
    print(f"  wrote {committed} chapters in {result['seconds']:.0f} s ({per_chapter:.0f} ms/chapter); "
          f"{result['stage_runs']} stage runs, {result['llm_calls']} LLM calls; "
          f"{result['queries'] / max(1, committed):.0f} queries/chapter")
    last = result["last_run"]
    if committed < result["chapters"]:
        print(f"  WARNING: the batch stopped at chapter {last and last['chapter']}: "
              f"{last and last['status']}/{last and last['stage']} {last and last['error']}")
    print("  cost along the book (a figure that grows means something reads the whole book):")
    for cost in result["costs"]:
        print(f"    chapters {cost['first']:>4}–{cost['last']:<4} {cost['ms_per_chapter']:7.0f} ms/chapter "
              f"{cost['queries_per_chapter']:7.1f} queries/chapter")
    print(f"  live memory levels at the end: {result['memory_levels']}")
    print("  the draft stage's prompt (receipt, estimator tokens) at:")
    checkpoints = {int(k): v for k, v in result["checkpoints"].items()}
    for chapter, figures in checkpoints.items():
        blocks = ", ".join(f"{name} {tokens}" for name, tokens in figures["blocks"])
        trimmed = f"; trimmed: {figures['trimmed']}" if figures["trimmed"] else ""
        print(f"    ch{chapter:<5} total {figures['total_tokens']:>6} / budget {figures['budget']} = book bible "
              f"{figures.get('bible_tokens', 0)} (cached) + per-chapter part {figures.get('per_chapter_tokens')}: "
              f"{blocks}{trimmed}")
        if figures.get("levels"):
            print(f"    {'':<7} memory levels: {', '.join(figures['levels'])}")
    tokens = result["tokens_per_chapter"]
    print(f"  tokens per committed chapter, all stages (StageRun rows): input {tokens['input']:.0f}, "
          f"output {tokens['output']:.0f}")
    for stage, figures in sorted(result["by_stage"].items()):
        print(f"    {stage:<10} input {figures['input']:8.0f}  output {figures['output']:7.0f}  "
              f"({figures['calls']} stage runs)")
    for segment in result["segments"]:
        print(f"    chapters {segment['first']}–{segment['last']}: input {segment['input']:.0f}, "
              f"output {segment['output']:.0f} per chapter")
    wanted = [c for c in PROMPT_CHECKPOINTS if c <= committed] or ([committed] if committed else [])
    if committed and committed not in wanted:
        wanted.append(committed)
    minimum = result.get("cache_minimum") or {"model": "?", "tokens": 1024}
    for chapter in wanted:
        figures = checkpoints.get(chapter, {})
        part = figures.get("per_chapter_tokens")
        if part is None:
            rows.append((f"3 per-chapter ch{chapter}", "missing", f"≤ {PROMPT_TARGET_TOKENS}", "FAIL"))
            continue
        rows.append((f"3 per-chapter ch{chapter}", f"{part} tokens", f"≤ {PROMPT_TARGET_TOKENS}",
                     verdict(part <= PROMPT_TARGET_TOKENS)))
        bible = figures.get("bible_tokens", 0)
        rows.append((f"3 book bible ch{chapter}", f"{bible} tokens", f"{minimum['tokens']}–{BIBLE_MAX_TOKENS}",
                     verdict(minimum["tokens"] <= bible <= BIBLE_MAX_TOKENS)))
    first, last_chapter = 30, max(checkpoints) if checkpoints else None
    if first in checkpoints and last_chapter and last_chapter != first:
        ratio = checkpoints[last_chapter]["per_chapter_tokens"] / checkpoints[first]["per_chapter_tokens"]
        rows.append((f"3 ch{last_chapter} / ch30 (part)", f"{ratio:.3f}", f"≤ {PROMPT_GROWTH_TARGET:.2f}",
                     verdict(ratio <= PROMPT_GROWTH_TARGET)))
        whole = checkpoints[last_chapter]["total_tokens"] / checkpoints[first]["total_tokens"]
        rows.append((f"3 ch{last_chapter} / ch30 (whole)", f"{whole:.3f}", "-", "-"))
    print(f"  the book bible must reach the cache minimum of {minimum['model']} ({minimum['tokens']} tokens) "
          f"and stay ≤ {BIBLE_MAX_TOKENS}; the per-chapter part ≤ {PROMPT_TARGET_TOKENS} and ch1000/ch30 ≤ "
          f"{PROMPT_GROWTH_TARGET:.2f}")
    rows.append(("3 tokens/chapter in/out", f"{tokens['input']:.0f} / {tokens['output']:.0f}", "-", "-"))
    if committed < result["chapters"]:
        rows.append(("3 chapters written", f"{committed}", f"{result['chapters']}", "FAIL"))


def print_table(rows: list[tuple], errors: dict[str, str]) -> None:
    print()
    width = max([26, *(len(row[0]) for row in rows)])
    target_width = max([12, *(len(row[2]) for row in rows)])
    header = f"{'figure':<{width}} {'measured':>18} {'target':>{target_width}} {'':>5}"
    print(header)
    print("-" * len(header))
    for name, measured, target, ok in rows:
        print(f"{name:<{width}} {measured:>18} {target:>{target_width}} {ok:>5}")
    for part, error in errors.items():
        print(f"{'part ' + part:<{width}} {'not measured':>18} {'':>{target_width}} {'FAIL':>5}")
    failed = [r[0] for r in rows if r[3] == "FAIL"] + [f"part {p} (not measured)" for p in errors]
    print()
    judged = [r for r in rows if r[3] in ("PASS", "FAIL")]
    if failed:
        print("RESULT: FAIL: " + ", ".join(failed))
    else:
        print("RESULT: " + ("PASS (all targets met)" if judged else "no target measured"))


# --- Main ------------------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("1", "2", "3", "all"), default="all")
    parser.add_argument("--chapters", type=int, default=1000, help="part 3: chapters of the book (default 1000)")
    parser.add_argument("--overhead-chapters", type=int, default=20,
                        help="part 1: chapters in the zero-latency batch (default 20)")
    parser.add_argument("--model-seconds", type=float, default=20.0,
                        help="part 1: seconds per LLM call of the realistic model (default 20)")
    parser.add_argument("--model-chapters", type=int, default=2,
                        help="part 1: chapters measured with the realistic model, after a warm-up (default 2; "
                             "0 skips it)")
    parser.add_argument("--projects", type=int, default=16, help="part 2: projects (default 16)")
    parser.add_argument("--project-chapters", type=int, default=3, help="part 2: chapters per project (default 3)")
    parser.add_argument("--latency-ms", type=int, default=200,
                        help="part 2: offline latency per LLM call (default 200)")
    parser.add_argument("--concurrency", type=int, default=4, help="part 2: worker processes (default 4)")
    parser.add_argument("--no-serial", action="store_true",
                        help="part 2: skip the one-process reference run (then no parallel efficiency is printed)")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL,
                        help=f"PostgreSQL database the benchmark creates and drops (default {DEFAULT_DATABASE_URL})")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL,
                        help=f"Redis for parts 1 and 2; a private queue is used on it (default {DEFAULT_REDIS_URL})")
    parser.add_argument("--recreate-db", action="store_true", help="drop the database first if it exists")
    parser.add_argument("--keep", action="store_true", help="keep the database and the temp directory (worker logs)")
    parser.add_argument("--phase", help=argparse.SUPPRESS)  # internal: part 3 in a child process
    args = parser.parse_args(argv)
    if args.chapters < 1 or args.overhead_chapters < 1 or args.projects < 1 or args.project_chapters < 1:
        parser.error("counts must be at least 1")
    return args


def child_main(args: argparse.Namespace) -> int:
    setup_django(args.database_url, "")
    result = part3_book(args.chapters)
    print(RESULT_MARK + json.dumps(result, ensure_ascii=False), flush=True)
    return 0


def _terminate(signum, frame):  # SIGTERM: unwind through the finally blocks (workers, database)
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.phase == "part3":
        return child_main(args)
    signal.signal(signal.SIGTERM, _terminate)
    parts = ["1", "2", "3"] if args.part == "all" else [args.part]
    needs_redis = "1" in parts or "2" in parts
    workdir = Path(tempfile.mkdtemp(prefix="novelsite-bench-pipeline-"))
    queue = f"novelsite-bench-pipeline-{uuid.uuid4().hex[:12]}"
    workers: list[Worker] = []
    created_db = False
    results: dict[str, dict] = {}
    errors: dict[str, str] = {}
    try:
        try:
            if needs_redis:
                redis_check(args.redis_url)
            create_postgres(args.database_url, args.recreate_db)
            created_db = True
            # The sending side: tasks go to the private queue, through Celery's default queue (and
            # NOVELSITE_TASK_QUEUE, for a queueing module that reads such a setting).
            os.environ["NOVELSITE_TASK_QUEUE"] = queue
            setup_django(args.database_url, args.redis_url if needs_redis else "")
            from django.conf import settings
            from django.core.management import call_command
            from django.db import connection, connections

            from novelsite.celery import app

            app.conf.task_default_queue = queue
            routing = "task_default_queue" + (" and NOVELSITE_TASK_QUEUE" if hasattr(settings, "NOVELSITE_TASK_QUEUE")
                                              else "")
            print(f"workdir {workdir}; database {connection.settings_dict['NAME']} ({connection.vendor}); "
                  + (f"queue {queue} (via {routing}); " if needs_redis else "") + "migrating …", flush=True)
            call_command("migrate", verbosity=0, interactive=False)
            connections.close_all()
        except SystemExit as exc:
            print(f"cannot run the benchmark: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:
            print(f"cannot run the benchmark: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        for part in parts:
            try:
                if part == "1":
                    results[part] = part1_overhead(args, env, queue, workdir, workers)
                elif part == "2":
                    results[part] = part2_parallel(args, env, queue, workdir, workers)
                else:
                    results[part] = spawn_part3(args, env)
            except Exception as exc:  # the part could not produce its figures: report, go on
                errors[part] = f"{type(exc).__name__}: {exc}"
                print(f"  part {part} could not be measured: {errors[part]}", flush=True)
        rows: list[tuple] = []
        print()
        print(f"Chapter pipeline benchmark: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
              f"database {connection.vendor}")
        for part, reporter in (("1", report_part1), ("2", report_part2), ("3", report_part3)):
            if part in results:
                reporter(results[part], rows)
        for part, error in errors.items():
            print(f"\nPart {part}: not measured: {error}")
        print_table(rows, errors)
    finally:
        for worker in workers:
            worker.stop()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:
            pass
        if needs_redis:
            try:
                redis_cleanup(args.redis_url, queue, [w.nodename for w in workers])
            except Exception as exc:
                print(f"warning: Redis cleanup failed: {exc}", file=sys.stderr)
        if args.keep:
            print(f"kept {workdir}" + (f" and the database {args.database_url}" if created_db else ""))
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            if created_db:
                drop_postgres(args.database_url)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
