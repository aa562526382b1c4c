"""The evaluation's ``anti_ai`` section (facts §10.11) from a lint report: the system's own
measurements, so the judge's word is never needed for what can be counted."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pipeline.chapter.prejudge_checks import BlacklistReport
from pipeline.chapter.craft.catalogue import RULES_BY_ID
from pipeline.chapter.craft.lints import LintReport

STRUCTURAL_RULES = ("em_dash", "md_separator", "quote_format", "chapter_heading", "paragraph_too_long",
                    "sentence_length_run", "sentence_repetition", "word_count", "title")
PUNCTUATION = {"em_dash": "em_dash_count", "ellipsis_density": "ellipsis_density",
               "exclamation_density": "exclamation_density"}
JUDGE_FIELDS = ("detected_humanize_techniques", "blacklist_update_suggestions")  # only the judge can say these


def _brief(finding_dict: Mapping[str, Any], evidence: int = 5) -> dict[str, Any]:
    return {**{k: v for k, v in finding_dict.items() if k != "evidence"},
            "evidence": list(finding_dict.get("evidence") or [])[:evidence]}


def anti_ai_section(report: LintReport, blacklist: BlacklistReport,
                    judged: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """facts §10.11 ``anti_ai``; ``judged`` is the judge's own section, whose humanize techniques and
    blacklist suggestions are kept (everything measurable is replaced by the measurement)."""
    findings = {f.rule: f.as_dict() for f in report.findings}
    values = {name: entry["value"] for name, entry in report.indicators.items()}
    patterns: dict[str, dict[str, Any]] = {}
    for item in (findings.get("sentence_pattern") or {}).get("evidence", []):
        entry = patterns.setdefault(item["pattern_id"], {
            "pattern_id": item["pattern_id"], "pattern_name": item["pattern_name"], "severity": item["level"],
            "count": 0, "evidence": [], "detail": "标记为疑似，由评审确认"})
        entry["count"] += 1
        if len(entry["evidence"]) < 3:
            entry["evidence"].append(item["text"])
    section = {
        "indicator_mode": report.indicator_mode,
        "indicator_breakdown": report.indicators,
        "blacklist_hits": {"total_hits": blacklist.total_hits, "hits_per_kchars": blacklist.hits_per_kchars,
                           "top_hits": blacklist.hits[:10]},
        "punctuation_overuse": {name: {"value": values.get(indicator), "zone": report.indicators[indicator]["zone"],
                                       "flagged": name in findings}
                                for name, indicator in PUNCTUATION.items()},
        "statistical_profile": {
            "blacklist_hit_rate": blacklist.hits_per_kchars,
            "narration_connector_count": values.get("narration_connector_count"),
            "sentence_length_std_dev": values.get("sentence_length_std_dev"),
            "paragraph_length_cv": values.get("paragraph_length_cv"),
            "vocabulary_diversity_score": values.get("vocabulary_diversity_score"),
        },
        "detected_humanize_techniques": [],
        "structural_rule_violations": [
            {**_brief(findings[rule]), "name": RULES_BY_ID[rule].name}
            for rule in STRUCTURAL_RULES if rule in findings],
        "sentence_pattern_violations": list(patterns.values()),
        "blacklist_update_suggestions": [],
        "lint_findings": [_brief(f) for f in findings.values()],
    }
    for key in JUDGE_FIELDS:
        if isinstance(judged, Mapping) and isinstance(judged.get(key), list):
            section[key] = judged[key]
    return section
