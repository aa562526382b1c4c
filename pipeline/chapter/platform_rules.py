"""The platform's rules at the gate (issue #17 §1): the weights and revision budget of the project's
platform and genre, the chapter-end hook policy, and the golden-chapter gates of chapters 1–3.

* ``gate_settings_for(project)``: ``GateSettings`` with the genre weight profile (facts §10.11) and
  ``platform-profile.scoring.max_revisions`` (facts §11); the project's own gate settings win.
* ``hook_field_problems`` / ``hook_failures``: the ``hook`` fields the original tool validates when
  ``hook_policy.required`` (facts §7.1, §10.11), and the Chinese fixes when the hook is missing,
  of a type the platform does not use, or too weak.
* ``golden_gates_evaluate``: the evaluation's ``golden_chapter_gates`` object, with each gate that
  names a score threshold checked by the system against the judge's own score.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.chapter.quality_gate import GateSettings, used_evaluation
from projects.models import Project
from projects.platforms.limits import golden_gates_for, platform_limits, project_platform, scoring_weights

HOOK_EVIDENCE_MAX_CHARS = 120  # facts §10.11
HOOK_TYPE_WORDS = {  # how the writer is told about a hook type (the codes stay in the JSON)
    "question": "悬念提问", "threat_reveal": "威胁揭示", "twist_reveal": "反转揭示",
    "emotional_cliff": "情绪悬崖", "next_objective": "下一目标",
}
_OPERATORS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq}


def gate_settings_for(project: Project) -> GateSettings:
    limits = platform_limits(project)
    return GateSettings.from_project_settings(project.gate_settings, platform_weights=scoring_weights(project),
                                              platform_max_revisions=limits["max_revisions"])


def hook_words(types: Sequence[str]) -> str:
    return "、".join(HOOK_TYPE_WORDS.get(t, t) for t in types)


def hook_strength(evaluation: Mapping[str, Any]) -> Any:
    """``hook.strength``, else the judge's ``scores.hook_strength`` score."""
    used = used_evaluation(evaluation)
    hook = used.get("hook") if isinstance(used.get("hook"), Mapping) else {}
    if "strength" in hook:
        return hook["strength"]
    entry = (used.get("scores") or {}).get("hook_strength")
    return entry.get("score") if isinstance(entry, Mapping) else entry


def _is_strength(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and 1 <= value <= 5)


def hook_field_problems(evaluation: Mapping[str, Any]) -> list[str]:
    """What is wrong with the evaluation's hook fields (English, for logs and retries); empty when
    ``hook`` is {present: bool, type, evidence ≤120 chars, reason} with a strength 1–5."""
    hook = used_evaluation(evaluation).get("hook")
    if not isinstance(hook, Mapping):
        return ["hook: must be an object {present, type, evidence, reason, strength}"]
    problems = []
    if not isinstance(hook.get("present"), bool):
        problems.append("hook.present: must be true or false")
    present = hook.get("present") is True
    if not isinstance(hook.get("type"), str) or (present and not hook["type"].strip()):
        problems.append("hook.type: must be a string (the hook's type when present)")
    evidence = hook.get("evidence")
    if not isinstance(evidence, str) or (present and not evidence.strip()):
        problems.append("hook.evidence: must be a string quoting the chapter's ending when the hook is present")
    elif len(evidence) > HOOK_EVIDENCE_MAX_CHARS:
        problems.append(f"hook.evidence: at most {HOOK_EVIDENCE_MAX_CHARS} characters (has {len(evidence)})")
    if "reason" in hook and not isinstance(hook["reason"], str):
        problems.append("hook.reason: must be a string")
    if not _is_strength(hook_strength(evaluation)):
        problems.append("hook.strength (or scores.hook_strength.score): must be a number from 1 to 5")
    return problems


def hook_failures(evaluation: Mapping[str, Any], policy: Mapping[str, Any]) -> list[str]:
    """The revision instructions (Chinese) when ``policy["required"]`` and the chapter's ending
    fails it; empty when the hook passes or the platform does not require one."""
    if not policy.get("required"):
        return []
    allowed = list(policy.get("allowed_types") or [])
    want = f"请重写最后一两段，以{hook_words(allowed)}之一收尾" if allowed else "请重写最后一两段，留下明确的钩子"
    if hook_field_problems(evaluation):
        return [f"章末钩子：评审未给出有效的钩子判断。{want}，让读者想看下一章。"]
    hook = used_evaluation(evaluation)["hook"]
    if not hook["present"]:
        return [f"章末钩子缺失：本章平稳收尾，没有留下悬念。{want}。"]
    if allowed and hook["type"] not in allowed:
        return [f"章末钩子类型「{HOOK_TYPE_WORDS.get(hook['type'], hook['type'])}」不适合本平台。{want}。"]
    strength, minimum = hook_strength(evaluation), policy.get("min_strength", 1)
    if strength < minimum:
        return [f"章末钩子太弱（{strength:g} 分，本平台至少 {minimum} 分）。{want}，把悬念推到最紧处再断章。"]
    return []


def _metric(evaluation: Mapping[str, Any], metric: str) -> float | None:
    """A ``scores.<dim>.score`` value of the evaluation; None for metrics the system cannot read."""
    parts = metric.split(".")
    if len(parts) != 3 or parts[0] != "scores" or parts[2] != "score":
        return None
    entry = (used_evaluation(evaluation).get("scores") or {}).get(parts[1])
    value = entry.get("score") if isinstance(entry, Mapping) else None
    return float(value) if _is_strength(value) else None


def golden_gates_evaluate(evaluation: Mapping[str, Any], gates: Sequence[Mapping[str, Any]], *, platform: str,
                          genre: str, chapter: int) -> dict[str, Any]:
    """The ``golden_chapter_gates`` object (facts §10.11) for a chapter with gates: the judge's
    check of each gate, except that a gate with a ``scores.*`` threshold is decided by the judge's
    score itself (a judge that scores immersion 3 cannot pass "immersion ≥ 3.5")."""
    reported = used_evaluation(evaluation).get("golden_chapter_gates")
    judge_checks = {c.get("id"): c for c in (reported or {}).get("checks", [])
                    if isinstance(c, Mapping)} if isinstance(reported, Mapping) else {}
    checks, warnings = [], []
    for gate in gates:
        gate_id, threshold = gate["id"], gate.get("threshold") or {}
        judged = judge_checks.get(gate_id) or {}
        wanted = str(gate["requirement"]).rstrip("。")
        value = _metric(evaluation, threshold.get("metric", "")) if threshold else None
        if value is not None and threshold.get("operator") in _OPERATORS:
            ok = _OPERATORS[threshold["operator"]](value, float(threshold["value"]))
            status = "pass" if ok else "fail"
            detail = f"{wanted}：评分 {value:g}"
        elif judged.get("status") in ("pass", "fail", "failed", "violation"):
            status = "pass" if judged["status"] == "pass" else "fail"
            said = str(judged.get("detail") or "").strip()
            detail = f"{wanted}：{said}" if said and not said.startswith(wanted) else (said or wanted)
        else:
            status, detail = "pass", ""
            warnings.append(f"the judge did not report golden gate {gate_id}")
        checks.append({"id": gate_id, "status": status, "detail": detail or wanted,
                       "evidence": str(judged.get("evidence") or "")[:HOOK_EVIDENCE_MAX_CHARS]})
    failed = [c["id"] for c in checks if c["status"] == "fail"]
    return {"activated": True, "platform": platform, "genre": genre, "chapter": chapter, "passed": not failed,
            "failed_gate_ids": failed, "checks": checks, "warnings": warnings}


def golden_fixes(golden: Mapping[str, Any], gates: Sequence[Mapping[str, Any]]) -> list[str]:
    """One Chinese instruction per failed golden-chapter gate."""
    requirement = {gate["id"]: gate["requirement"] for gate in gates}
    fixes = []
    for check in golden.get("checks", []):
        if check.get("status") != "fail":
            continue
        wanted, detail = str(requirement.get(check["id"], check["id"])).rstrip("。"), check.get("detail") or ""
        fixes.append(f"黄金三章要求未达到：{detail}" if detail.startswith(wanted) else
                     f"黄金三章要求未达到：{wanted}（{detail}）")
    return fixes


def platform_review(evaluation: dict[str, Any], project: Project, chapter: int) -> list[str]:
    """Apply the platform to a judged chapter: fill in its ``golden_chapter_gates`` (chapters 1–3 of
    a platform with gates) and return the blocking fixes (hook policy, golden gates) for the gate."""
    limits = platform_limits(project)
    fixes = hook_failures(evaluation, limits["hook_policy"])
    gates = golden_gates_for(project, chapter)
    if gates:
        target = evaluation["eval_used"] if isinstance(evaluation.get("eval_used"), dict) else evaluation
        target["golden_chapter_gates"] = golden_gates_evaluate(evaluation, gates, platform=project_platform(project),
                                                                genre=project.genre, chapter=chapter)
        fixes += golden_fixes(target["golden_chapter_gates"], gates)
    return fixes
