"""Staged texts for people to read before anything is committed: a chapter the judge paused (its
draft, polished text, evaluation, deterministic findings and the diff to the draft before a
revision), and the quick start's trial chapter with its evaluation. Read from the run's blackboard
(content zone, seed 001), where staging lives until commit; never written here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.runtime.blackboard import Blackboard
from pipeline.models import GateQuestion, PipelineRun, RunKind, RunStatus
from projects.evaluations import EvaluationReport, evaluation_report
from projects.models import ExtraFile, Project
from projects.services.quickstart import TRIAL_CHAPTER_PATH, TRIAL_EVALUATION_PATH
from projects.text_diff import line_diff

DIFF_MAX_LINES = 400  # a whole rewritten chapter is a long diff; the texts themselves are shown in full


@dataclass(frozen=True)
class StagedChapterReview:
    """What a reviewer reads before answering a paused chapter's question."""

    chapter: int
    title: str
    draft: str
    refined: str  # "" when the draft was not polished (yet)
    report: EvaluationReport
    required_fixes: list[str] = field(default_factory=list)  # what the revision that wrote this draft asked
    previous_draft: str = ""
    diff: list[tuple[str, str]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text a commit would take (the polished one when there is one)."""
        return self.refined or self.draft


def paragraphs(text: str) -> list[str]:
    return [line.strip() for line in (text or "").split("\n") if line.strip()]


def chapter_review(question: GateQuestion) -> StagedChapterReview | None:
    """The staged chapter of a question asked by a chapter (or rewrite) run; None for other gates."""
    run = question.run
    if run is None or run.kind not in (RunKind.CHAPTER, RunKind.REWRITE) or not run.chapter:
        return None
    skill = Blackboard(run.blackboard).as_("skill")
    draft = skill.read_content("chapter", "draft") or ""
    earlier = [entry.get("value") for entry in skill.content_versions("chapter", "draft")
               if isinstance(entry.get("value"), str) and entry.get("value") != draft]
    previous = earlier[-1] if earlier else (skill.read_content("revision", "previous_text") or "")
    diff = line_diff(previous, draft)[:DIFF_MAX_LINES] if previous else []
    fixes = skill.read_content("revision", "required_fixes") or []
    return StagedChapterReview(
        chapter=run.chapter, title=skill.read_content("chapter", "title") or "", draft=draft,
        refined=skill.read_content("chapter", "refined") or "",
        report=evaluation_report(skill.read_content("evaluation", "data"), gate=skill.read_content("gate", "result"),
                                 checks=skill.read_content("evaluation", "checks") or {}),
        required_fixes=[str(f) for f in fixes] if previous else [], previous_draft=previous, diff=diff)


@dataclass(frozen=True)
class TrialChapter:
    """The quick start's trial chapter (facts §5 ``trial``) and its evaluation (``results``)."""

    title: str
    text: str
    report: EvaluationReport | None
    warnings: list[str]
    run_id: int | None  # None when it comes from the committed (or imported) file tree
    staged: bool  # the quick start has not committed it yet


def quickstart_trial(*, project: Project) -> TrialChapter | None:
    """The trial chapter from the latest quick-start run that wrote one, else from the committed
    files (``logs/quickstart/``, also where an imported tree keeps it); None when there is none.
    Two queries at most."""
    run = (PipelineRun.objects.filter(project=project, kind=RunKind.QUICKSTART)
           .exclude(status=RunStatus.CANCELLED).only("pk", "status", "blackboard").order_by("-pk").first())
    if run is not None:
        skill = Blackboard(run.blackboard).as_("skill")
        trial = skill.read_content("book", "trial")
        if isinstance(trial, dict) and trial.get("text"):
            results = skill.read_content("book", "results") or {}
            evaluation = results.get("evaluation") if isinstance(results, dict) else None
            title, text = _split_heading(str(trial["text"]), str(trial.get("title") or ""))
            return TrialChapter(title=title, text=text,
                                report=evaluation_report(evaluation) if isinstance(evaluation, dict) else None,
                                warnings=[str(w) for w in (results.get("warnings") or [])],
                                run_id=run.pk, staged=run.status != RunStatus.DONE)
    files = dict(ExtraFile.objects.filter(project=project, path__in=[TRIAL_CHAPTER_PATH, TRIAL_EVALUATION_PATH])
                 .values_list("path", "content"))
    if not files.get(TRIAL_CHAPTER_PATH):
        return None
    title, text = _split_heading(files[TRIAL_CHAPTER_PATH], "")
    return TrialChapter(title=title, text=text, report=_report_from_text(
        files.get(TRIAL_EVALUATION_PATH)), warnings=[], run_id=None, staged=False)


def _report_from_text(text: str | None) -> EvaluationReport | None:
    import json

    try:
        data: Any = json.loads(text) if text else None
    except ValueError:
        return None
    return evaluation_report(data) if isinstance(data, dict) else None


def _split_heading(text: str, title: str) -> tuple[str, str]:
    """facts §5: the trial starts with a ``# title`` line; a reader sees it as the title, not as Markdown."""
    first, _sep, rest = text.lstrip().partition("\n")
    if first.startswith("#"):
        return title or first.lstrip("#").strip(), rest.strip()
    return title, text.strip()
