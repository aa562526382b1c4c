"""The quality gate: evaluation -> decision (facts §11, DESIGN §4 step 5). Pure Python, no ORM.

* ``recompute_overall``: the system's own weighted score; the model's ``overall`` is never trusted.
* ``high_confidence_violations``: the contract checks that force a revision (facts §11).
* ``decide``: the decision table of facts §11 plus the chapter's revision budget.

Decision -> next stage (facts §7.3): pass/force_passed -> commit, polish -> refine, revise -> draft,
pause_for_user/pause_for_user_force_rewrite -> a person (NOVEL_ASK gate).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from projects.schemas import DEFAULT_SCORE_WEIGHTS, GATE_DECISIONS, SCORE_DIMENSIONS

OPTIONAL_DIMENSIONS = ("hook_strength",)  # weight 0.0 unless scoring_weights gives one (facts §10.11)
CONTRACT_LEVELS = ("l1_checks", "l2_checks", "l3_checks")
MAX_VIOLATION_FIXES = 5  # "3–5 fixes from the high violations" (facts §11)
LOWEST_DIMENSION_FIXES = 2


class ScoreError(ValueError):
    """The scores cannot give a finite overall (missing dimension, non-numeric or out-of-range score)."""


@dataclass(frozen=True)
class GateSettings:
    pass_threshold: float = 4.0
    polish_threshold: float = 3.5
    revise_threshold: float = 3.0
    pause_threshold: float = 2.0
    max_revisions: int = 2
    scoring_weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))

    @classmethod
    def from_project_settings(cls, gate_settings: Mapping[str, Any] | None, *,
                              platform_weights: Mapping[str, float] | None = None,
                              platform_max_revisions: int | None = None) -> GateSettings:
        """From ``Project.gate_settings`` (schema GATE_SETTINGS); missing keys keep the defaults.
        The platform's genre weights (facts §10.11) and ``scoring.max_revisions`` (facts §11), when
        given, replace the defaults; the project's own settings win over both. Given
        ``scoring_weights`` are merged over the base (so ``{"hook_strength": 0.1}`` adds a dimension)."""
        data = dict(gate_settings or {})
        kwargs: dict[str, Any] = {}
        for key in ("pass_threshold", "polish_threshold", "revise_threshold", "pause_threshold"):
            if data.get(key) is not None:
                kwargs[key] = float(data[key])
        if data.get("max_revisions") is not None:
            kwargs["max_revisions"] = int(data["max_revisions"])
        elif platform_max_revisions is not None:
            kwargs["max_revisions"] = int(platform_max_revisions)
        base = dict(platform_weights or DEFAULT_SCORE_WEIGHTS)
        if data.get("scoring_weights") or platform_weights:
            kwargs["scoring_weights"] = {**base, **(data.get("scoring_weights") or {})}
        return cls(**kwargs)


@dataclass(frozen=True)
class GateResult:
    decision: str  # one of projects.schemas.GATE_DECISIONS
    overall: float | None  # recomputed; None when the scores are unusable
    force_passed: bool
    reasons: list[str]  # why, for logs and the person reading the run (English)
    required_fixes: list[str]  # instructions for the writer/refiner (empty on pass/force_passed)

    def as_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "overall": self.overall, "force_passed": self.force_passed,
                "reasons": list(self.reasons), "required_fixes": list(self.required_fixes)}


def used_evaluation(evaluation: Mapping[str, Any]) -> Mapping[str, Any]:
    """The judge output inside either evaluation shape (facts §15.7: ``eval_used`` when present)."""
    inner = evaluation.get("eval_used")
    return inner if isinstance(inner, Mapping) else evaluation


def stated_overall(evaluation: Mapping[str, Any]) -> float | None:
    """The overall an evaluation states, read as the tool reads it (facts §11, §15.7): the root's
    ``overall_final``, then ``overall``, then ``judges.overall_final``; None when none is a finite
    number. For evaluations from outside (an imported tree, an outside executor)."""
    judges = evaluation.get("judges") if isinstance(evaluation.get("judges"), Mapping) else {}
    used = used_evaluation(evaluation)
    for value in (evaluation.get("overall_final"), evaluation.get("overall"), used.get("overall"),
                  judges.get("overall_final")):
        number = _number(value)
        if number is not None and math.isfinite(number):
            return round(number, 2)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _score_of(entry: Any) -> float | None:
    return _number(entry.get("score") if isinstance(entry, Mapping) else entry)


def recompute_overall(scores: Mapping[str, Any], weights: Mapping[str, float] | None = None) -> float:
    """Σ score × weight with the weights normalised to sum 1, rounded to 2 dp (DESIGN §4 step 4).

    ``scores`` is ``{dim: {"score": n, ...}}`` (or ``{dim: n}``), or a whole flat/wrapped evaluation.
    Every core dimension with a positive weight must be scored, else ``ScoreError``; an optional
    dimension (``hook_strength``) that is weighted but unscored is dropped and the rest renormalised.
    Scores must be finite numbers in [1, 5]; the model's own ``weight`` and ``overall`` are ignored.
    """
    if "scores" in scores or "eval_used" in scores:
        scores = used_evaluation(scores).get("scores") or {}
    weights = DEFAULT_SCORE_WEIGHTS if weights is None else weights
    total_weight = weighted = 0.0
    for dim, raw_weight in weights.items():
        weight = _number(raw_weight)
        if weight is None or not math.isfinite(weight) or weight < 0:
            raise ScoreError(f"weight for {dim} is not a non-negative number: {raw_weight!r}")
        if weight == 0:
            continue
        if dim not in scores:
            if dim in OPTIONAL_DIMENSIONS:
                continue
            raise ScoreError(f"dimension {dim} is missing from the scores")
        score = _score_of(scores[dim])
        if score is None or not math.isfinite(score) or not 1 <= score <= 5:
            raise ScoreError(f"score for {dim} is not a number in [1, 5]: {scores[dim]!r}")
        total_weight += weight
        weighted += score * weight
    if total_weight <= 0:
        raise ScoreError("no dimension has a positive weight")
    return round(weighted / total_weight, 2)


def _check_items(verification: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = verification.get(key)
    return [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []


def high_confidence_violations(evaluation: Mapping[str, Any]) -> list[dict[str, Any]]:
    """facts §11: L1/L2/L3 items with status "violation" and confidence "high"; LS items the same when
    their ``constraint_type`` is "hard" or missing. Medium/low confidence and soft LS only warn.
    Each returned item is a copy with ``level`` ("l1"…"ls") added."""
    verification = used_evaluation(evaluation).get("contract_verification")
    if not isinstance(verification, Mapping):
        return []
    found = []
    for key in (*CONTRACT_LEVELS, "ls_checks"):
        for item in _check_items(verification, key):
            if item.get("status") != "violation" or item.get("confidence") != "high":
                continue
            if key == "ls_checks" and item.get("constraint_type", "hard") not in ("hard", None):
                continue
            found.append({**item, "level": key.removesuffix("_checks")})
    return found


def _warnings(evaluation: Mapping[str, Any]) -> list[str]:
    """Violations that do not force a revision (lower confidence, soft LS, suspected)."""
    verification = used_evaluation(evaluation).get("contract_verification")
    if not isinstance(verification, Mapping):
        return []
    high_keys = {(v["level"], _item_id(v)) for v in high_confidence_violations(evaluation)}
    out = []
    for key in (*CONTRACT_LEVELS, "ls_checks"):
        level = key.removesuffix("_checks")
        for item in _check_items(verification, key):
            status = item.get("status")
            if status in ("violation", "violation_suspected") and (level, _item_id(item)) not in high_keys:
                out.append(f"warning: {level} {_item_id(item)} {status} "
                           f"(confidence {item.get('confidence', '?')}, {item.get('constraint_type', 'n/a')})")
    return out


def golden_gate_failed(evaluation: Mapping[str, Any]) -> bool:
    """facts §11: a golden-chapter failure counts like a high violation unless ``activated`` is false."""
    gates = used_evaluation(evaluation).get("golden_chapter_gates")
    if not isinstance(gates, Mapping) or gates.get("activated") is False:
        return False
    checks = gates.get("checks") if isinstance(gates.get("checks"), list) else []
    return (gates.get("passed") is False or bool(gates.get("failed_gate_ids"))
            or any(isinstance(c, Mapping) and c.get("status") in ("fail", "failed", "violation") for c in checks))


def _item_id(item: Mapping[str, Any]) -> str:
    return str(item.get("rule_id") or item.get("contract_id") or item.get("objective_id") or item.get("id") or "?")


def _fix_text(fix: Any) -> str:
    if isinstance(fix, Mapping):
        instruction = str(fix.get("instruction") or "").strip()
        target = str(fix.get("target") or "").strip()
        return f"{target}：{instruction}" if target and instruction else instruction
    return str(fix).strip() if isinstance(fix, str) else ""


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item))


def revision_instructions(evaluation: Mapping[str, Any], violations: Sequence[Mapping[str, Any]] = (),
                          deterministic_violations: Sequence[str] = ()) -> list[str]:
    """facts §11: the judge's ``required_fixes``; if empty, up to 5 fixes from the high violations
    (the judge's, then the deterministic ones); if both are empty, the feedback on the 2 lowest-scoring
    dimensions. Deterministic violations are always included: they are facts the judge may have missed."""
    used = used_evaluation(evaluation)
    fixes = _dedupe(_fix_text(f) for f in used.get("required_fixes") or [] if f)
    if not fixes:
        from_violations = [f"[{_item_id(v)}] {str(v.get('detail') or '违反约束').strip()}" for v in violations]
        fixes = _dedupe([*from_violations, *deterministic_violations])[:MAX_VIOLATION_FIXES]
    if not fixes:
        fixes = _lowest_dimension_feedback(used.get("scores") or {})
    return _dedupe([*fixes, *deterministic_violations])


def _lowest_dimension_feedback(scores: Mapping[str, Any]) -> list[str]:
    order = {dim: i for i, dim in enumerate((*SCORE_DIMENSIONS, *OPTIONAL_DIMENSIONS))}
    scored = [(s, order.get(dim, 99), dim) for dim, entry in scores.items()
              if (s := _score_of(entry)) is not None and math.isfinite(s)]
    out = []
    for score, _, dim in sorted(scored)[:LOWEST_DIMENSION_FIXES]:
        reason = str(scores[dim].get("reason") or "").strip() if isinstance(scores[dim], Mapping) else ""
        out.append(f"{dim}（{score:g} 分）：{reason or '提升该维度'}")
    return out


def decide(evaluation: Mapping[str, Any], *, revision_count: int, settings: GateSettings | None = None,
           deterministic_violations: Sequence[str] = (), policy_failures: Sequence[str] = (),
           force_pass: bool = False, outside: bool = False) -> GateResult:
    """The gate decision, in the order of facts §11's table:

    1. ``force_pass`` -> force_passed.
    2. a high-confidence violation, a golden-chapter failure, a deterministic violation or a
       platform policy failure (``policy_failures``: the chapter-end hook, the golden gates; each
       is a fix for the writer, ``pipeline.chapter.platform_rules``) -> revise; pause_for_user once
       ``revision_count >= max_revisions``.
    3. unusable scores (``recompute_overall`` fails) -> pause_for_user_force_rewrite.
    4. overall (recomputed; for a wrapped eval never above its system ``overall_final``; for an
       ``outside`` evaluation, the overall it states, as the tool reads it: ``stated_overall``):
       ≥ pass -> pass; ≥ polish -> polish; ≥ revise -> revise; with the budget spent both -> force_passed;
       ≥ pause -> pause_for_user; below -> pause_for_user_force_rewrite.
    """
    settings = settings or GateSettings()
    used = used_evaluation(evaluation)
    exhausted = revision_count >= settings.max_revisions
    budget = f"revisions {revision_count}/{settings.max_revisions}"
    violations = high_confidence_violations(evaluation)
    reasons = _warnings(evaluation)

    overall: float | None = stated_overall(evaluation) if outside else None
    score_error = ""
    if overall is None:
        try:
            overall = recompute_overall(used.get("scores") or {}, settings.scoring_weights)
            final = _number(used.get("overall_final")) if used is not evaluation else None
            if final is not None and math.isfinite(final) and final < overall:  # dual judge: min (facts §11)
                overall = round(final, 2)
        except ScoreError as exc:
            score_error = str(exc)

    def result(decision: str, *why: str) -> GateResult:
        assert decision in GATE_DECISIONS
        done = decision in ("pass", "force_passed")
        fixes = [] if done else revision_instructions(evaluation, violations,
                                                      [*policy_failures, *deterministic_violations])
        return GateResult(decision, overall, decision == "force_passed", [*why, *reasons], fixes)

    if force_pass:
        return result("force_passed", "force_pass requested")
    blocking = [f"high-confidence {v['level']} violation {_item_id(v)}" for v in violations]
    blocking += [f"deterministic violation: {v}" for v in deterministic_violations]
    blocking += [f"platform policy: {v}" for v in policy_failures]
    if golden_gate_failed(evaluation):
        blocking.append("golden-chapter gate failed")
    if blocking:
        if exhausted:
            return result("pause_for_user", *blocking, f"{budget}: violations remain after the last revision")
        return result("revise", *blocking)
    if overall is None:
        return result("pause_for_user_force_rewrite", f"no usable overall: {score_error}")
    s = settings
    if overall >= s.pass_threshold:
        return result("pass", f"overall {overall} >= pass {s.pass_threshold}")
    if overall >= s.polish_threshold:
        if exhausted:
            return result("force_passed", f"overall {overall} >= polish {s.polish_threshold}", f"{budget}: exhausted")
        return result("polish", f"overall {overall} >= polish {s.polish_threshold}")
    if overall >= s.revise_threshold:
        if exhausted:
            return result("force_passed", f"overall {overall} >= revise {s.revise_threshold}", f"{budget}: exhausted")
        return result("revise", f"overall {overall} >= revise {s.revise_threshold}")
    if overall >= s.pause_threshold:
        return result("pause_for_user", f"overall {overall} >= pause {s.pause_threshold}, below revise")
    return result("pause_for_user_force_rewrite", f"overall {overall} < pause {s.pause_threshold}")
