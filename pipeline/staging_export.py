"""What the exporter writes under ``staging/`` for a project (registered in ``PipelineConfig.ready``):

- the artifacts of its in-flight run, taken from the blackboard's content zone key
  ``staged_files`` (``{"chapters/chapter-048.md": "...", ...}``, paths relative to ``staging/``);
- the NOVEL_ASK answers of that run's questions, at their ``answer_path`` (facts §14.5).
"""
from __future__ import annotations

from collections.abc import Iterator

from pipeline.models import ACTIVE_RUN_STATUSES, GateAnswer, PipelineRun
from projects.filetree.canonical import dump_json, dump_text
from projects.filetree.paths import check_relative_path
from projects.models import Project


def staging_files_of(project: Project) -> Iterator[tuple[str, bytes]]:
    runs = PipelineRun.objects.filter(project=project, status__in=ACTIVE_RUN_STATUSES).order_by("pk")
    for run in runs:
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
