"""Rules on words and phrasings: narration connectors, the AI blacklist, similes, four-character
idioms, vocabulary diversity and the markers of the AI sentence patterns SP-01..SP-08."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pipeline.chapter.prejudge_checks import NARRATION_ONLY, blacklist_matches
from pipeline.chapter.craft.catalogue import DEFAULT_CONNECTORS, MAX_EVIDENCE, SENTENCE_PATTERNS, SIMILE_WORDS
from pipeline.chapter.craft.document import Document, Finding

CONNECTOR_CATEGORY = "narration_connector"
NEGATIONS = frozenset({"不", "不太", "并不", "一点不", "毫不"})


def connector_words(blacklist: Mapping[str, Any] | None) -> list[str]:
    """The project blacklist's narration_connector words (facts §10.16) and the default ones."""
    categories = (blacklist or {}).get("categories") if isinstance(blacklist, Mapping) else None
    items = categories.get(CONNECTOR_CATEGORY) if isinstance(categories, Mapping) else None
    words = [item.get("word") for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []
    return list(dict.fromkeys([*(w for w in words if isinstance(w, str) and w), *DEFAULT_CONNECTORS]))


def connector_hits(doc: Document) -> list[dict[str, Any]]:
    """Connector hits in narration, matched like blacklist words (whitelist respected)."""
    blacklist = doc.blacklist or {}
    only_connectors = {"whitelist": blacklist.get("whitelist") or [], "categories": {CONNECTOR_CATEGORY: [
        {"word": w, "context": NARRATION_ONLY} for w in connector_words(blacklist)]}}
    return blacklist_matches(doc.text, only_connectors)


def _hit_evidence(doc: Document, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    evidence = doc.evidence([(h["start"], h["end"]) for h in hits])
    for item, hit in zip(evidence, hits):
        item["word"] = hit["word"]
    return evidence


def narration_connector(doc: Document) -> Finding | None:
    """Connectors (与此同时, 此外 …) in narration; inside dialogue they are a character's voice."""
    hits = connector_hits(doc)
    limit = doc.threshold("narration_connector_max")
    if len(hits) <= limit:
        return None
    words = "、".join(dict.fromkeys(h["word"] for h in hits))
    return Finding("narration_connector", len(hits), _hit_evidence(doc, hits), rate_per_kchars=doc.rate(len(hits)),
                   limit=limit, message=f"叙述中用了 {len(hits)} 次连接词（{words}）：删去，让动作和场景自己衔接")


def blacklist(doc: Document) -> Finding | None:
    """The project's AI blacklist (facts §13 matching); its narration connectors are the rule above."""
    connectors = {h["start"] for h in connector_hits(doc)}  # counted by narration_connector, not twice
    hits = [h for h in blacklist_matches(doc.text, doc.blacklist)
            if h["category"] != CONNECTOR_CATEGORY and h["start"] not in connectors]
    limit = doc.threshold("blacklist_max_hits")
    if len(hits) <= limit:
        return None
    words = "、".join(dict.fromkeys(h["word"] for h in hits))
    return Finding("blacklist", len(hits), _hit_evidence(doc, hits), rate_per_kchars=doc.rate(len(hits)),
                   limit=limit, message=f"黑名单用语 {len(hits)} 处（{words}）：换成具体的动作或细节")


def _narration_words(doc: Document, wanted) -> list[tuple[int, int]]:
    return [(start, start + len(word)) for start, word, flag in doc.words
            if wanted(word, flag) and doc.is_narration(start)]


def simile_spans(doc: Document) -> list[tuple[int, int]]:
    """像/仿佛/宛如 … as jieba cuts them (so 图像 and 偶像 are not similes), in narration, not negated (不像)."""
    spans, previous = [], ""
    for start, word, _flag in doc.words:
        if word in SIMILE_WORDS and previous not in NEGATIONS and doc.is_narration(start):
            spans.append((start, start + len(word)))
        previous = word
    return spans


def simile_density(doc: Document) -> Finding | None:
    spans = simile_spans(doc)
    rate, limit = doc.rate(len(spans)), doc.threshold("simile_max_per_kchars")
    if len(spans) < doc.threshold("density_min_count") or rate <= limit:
        return None
    return Finding("simile_density", len(spans), doc.evidence(spans), rate_per_kchars=rate, limit=limit,
                   message=f"叙述中比喻 {len(spans)} 处，每千字 {rate}，超过 {limit}：只留最准确的一两个")


def four_char_idiom_density(doc: Document) -> Finding | None:
    """Four-character idioms and set phrases (jieba's part-of-speech tags ``i`` and ``l``) in narration."""
    spans = _narration_words(doc, lambda word, flag: flag in ("i", "l") and len(word) == 4)
    rate, limit = doc.rate(len(spans)), doc.threshold("idiom_max_per_kchars")
    if len(spans) < doc.threshold("density_min_count") or rate <= limit:
        return None
    return Finding("four_char_idiom_density", len(spans), doc.evidence(spans), rate_per_kchars=rate, limit=limit,
                   message=f"叙述中四字成语 {len(spans)} 个，每千字 {rate}，超过 {limit}：换成具体描写")


def moving_type_token_ratio(words: list[str], window: int, *, least: int = 40) -> float | None:
    """The mean type-token ratio over every run of ``window`` words (MATTR), which does not fall
    with the text's length as the plain ratio does. A text shorter than one window gets its plain
    ratio, and None below ``least`` words (too few to say anything)."""
    if window <= 0 or len(words) < min(window, least):
        return None
    if len(words) < window:
        return round(len(set(words)) / len(words), 3)
    counts = Counter(words[:window])
    total = len(counts)
    for i in range(window, len(words)):
        old, new = words[i - window], words[i]
        counts[old] -= 1
        if not counts[old]:
            del counts[old]
        counts[new] += 1
        total += len(counts)
    return round(total / (len(words) - window + 1) / window, 3)


def vocabulary_diversity(doc: Document) -> Finding | None:
    window = int(doc.threshold("vocabulary_window"))
    score = moving_type_token_ratio([word for _, word, _ in doc.words], window)
    limit = doc.threshold("vocabulary_diversity_min")
    if score is None or score >= limit:
        return None
    return Finding("vocabulary_diversity", 1, rate_per_kchars=None, value=score, limit=limit,
                   message=f"词汇多样性 {score}（每 {window} 词的不同词比例），低于 {limit}：换掉反复使用的词")


def sentence_pattern(doc: Document) -> Finding | None:
    """Markers of SP-01..SP-08 in narration: each is a suspicion the judge confirms."""
    evidence, count = [], 0
    for pattern in SENTENCE_PATTERNS:
        for match in pattern.regex.finditer(doc.text):
            if not doc.is_narration(match.start()):
                continue
            count += 1
            evidence.append({"start": match.start(), "end": match.end(), "text": match.group(),
                             "pattern_id": pattern.id, "pattern_name": pattern.name, "level": pattern.level})
    if not count:
        return None
    evidence.sort(key=lambda item: item["start"])
    names = "、".join(dict.fromkeys(f"{e['pattern_id']} {e['pattern_name']}" for e in evidence))
    return Finding("sentence_pattern", count, evidence[:MAX_EVIDENCE], rate_per_kchars=doc.rate(count),
                   message=f"疑似 AI 句式 {count} 处（{names}），请评审确认")
