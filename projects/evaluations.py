"""Reading an evaluation in either of its shapes (facts §10.11, §15.7)."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


def evaluation_columns(data: dict[str, Any]) -> dict[str, Any]:
    """The queryable columns of an evaluation: score by the facts' precedence (``overall_final``,
    then ``overall``, then ``judges.overall_final``), recommendation and gate metadata."""
    used = data.get("eval_used") if isinstance(data.get("eval_used"), dict) else data
    metadata = data.get("metadata") or {}
    score = None
    for candidate in (data.get("overall_final"), used.get("overall_final"), used.get("overall"),
                      (metadata.get("judges") or {}).get("overall_final")):
        if isinstance(candidate, (int, float)) and not isinstance(candidate, bool):
            score = candidate
            break
    gate = metadata.get("gate") or data.get("gate") or {}
    return {
        "overall": Decimal(str(round(score, 2))) if score is not None else None,
        "recommendation": str(used.get("recommendation", ""))[:10],
        "gate_decision": str(gate.get("decision", "") or ""),
        "force_passed": bool(gate.get("force_passed", False)),
        "revisions": int(gate.get("revisions", 0) or 0),
    }


def chapter_log_columns(data: dict[str, Any]) -> dict[str, Any]:
    cost = data.get("total_cost_usd")
    return {
        "total_duration_ms": data.get("total_duration_ms"),
        "total_cost_usd": Decimal(str(cost)) if isinstance(cost, (int, float)) else None,
        "gate_decision": str(data.get("gate_decision") or ""),
    }


CONTRACT_LEVELS = ("l1_checks", "l2_checks", "l3_checks", "ls_checks")  # facts §10.11 contract_verification


@dataclass(frozen=True)
class DimensionScore:
    code: str  # a SCORE_DIMENSIONS name or hook_strength
    score: Any
    weight: Any
    reason: str
    evidence: Any


@dataclass(frozen=True)
class EvaluationReport:
    """An evaluation laid out for a reader: the numbers, each dimension with its reason and
    evidence, the contract checks by level, the fixes asked for and the deterministic findings."""

    overall: Any
    recommendation: str
    gate_decision: str
    force_passed: bool
    revisions: int
    dimensions: list[DimensionScore]
    contract_checks: list[tuple[str, list[Any]]]  # (level, items) for the levels that have items
    has_violations: bool | None
    required_fixes: list[str]
    issues: list[Any] = field(default_factory=list)
    strengths: list[Any] = field(default_factory=list)
    risk_flags: list[Any] = field(default_factory=list)
    deterministic_checks: dict[str, Any] = field(default_factory=dict)
    hook: dict[str, Any] = field(default_factory=dict)  # {present, type, evidence, strength} (facts §10.11)
    golden: dict[str, Any] = field(default_factory=dict)  # golden_chapter_gates of chapters 1-3 (facts §11)


def _hook(used: dict[str, Any], scores: dict[str, Any]) -> dict[str, Any]:
    hook = used.get("hook")
    if not isinstance(hook, dict):
        return {}
    strength = hook.get("strength")
    if strength is None and isinstance(scores.get("hook_strength"), dict):
        strength = scores["hook_strength"].get("score")
    return {"present": hook.get("present") is True, "type": str(hook.get("type") or ""),
            "evidence": str(hook.get("evidence") or ""), "strength": strength}


def _golden(used: dict[str, Any]) -> dict[str, Any]:
    gates = used.get("golden_chapter_gates")
    if not isinstance(gates, dict) or gates.get("activated") is False:
        return {}
    checks = [c for c in gates.get("checks") or [] if isinstance(c, dict)]
    return {"passed": gates.get("passed"), "checks": [{"status": str(c.get("status") or ""),
                                                       "detail": str(c.get("detail") or c.get("id") or "")}
                                                      for c in checks]}


def _fix_text(fix: Any) -> str:
    if isinstance(fix, dict):
        instruction = str(fix.get("instruction") or fix.get("description") or "")
        return instruction or ", ".join(f"{k}: {v}" for k, v in fix.items())
    return str(fix)


def evaluation_report(data: dict[str, Any] | None, *, gate: dict[str, Any] | None = None,
                      checks: dict[str, Any] | None = None) -> EvaluationReport:
    """``data`` in either shape (flat or ``{eval_used, metadata}``); ``gate`` and ``checks`` are
    the staged gate result and deterministic checks of a chapter not committed yet (a committed
    evaluation carries both inside ``data``)."""
    data = data if isinstance(data, dict) else {}
    used = data.get("eval_used") if isinstance(data.get("eval_used"), dict) else data
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    columns = evaluation_columns({**data, **({"gate": gate} if gate else {})})
    if gate and gate.get("overall") is not None:
        columns["overall"] = gate["overall"]
    scores = used.get("scores") if isinstance(used.get("scores"), dict) else {}
    dimensions = []
    for code, value in scores.items():
        value = value if isinstance(value, dict) else {"score": value}
        dimensions.append(DimensionScore(code=str(code), score=value.get("score"), weight=value.get("weight"),
                                         reason=str(value.get("reason") or ""), evidence=value.get("evidence")))
    verification = used.get("contract_verification") if isinstance(used.get("contract_verification"), dict) else {}
    levels = [(level, verification[level]) for level in CONTRACT_LEVELS
              if isinstance(verification.get(level), list) and verification[level]]
    if checks is None:
        checks = metadata.get("deterministic_checks") or data.get("deterministic_checks") or {}

    def listed(key: str) -> list[Any]:
        value = used.get(key)
        return value if isinstance(value, list) else []

    return EvaluationReport(
        overall=columns["overall"], recommendation=columns["recommendation"],
        gate_decision=columns["gate_decision"], force_passed=columns["force_passed"], revisions=columns["revisions"],
        dimensions=dimensions, contract_checks=levels, has_violations=verification.get("has_violations"),
        required_fixes=[_fix_text(f) for f in listed("required_fixes")], issues=listed("issues"),
        strengths=listed("strengths"), risk_flags=listed("risk_flags"),
        deterministic_checks=checks if isinstance(checks, dict) else {}, hook=_hook(used, scores),
        golden=_golden(used))
