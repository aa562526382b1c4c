"""What the exporter writes under ``staging/`` for a project (registered in ``PipelineConfig.ready``):

- the artifacts of its in-flight chapter run, at the seed's staging paths (seed 000 §9.1: chapter,
  summary, delta, crossref, storyline memory, evaluation), from the run's content zone;
- any other run's ``staged_files`` content key (``{"chapters/chapter-048.md": "...", ...}``, paths
  relative to ``staging/``);
- the NOVEL_ASK answers of that run's questions, at their ``answer_path`` (facts §14.5).
"""
from __future__ import annotations

from collections.abc import Iterator

from pipeline.models import ACTIVE_RUN_STATUSES, GateAnswer, PipelineRun
from pipeline.chapter.stages.draft import split_chapter
from projects.filetree.canonical import dump_json, dump_text
from projects.filetree.chapter_heading import chapter_file_text
from projects.ids import chapter_id
from projects.filetree.paths import check_relative_path
from projects.models import Project


def staging_files_of(project: Project) -> Iterator[tuple[str, bytes]]:
    runs = PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES).order_by("pk")
    for run in runs:
        if run.kind == "chapter" and run.chapter:
            yield from _chapter_artifacts(run)
        staged = run.blackboard.get("content", {}).get("staged_files") or {}
        for relative in sorted(staged):
            path = check_relative_path(f"staging/{relative}")
            text = staged[relative]
            yield path, dump_json(text) if path.endswith(".json") and not isinstance(text, str) else dump_text(text)
    answers = (GateAnswer.objects.filter(question__run__in=runs).select_related("question")
               .order_by("question__answer_path"))
    for answer in answers:
        if answer.question.answer_path.startswith("staging/"):
            yield check_relative_path(answer.question.answer_path), dump_json(answer.answer)


def _chapter_artifacts(run: PipelineRun) -> Iterator[tuple[str, bytes]]:
    content, cid = run.blackboard.get("content", {}), chapter_id(run.chapter)
    chapter, summary, evaluation = content.get("chapter", {}), content.get("summary", {}), content.get("evaluation", {})
    text = chapter.get("refined") or chapter.get("draft")
    imported = chapter.get("imported_file")  # an imported tree's staged chapter (pipeline.steps.staged_resume)
    if text and imported and split_chapter(imported, f"第{run.chapter}章") == (chapter.get("title"), text):
        yield f"staging/chapters/{cid}.md", imported.encode()  # unchanged since: written back as it came
    elif text:
        yield f"staging/chapters/{cid}.md", dump_text(chapter_file_text(run.chapter, chapter.get("title", ""), text))
    if summary.get("text"):
        yield f"staging/summaries/{cid}-summary.md", dump_text(summary["text"])
    if summary.get("delta"):
        yield f"staging/state/{cid}-delta.json", dump_json(summary["delta"])
        if summary.get("crossref") is not None:
            yield f"staging/state/{cid}-crossref.json", dump_json(summary["crossref"])
        if summary.get("memory"):
            line = summary["delta"].get("storyline_id", "")
            yield check_relative_path(f"staging/storylines/{line}/memory.md"), dump_text(summary["memory"])
    if evaluation.get("data"):
        yield f"staging/evaluations/{cid}-eval.json", dump_json(evaluation["data"])
