"""``novel write <project> --chapters N``: start a batch and show each stage's progress.

Eagerly (no broker) the whole batch runs inside this process and progress comes from in-process
events; with a broker the command starts the batch and follows the runs in the database.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from pipeline.runtime import progress
from pipeline.models import PipelineRun, RunStatus
from pipeline.runtime.runs import chapter_run_start
from projects.models import Project

STAGE_LABELS = {"draft": "起草", "summarize": "摘要", "refine": "润色", "judge": "评审", "commit": "提交",
                "maintain": "整理记忆"}
BAR = 20


def _bar(chars: int, target: int = 3000) -> str:
    filled = min(BAR, chars * BAR // target)
    return "#" * filled + "-" * (BAR - filled)


def _printer(say: Callable[[str], None]) -> Callable[[dict[str, Any]], None]:
    last_text = {}

    def show(event: dict[str, Any]) -> None:
        label = f"第{event['chapter']}章 {STAGE_LABELS.get(event['stage'], event['stage'])}"
        if event["event"] == "start":
            say(f"  {label} …" + (f" (attempt {event['attempt']})" if event["attempt"] > 1 else ""))
        elif event["event"] == "text" and event["stage"] == "draft":
            bucket = event["chars"] // 600
            if last_text.get(event["run_id"]) != bucket:
                last_text[event["run_id"]] = bucket
                say(f"    [{_bar(event['chars'])}] {event['chars']} chars")
        elif event["event"] == "done":
            say(f"  {label} done" + (f" → {event['next']}" if event.get("next") else ""))
        elif event["event"] == "failed":
            say(f"  {label} failed: {event['error']} (will retry)")
    return show


def write_chapters(project: Project, count: int, *, say: Callable[[str], None], timeout: int) -> dict[str, Any]:
    start_chapter = project.last_completed_chapter
    if settings.CELERY_TASK_ALWAYS_EAGER:
        with progress.listening(_printer(say)):
            first = chapter_run_start(project_id=project.pk, batch_remaining=count - 1)
    else:
        first = chapter_run_start(project_id=project.pk, batch_remaining=count - 1)
        _follow(project, start_chapter + count, say=say, timeout=timeout)
    project.refresh_from_db()
    runs = PipelineRun.objects.filter(project=project, pk__gte=first.pk).order_by("pk")
    waiting = [r.chapter for r in runs if r.status == RunStatus.WAITING]
    errors = [f"chapter {r.chapter}: {r.error}" for r in runs if r.status == RunStatus.ERROR]
    written = project.last_completed_chapter - start_chapter
    say(f"Wrote {written} of {count} chapter(s); last completed chapter {project.last_completed_chapter}.")
    for chapter in waiting:
        say(f"Chapter {chapter} is waiting for a person's decision (see the gates page or the admin).")
    for error in errors:
        say(f"Stopped with an error: {error}. Retry it once the cause is fixed.")
    return {"project": project.slug, "written": written, "last_completed_chapter": project.last_completed_chapter,
            "waiting": waiting, "errors": errors}


def _follow(project: Project, target: int, *, say: Callable[[str], None], timeout: int) -> None:
    deadline, seen = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        project.refresh_from_db()
        run = PipelineRun.objects.filter(project=project).order_by("-pk").first()
        state = (run.chapter, run.stage, run.status) if run else None
        if state != seen and run is not None:
            say(f"  第{run.chapter}章 {STAGE_LABELS.get(run.stage, run.stage)} [{run.status}]")
            seen = state
        if project.last_completed_chapter >= target or (run and run.status in (RunStatus.WAITING, RunStatus.ERROR)):
            return
        if run and run.status in (RunStatus.DONE, RunStatus.CANCELLED) and not PipelineRun.objects.filter(
                project=project, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).exists():
            return
        time.sleep(0.5)
    say(f"Still running after {timeout}s; the workers carry on (check `novel status`).")
