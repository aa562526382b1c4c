"""The 13 anti-AI indicators of facts §13 with their zones (green / yellow / red), measured on the
same ``Document`` the lint rules use. ``observe`` marks an indicator the system does not score
itself (7: humanize techniques, 11: dialogue distinguishability): the judge reports those."""
from __future__ import annotations

from statistics import mean, pstdev
from typing import Any

from pipeline.chapter.prejudge_checks import blacklist_hits
from pipeline.chapter.craft.catalogue import SENTENCE_PATTERNS
from pipeline.chapter.craft.document import Document
from pipeline.chapter.craft.rules_marks import ELLIPSIS, EM_DASH, EXCLAMATION
from pipeline.chapter.craft.rules_rhythm import repeated_sentences
from pipeline.chapter.craft.rules_words import connector_hits, moving_type_token_ratio, simile_spans

SHORT_TEXT_CHARS = 500  # facts §13: below this, the 7-indicator fallback mode
GREEN, YELLOW, RED, OBSERVE = "green", "yellow", "red", "observe"


def _above(value: float, yellow: float, red: float) -> str:
    """Zone of a "more is worse" measure: green up to ``yellow``, yellow up to ``red``, red above."""
    return RED if value > red else YELLOW if value > yellow else GREEN


def _entry(value: Any, zone: str, red_when: str) -> dict[str, Any]:
    return {"value": value, "zone": zone, "red_when": red_when}


def _max_repeats_in_window(doc: Document, window: int) -> int:
    repeated = sorted(index for index, _ in repeated_sentences(doc))
    best = 0
    for i, start in enumerate(repeated):
        best = max(best, sum(1 for r in repeated[i:] if r < start + window))
    return best


def _sentence_pattern_score(doc: Document) -> tuple[int, int]:
    high = medium = 0
    for pattern in SENTENCE_PATTERNS:
        hits = sum(1 for m in pattern.regex.finditer(doc.text) if doc.is_narration(m.start()))
        if pattern.level == "high":
            high += hits
        else:
            medium += hits
    return high, medium


def indicator_mode(doc: Document) -> str:
    """facts §13: the 7-indicator fallback below 500 characters."""
    return "13-indicator" if doc.chars >= SHORT_TEXT_CHARS else "7-indicator"


def indicators(doc: Document) -> dict[str, dict[str, Any]]:
    """``{name: {value, zone, red_when}}`` for the 13 indicators, in the order of facts §13; a
    measure that needs more text than there is has value None and zone green."""
    t = doc.threshold
    out: dict[str, dict[str, Any]] = {}
    blacklist = blacklist_hits(doc.text, doc.blacklist)
    out["blacklist_hit_rate"] = _entry(blacklist.hits_per_kchars, _above(blacklist.hits_per_kchars, 1, 3), ">3/千字")
    window = int(t("repetition_window"))
    repeats = _max_repeats_in_window(doc, window)
    out["sentence_repetition_rate"] = _entry(repeats, RED if repeats >= 3 else YELLOW if repeats else GREEN,
                                             f"相邻 {window} 句中重复 ≥3")
    lengths = [s.chars for s in doc.sentences]
    if len(lengths) >= 2:
        std = round(pstdev(lengths), 2)
        zone = RED if std < t("sentence_length_std_dev_min") else GREEN if 8 <= std <= 18 else YELLOW
        out["sentence_length_std_dev"] = _entry(std, zone, f"<{t('sentence_length_std_dev_min')}")
    else:
        out["sentence_length_std_dev"] = _entry(None, GREEN, f"<{t('sentence_length_std_dev_min')}")
    paras = [p.size for p in doc.paragraphs]
    if len(paras) >= 2 and mean(paras):
        cv = round(pstdev(paras) / mean(paras), 3)
        zone = RED if cv < t("paragraph_length_cv_min") else GREEN if 0.4 <= cv <= 1.2 else YELLOW
        out["paragraph_length_cv"] = _entry(cv, zone, f"<{t('paragraph_length_cv_min')}")
    else:
        out["paragraph_length_cv"] = _entry(None, GREEN, f"<{t('paragraph_length_cv_min')}")
    diversity = moving_type_token_ratio([w for _, w, _ in doc.words], int(t("vocabulary_window")))
    low = t("vocabulary_diversity_min")
    out["vocabulary_diversity_score"] = _entry(
        diversity, GREEN if diversity is None or diversity >= 0.5 else RED if diversity < low else YELLOW, f"<{low}")
    connectors = len(connector_hits(doc))
    out["narration_connector_count"] = _entry(connectors, RED if connectors >= 2 else YELLOW if connectors else GREEN,
                                              "≥2")
    out["humanize_technique_variety"] = _entry(None, OBSERVE, "仅观察")
    dashes = sum(1 for _ in EM_DASH.finditer(doc.text))
    out["em_dash_count"] = _entry(dashes, RED if dashes > t("em_dash_max") else GREEN, ">0")
    high, medium = _sentence_pattern_score(doc)
    out["sentence_pattern_score"] = _entry({"high": high, "medium": medium},
                                           RED if high else YELLOW if medium else GREEN, "≥1 个高风险句式")
    similes = doc.rate(len(simile_spans(doc)))
    limit = t("simile_max_per_kchars")
    out["simile_density"] = _entry(similes, _above(similes, limit / 2, limit), f">{limit}/千字")
    out["dialogue_distinguishability"] = _entry(None, OBSERVE, "由评审判断")
    for name, regex, key in (("ellipsis_density", ELLIPSIS, "ellipsis_max_per_kchars"),
                             ("exclamation_density", EXCLAMATION, "exclamation_max_per_kchars")):
        rate, limit = doc.rate(sum(1 for _ in regex.finditer(doc.text))), t(key)
        out[name] = _entry(rate, _above(rate, limit / 2, limit), f">{limit}/千字")
    return out
