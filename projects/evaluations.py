"""Reading an evaluation in either of its shapes (facts §10.11, §15.7)."""
from __future__ import annotations

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
