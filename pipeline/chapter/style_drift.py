"""Style-drift detection over the last chapters (facts §13 "Style-drift rule", §10.16 style-drift.json).

Run every 5 committed chapters (DESIGN §4 step 6) on the last 5 chapters. Pure Python, no ORM.
Only ``avg_sentence_length`` and ``dialogue_ratio`` are measured, against the voice sample's statistics
when the project has one (issue #17 §3, ``drift_baseline``), else the style profile (§10.12).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from projects.voice_stats import dialogue_ratio, sentence_lengths

INJECTED_TO = ["ChapterWriter", "StyleRefiner"]
MAX_DRIFTS = 3  # "Write at most 3 directives" (facts §13)
RECOVERED_BELOW = 0.10  # every measured dimension under this -> metrics_recovered
STALE_AFTER = 15  # as_of − detected_chapter > 15 -> stale_timeout
DRIFT_ABOVE = {"avg_sentence_length": 0.20, "dialogue_ratio": 0.15}  # deviation thresholds per metric


def chapter_metrics(text: str) -> dict[str, float]:
    """``avg_sentence_length``: mean non-whitespace length of the sentences (terminators and the closing
    quote marks not counted; empty pieces dropped), 2 dp. ``dialogue_ratio``: non-whitespace
    characters inside “…”/「…」/『…』 over all non-whitespace characters, 4 dp. Empty text -> zeros.
    Measured as a voice sample is (``projects.voice_stats``), so the two compare."""
    lengths = sentence_lengths(text)
    return {
        "avg_sentence_length": round(sum(lengths) / len(lengths), 2) if lengths else 0.0,
        "dialogue_ratio": dialogue_ratio(text),
    }


def drift_baseline(profile: Mapping[str, Any] | None, targets: Mapping[str, Any] | None) -> dict[str, Any]:
    """What drift is measured against: a voice sample's ``avg_sentence_length`` and ``dialogue_ratio``
    (``statistical_targets`` with ``source == "sample"``) when the project has one, else the style
    profile's own numbers (facts §13)."""
    base = dict(profile or {})
    if targets and targets.get("source") == "sample":
        for metric in DRIFT_ABOVE:
            if _number(targets.get(metric)) is not None:
                base[metric] = targets[metric]
    return base


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def deviations(metrics: Mapping[str, float], profile: Mapping[str, Any]) -> dict[str, float]:
    """``|curr − base| / base`` per metric; a metric whose baseline is 0, missing or not a number is skipped."""
    out = {}
    for metric in DRIFT_ABOVE:
        base = _number(profile.get(metric))
        if base:
            out[metric] = abs(metrics[metric] - base) / base
    return out


def _directive(metric: str, baseline: float, current: float) -> str:
    if metric == "avg_sentence_length":
        return f"句子偏{'长' if current > baseline else '短'}，平均每句控制在 {round(baseline)} 字左右"
    if current > baseline:
        return f"对话偏多，对话占比控制在 {round(baseline * 100)}% 左右"
    return f"对话偏少，对话占比提高到 {round(baseline * 100)}% 左右"


def _now(now: datetime | None) -> str:
    return (now or datetime.now(UTC)).isoformat(timespec="seconds")


def detect(*, chapters: Sequence[tuple[int, str]], profile: Mapping[str, Any] | None,
           current: Mapping[str, Any] | None, as_of: int, now: datetime | None = None) -> dict[str, Any] | None:
    """Apply the facts §13 rule to the pooled metrics of ``chapters`` (the last 5, as (number, text)).

    Returns what style-drift.json should now hold:
    * ``current`` is active:
      - every measured deviation < 0.10 -> a copy with ``active: false``, ``cleared_reason:
        "metrics_recovered"``, ``cleared_at`` now;
      - else ``as_of − detected_chapter > 15`` -> the same with ``cleared_reason: "stale_timeout"``;
      - else ``current`` itself, unchanged (still drifting or in between: the directives stay).
    * ``current`` is None or inactive: a sentence deviation > 0.20 or a dialogue deviation > 0.15 -> a
      NEW active dict (``detected_chapter = as_of``, ``window`` = [first, last] chapter, up to 3 drifts,
      largest deviation first); otherwise ``current`` itself (None stays None).
    The same object (``result is current``) means "nothing to write"; anything else is a new dict to store.
    No chapters, or no usable baseline, -> ``current`` unchanged.
    """
    texts = [text for _, text in chapters]
    if not texts:
        return current  # type: ignore[return-value]
    metrics = chapter_metrics("\n".join(texts))
    devs = deviations(metrics, profile or {})
    if current and current.get("active"):
        if devs and all(d < RECOVERED_BELOW for d in devs.values()):
            return {**current, "active": False, "cleared_at": _now(now), "cleared_reason": "metrics_recovered"}
        detected = current.get("detected_chapter")
        if isinstance(detected, int) and as_of - detected > STALE_AFTER:
            return {**current, "active": False, "cleared_at": _now(now), "cleared_reason": "stale_timeout"}
        return current  # type: ignore[return-value]
    drifting = sorted((m for m, d in devs.items() if d > DRIFT_ABOVE[m]), key=lambda m: -devs[m])
    if not drifting:
        return current  # type: ignore[return-value]
    numbers = [number for number, _ in chapters]
    drifts = []
    for metric in drifting[:MAX_DRIFTS]:
        baseline = float(profile[metric])  # type: ignore[index]
        drifts.append({"metric": metric, "baseline": baseline, "current": metrics[metric],
                       "directive": _directive(metric, baseline, metrics[metric])})
    return {
        "active": True,
        "detected_chapter": as_of,
        "window": [min(numbers), max(numbers)],
        "drifts": drifts,
        "injected_to": list(INJECTED_TO),
        "created_at": _now(now),
        "cleared_at": None,
        "cleared_reason": None,
    }


def directives(style_drift: Mapping[str, Any] | None) -> list[str]:
    """The writer's and refiner's ``style_drift_directives``: at most 3, only while the drift is active.
    Reads both entry shapes ({metric, baseline, current, directive} and {metric, direction, delta, directive})."""
    if not style_drift or not style_drift.get("active"):
        return []
    drifts = style_drift.get("drifts") or []
    found = [str(d["directive"]) for d in drifts if isinstance(d, Mapping) and d.get("directive")]
    return found[:MAX_DRIFTS]
