"""Craft lints (``pipeline.chapter.craft``) applied to a project: its thresholds, blacklist and title
policy, on a committed chapter, a staged one or a chapter file. Reads only; never writes.

Thresholds layer as ``LintSettings.resolve`` says: defaults, then the project's active platform
profile (its hard word range, title policy and phone paragraph limit), then the project's own
``lint_settings``.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.chapter.craft.catalogue import RULES_BY_ID
from pipeline.chapter.craft.lints import LintReport, LintSettings, LintSettingsError, lint_text
from projects.errors import InvalidData, NotFound
from projects.models import Project
from projects.platforms.limits import platform_limits

MAX_FILE_BYTES = 2_000_000  # a chapter is ~10 KB; anything this big is not one


def platform_lint_layer(project: Project) -> dict[str, Any]:
    """What the project's platform profile sets for the lints: the chapter's hard word range, the
    title policy, and, where phone readability is on, the longest paragraph."""
    limits = platform_limits(project)
    words = limits["word_count"]
    layer: dict[str, Any] = {"word_count": {"min": words["hard_min"], "max": words["hard_max"]},
                             "title_policy": limits["title_policy"]}
    mobile = limits["readability"]
    if mobile.get("enabled") and isinstance(mobile.get("max_paragraph_chars"), int):
        layer["lints"] = {"paragraph_max_chars": mobile["max_paragraph_chars"]}
    return layer


def project_lint_settings(project: Project | None, *, platform: Mapping[str, Any] | None = None) -> LintSettings:
    """The project's lint settings: its platform's (or ``platform``, a layer in the settings'
    shape) under the project's own ``lint_settings``. ``InvalidData`` when they cannot be used."""
    if project is not None and platform is None:
        platform = platform_lint_layer(project)
    own = project.lint_settings if project is not None else None
    try:
        return LintSettings.resolve(platform=platform, project=own if isinstance(own, Mapping) else None)
    except LintSettingsError as exc:
        raise InvalidData(f"The lint settings cannot be used: {exc}") from exc


def lint_project_text(project: Project | None, text: str, *, chapter: int | None = None, title: str | None = None,
                      expect_heading: bool = False, settings: LintSettings | None = None) -> LintReport:
    """Lint ``text`` with the project's settings and blacklist (defaults and no blacklist without one)."""
    settings = settings or project_lint_settings(project)
    blacklist = project.ai_blacklist if project is not None and isinstance(project.ai_blacklist, Mapping) else None
    try:
        return lint_text(text, thresholds=settings.thresholds, blacklist=blacklist, chapter=chapter, title=title,
                         title_policy=settings.title_policy, word_range=settings.word_range,
                         expect_heading=expect_heading)
    except LintSettingsError as exc:
        raise InvalidData(f"The lint settings cannot be used: {exc}") from exc


def refine_targets(report: LintReport, *, evidence: int = 20) -> list[dict[str, Any]]:
    """The findings the refiner is asked to fix, hard ones first: rule, severity, Chinese name and
    message, and evidence with offsets into the text the refiner receives."""
    ordered = sorted(report.findings, key=lambda f: f.severity != "hard")
    return [{"rule": f.rule, "severity": f.severity, "name": RULES_BY_ID[f.rule].name, "message": f.message,
             "evidence": f.evidence[:evidence]} for f in ordered]


def hard_fixes(report: LintReport) -> list[str]:
    """Instructions for a revision from the hard findings (Chinese, with a few quotes)."""
    fixes = []
    for f in report.hard:
        quotes = "；".join(f"【{e['text'][:30]}】" for e in f.evidence[:3])
        fixes.append(f"[{f.rule}] {f.message}" + (f"（例：{quotes}）" if quotes else ""))
    return fixes


def commit_blocked_by_lint(project: Project, *, text: str, chapter: int, title: str,
                           gate: Mapping[str, Any]) -> list[str]:
    """The hard findings that keep a staged chapter from committing (issue #17), empty when there
    are none or a person accepted the chapter at a gate (``accepted_by`` on the gate result)."""
    if gate.get("accepted_by"):
        return []
    return hard_fixes(lint_project_text(project, text, chapter=chapter, title=title))


def lint_chapter(project: Project, number: int) -> LintReport:
    """A committed chapter's stored text (its title is kept apart, so no heading line is expected)."""
    chapter = project.chapters.filter(number=number).only("number", "title", "text").first()
    if chapter is None:
        raise NotFound(f"Project {project.slug} has no chapter {number}.")
    return lint_project_text(project, chapter.text, chapter=chapter.number, title=chapter.title)


def read_chapter_file(path: str) -> str:
    """A chapter file's text decoded from UTF-8 (lint offsets count its characters);
    ``InvalidData`` for a missing, huge, binary or non-UTF-8 file."""
    file = Path(path)
    if not file.is_file():
        raise NotFound(f"No chapter file at {path}.")
    if file.stat().st_size > MAX_FILE_BYTES:
        raise InvalidData(f"{path} is larger than {MAX_FILE_BYTES} bytes; a chapter file is much smaller.")
    raw = file.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidData(f"{path} is not UTF-8 text (byte {exc.start}).") from exc
    if "\0" in text:
        raise InvalidData(f"{path} is a binary file, not a chapter.")
    return text


def lint_file(path: str, *, project: Project | None = None, chapter: int | None = None) -> LintReport:
    """A chapter file (``# 第 N 章 标题`` and the prose), with the project's settings when one is named."""
    return lint_project_text(project, read_chapter_file(path), chapter=chapter, expect_heading=True)


# Rules whose evidence is a paragraph or a run of sentences: too wide to highlight on the page.
_WIDE_RULES = {"paragraph_too_long", "sentence_length_run"}


def chapter_lint_marks(project: Project, chapter) -> list[dict[str, Any]]:
    """The reader page's highlights (``projects.chapter_marks``): each finding's evidence span,
    cached per chapter version (a chapter's text only changes with its version)."""
    from django.core.cache import cache

    key = f"chapter-lint-marks:{chapter.pk}:{chapter.version}:{len(chapter.text)}"
    marks = cache.get(key)
    if marks is None:
        try:
            report = lint_project_text(project, chapter.text, chapter=chapter.number, title=chapter.title)
        except InvalidData:  # unusable settings: the page shows the text without marks
            return []
        marks = [{"start": e["start"], "end": e["end"], "rule": f.rule, "severity": f.severity}
                 for f in report.findings if f.rule not in _WIDE_RULES for e in f.evidence]
        cache.set(key, marks, 3600)
    return marks
