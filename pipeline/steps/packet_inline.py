"""The computed ``manifest.inline`` keys of chapter packets that the original tool derives from other
files (facts §12), built from Novelsite's own data so that an outside writer or judge is told what
Novelsite's own stages are told:

* draft: ``statistical_targets`` (``projects.style_targets.packet_statistical_targets``) and
  ``genre_overrides`` (``projects.platforms.genre_overrides``);
* judge: ``continuity_report_summary`` and ``prejudge_guardrails``.

Optional keys are omitted, never null; ``continuity_report_summary_degraded: true`` only when a
report existed but could not be read (facts §12, ``latest-summary-loader``). Reads only.
"""
from __future__ import annotations

import json
from typing import Any

from pipeline.runtime.blackboard import Blackboard
from pipeline.book.staged import staged
from pipeline.runtime.runs import active_run
from pipeline.models import PipelineRun, RunKind, RunStatus
from projects.models import Project

CONTINUITY_LATEST = "logs/continuity/latest.json"  # the tool's latest continuity report (facts §10.14)
CONTINUITY_TYPES = ("character_mapping", "location_contradiction", "relationship_jump", "timeline_contradiction")
MAX_REPORT_BYTES = 512 * 1024  # facts §12: the loader reads a report of at most 512 KiB
MAX_ISSUES, MAX_SIGNALS, MAX_EVIDENCE = 5, 5, 2
MAX_SNIPPET, MAX_DESCRIPTION, MAX_SUGGESTION, MAX_ID = 120, 240, 180, 240
SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2}
GUARDRAIL_ISSUES = 5  # hard findings named in the guardrails' summary
UNREADABLE = object()


# --- continuity_report_summary (facts §10.15, §12) --------------------------------------------------
def _text(value: Any, limit: int) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _summary_issue(issue: dict[str, Any]) -> dict[str, Any]:
    evidence = []
    for item in [e for e in issue.get("evidence") or [] if isinstance(e, dict)][:MAX_EVIDENCE]:
        chapter, snippet = item.get("chapter"), item.get("snippet")
        if isinstance(chapter, int) and not isinstance(chapter, bool) and isinstance(snippet, str):
            evidence.append({"chapter": chapter, "snippet": snippet[:MAX_SNIPPET]})
    suggestions = issue.get("suggestions") if isinstance(issue.get("suggestions"), list) else []
    suggestion = _text(suggestions[0], MAX_SUGGESTION) if suggestions else None
    out = {"id": _text(issue.get("id"), MAX_ID) or "", "type": issue["type"], "severity": issue["severity"],
           "confidence": issue.get("confidence") if isinstance(issue.get("confidence"), str) else "",
           "description": _text(issue.get("description"), MAX_DESCRIPTION) or "", "evidence": evidence}
    if suggestion:
        out["suggestion"] = suggestion
    return out


def continuity_summary(report: Any) -> dict[str, Any] | None:
    """The judge's compact view of a continuity report (facts §12): its high and medium issues of the
    four types, sorted by severity, type and id, at most 5, each with at most 2 evidence snippets of
    120 characters, a description of 240 and one suggestion of 180; the high-confidence timeline
    contradictions again as ``ls_001_signals`` (at most 5). None for a report that is not one."""
    if not isinstance(report, dict) or report.get("schema_version") != 1:
        return None
    issues = [_summary_issue(i) for i in report.get("issues") or [] if isinstance(i, dict)
              and i.get("type") in CONTINUITY_TYPES and i.get("severity") in ("high", "medium")]
    issues.sort(key=lambda i: (SEVERITY_RANK[i["severity"]], i["type"], i["id"]))
    signals = sorted(({"issue_id": i["id"], "confidence": "high", "evidence": i["evidence"],
                       **({"suggestion": i["suggestion"]} if "suggestion" in i else {})}
                      for i in issues if i["type"] == "timeline_contradiction" and i["confidence"] == "high"),
                     key=lambda s: s["issue_id"])
    stats = report.get("stats") if isinstance(report.get("stats"), dict) else {}
    by_severity = stats.get("issues_by_severity") if isinstance(stats.get("issues_by_severity"), dict) else {}
    counts = {level: _count(by_severity.get(level)) for level in ("high", "medium", "low")}
    summary: dict[str, Any] = {"schema_version": 1}
    if isinstance(report.get("generated_at"), str):
        summary["generated_at"] = report["generated_at"]
    if report.get("scope") in ("periodic", "volume_end"):
        summary["scope"] = report["scope"]
    if _count(report.get("volume")) is not None:
        summary["volume"] = report["volume"]
    span = report.get("chapter_range")
    if isinstance(span, list) and len(span) == 2 and all(_count(n) for n in span) and span[1] >= span[0]:
        summary["chapter_range"] = list(span)
    summary["stats"] = {
        "chapters_checked": _count(stats.get("chapters_checked")) or 0,
        "issues_total": _count(stats.get("issues_total")) or 0,
        "issues_by_severity": counts if None not in counts.values() else {"high": 0, "medium": 0, "low": 0},
        **{key: stats[key] for key in ("chapters_missing", "ner_ok", "ner_failed")
           if _count(stats.get(key)) is not None},
    }
    summary["issues"] = issues[:MAX_ISSUES]
    if signals:
        summary["ls_001_signals"] = signals[:MAX_SIGNALS]
    return summary


def _own_audit(project: Project) -> dict[str, Any] | None:
    """The continuity audit of Novelsite's latest volume review that got that far."""
    runs = PipelineRun.objects.filter(project=project, kind=RunKind.REVIEW).exclude(status=RunStatus.CANCELLED)
    for run in runs.order_by("-pk")[:3]:
        audit = staged(Blackboard(run.blackboard), "audit")
        if audit is not None:
            return audit
    return None


def _range_end(report: Any) -> int:
    span = report.get("chapter_range") if isinstance(report, dict) else None
    return span[-1] if isinstance(span, list) and span and isinstance(span[-1], int) else 0


def continuity_inline(project: Project) -> dict[str, Any]:
    """``{"continuity_report_summary": …}`` from the newest continuity report Novelsite has: its own
    volume reviews' audits, or the tool's ``logs/continuity/latest.json`` an imported tree brought
    (kept whole as an ExtraFile); the one covering the later chapters, Novelsite's own on a tie.
    ``{"continuity_report_summary_degraded": True}`` when the newest report cannot be read; ``{}``
    when there is none."""
    own = _own_audit(project)
    kept = project.extra_files.filter(path=CONTINUITY_LATEST).values_list("content", flat=True).first()
    tool: Any = None
    if kept is not None:
        try:
            tool = json.loads(kept) if len(kept.encode()) <= MAX_REPORT_BYTES else UNREADABLE
        except ValueError:
            tool = UNREADABLE
    if own is None and tool is None:
        return {}
    newest = own if tool is None or (own is not None and _range_end(own) >= _range_end(tool)) else tool
    summary = continuity_summary(newest)  # None for UNREADABLE too
    if summary is None:
        return {"continuity_report_summary_degraded": True}
    return {"continuity_report_summary": summary}


# --- prejudge_guardrails ----------------------------------------------------------------------------
def _staged_chapter(project: Project, chapter: int) -> tuple[PipelineRun, str, str] | None:
    run = active_run(project)
    if run is None or run.chapter != chapter or run.kind not in (RunKind.CHAPTER, RunKind.REWRITE):
        return None
    skill = Blackboard(run.blackboard).as_("skill")
    text = skill.read_content("chapter", "refined") or skill.read_content("chapter", "draft")
    return (run, text, skill.read_content("chapter", "title") or "") if text else None


def prejudge_guardrails(project: Project, chapter: int) -> dict[str, Any] | None:
    """What the tool's pre-judge guardrails report (title policy, readability and naming lints, facts
    §7.2–§7.3), from the checks Novelsite runs on the staged chapter before its own judge: the craft
    lints (a hard title finding is ``title_policy``, a hard over-long paragraph ``readability_lint``,
    any other hard finding ``craft_lint``) and the story checks (a violation, such as a dead or
    unknown character acting, is ``story_checks``; Novelsite's nearest thing to the naming lint).

    ``{status: pass|warn|violation, has_blocking_issues, blocking_reasons[], issues[]}``: ``issues``
    names at most 5 blocking findings (``rule``, ``message``). There is no ``report_path``: a packet
    writes nothing. None when no chapter of that number is staged."""
    from pipeline.chapter.evidence import staged_chapter_checks
    from pipeline.chapter.lint import lint_project_text

    staged_text = _staged_chapter(project, chapter)
    if staged_text is None:
        return None
    run, text, title = staged_text
    lint = lint_project_text(project, text, chapter=chapter, title=title or None)
    delta = Blackboard(run.blackboard).as_("skill").read_content("summary", "delta")
    checks = staged_chapter_checks(project, chapter, run.context, delta, text)
    reasons, issues = [], []
    for finding in lint.hard:
        reason = {"title": "title_policy", "paragraph_too_long": "readability_lint"}.get(finding.rule, "craft_lint")
        reasons.append(reason)
        issues.append({"rule": finding.rule, "message": finding.message})
    if checks.violations:
        reasons.append("story_checks")
        issues += [{"rule": "story_checks", "message": str(v)} for v in checks.violations]
    reasons = list(dict.fromkeys(reasons))
    warned = bool(lint.findings) or bool(checks.suspicions)
    status = "violation" if reasons else "warn" if warned else "pass"
    return {"status": status, "has_blocking_issues": bool(reasons), "blocking_reasons": reasons,
            "issues": issues[:GUARDRAIL_ISSUES]}
