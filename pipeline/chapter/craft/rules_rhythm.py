"""Rules on rhythm: the spread of sentence lengths, runs of equal-length sentences, the spread
and the size of paragraphs, and repeated sentences."""
from __future__ import annotations

from difflib import SequenceMatcher
from statistics import mean, pstdev

from pipeline.chapter.craft.document import Document, Finding
from pipeline.chapter.craft.text_units import Span


def sentence_length_std_dev(doc: Document) -> Finding | None:
    """facts §13 indicator 3: a low spread of sentence lengths reads machine-made."""
    lengths = [s.chars for s in doc.sentences]
    if len(lengths) < doc.threshold("sentence_length_min_sentences"):
        return None
    value, limit = round(pstdev(lengths), 2), doc.threshold("sentence_length_std_dev_min")
    if value >= limit:
        return None
    return Finding("sentence_length_std_dev", 1, value=value, limit=limit,
                   message=f"句长标准差 {value}，低于 {limit}：长短句交错，加几个很短或很长的句子")


def _fits(lengths: list[int], tolerance: float) -> bool:
    return max(lengths) - min(lengths) <= tolerance


def sentence_length_run(doc: Document) -> Finding | None:
    """Runs of ``sentence_length_run_min`` or more consecutive sentences whose lengths all lie
    within ``sentence_length_run_tolerance`` characters of each other; runs do not overlap."""
    tolerance, least = doc.threshold("sentence_length_run_tolerance"), doc.threshold("sentence_length_run_min")
    runs: list[list[Span]] = []
    current: list[Span] = []
    for sentence in doc.sentences:
        if current and _fits([s.chars for s in current] + [sentence.chars], tolerance):
            current.append(sentence)
            continue
        if len(current) >= least:
            runs.append(current)
        current = [sentence]
    if len(current) >= least:
        runs.append(current)
    if not runs:
        return None
    evidence = doc.evidence([(run[0].start, run[-1].end) for run in runs])
    for item, run in zip(evidence, runs):
        item["lengths"] = [s.chars for s in run]
    return Finding("sentence_length_run", len(runs), evidence, rate_per_kchars=doc.rate(len(runs)),
                   message=f"{len(runs)} 处连续 {int(least)} 句以上长度几乎相同：打破节奏，合并或拆开其中一句")


def paragraph_length_cv(doc: Document) -> Finding | None:
    """facts §13 indicator 4: paragraphs all of one size read machine-made."""
    lengths = [p.size for p in doc.paragraphs]
    if len(lengths) < doc.threshold("paragraph_min_paragraphs") or not mean(lengths):
        return None
    value, limit = round(pstdev(lengths) / mean(lengths), 3), doc.threshold("paragraph_length_cv_min")
    if value >= limit:
        return None
    return Finding("paragraph_length_cv", 1, value=value, limit=limit,
                   message=f"段落长度变异系数 {value}，低于 {limit}：段落长短要有变化")


def paragraph_too_long(doc: Document) -> Finding | None:
    """Mobile readability: a paragraph longer than ``paragraph_max_chars`` fills the phone screen."""
    limit = doc.threshold("paragraph_max_chars")
    spans = [(p.start, p.end) for p in doc.paragraphs if p.size > limit]
    if not spans:
        return None
    return Finding("paragraph_too_long", len(spans), doc.evidence(spans), rate_per_kchars=doc.rate(len(spans)),
                   limit=limit, message=f"{len(spans)} 个段落超过 {int(limit)} 字：手机上读着吃力，拆成短段")


def _narration_key(doc: Document, sentence: Span) -> str:
    """The sentence's narration (not its quoted speech), letters and digits only."""
    return "".join(ch for i, ch in enumerate(sentence.text, start=sentence.start)
                   if ch.isalnum() and doc.is_narration(i))


def _bigrams(key: str) -> set[str]:
    return {key[i:i + 2] for i in range(len(key) - 1)} or {key}


PAIR_OVERLAP_FLOOR = 0.35  # of the character pairs two "nearly the same" sentences share, at least


def _similar(a: tuple[str, set[str]], b: tuple[str, set[str], SequenceMatcher], similarity: float) -> bool:
    """Equal, or a ``SequenceMatcher`` ratio ≥ ``similarity`` (one word added or changed keeps a
    sentence "nearly the same"). Cheap bounds first: lengths, shared character pairs, then the
    matcher's own upper bound. ``b`` brings its matcher with ``b`` already indexed as the second
    sequence (the costly part), so an earlier sentence is indexed once, not once per comparison."""
    if a[0] == b[0]:
        return True
    short, long_ = sorted((len(a[0]), len(b[0])))
    if 2 * short / (short + long_) < similarity:
        return False
    # Two sentences the matcher finds this similar share most of their character pairs (one word
    # changed in twenty characters keeps ~80 %); a third of them is a safe floor, and far cheaper
    # than the matcher on the many sentence pairs of a chapter that are merely alike in length.
    shared = len(a[1] & b[1])
    if 2 * shared < PAIR_OVERLAP_FLOOR * (len(a[1]) + len(b[1])):
        return False
    matcher = b[2]
    matcher.set_seq1(a[0])
    return matcher.quick_ratio() >= similarity and matcher.ratio() >= similarity


def repeated_sentences(doc: Document) -> list[tuple[int, int]]:
    """(index, earlier index) of every narrated sentence the same as, or nearly the same as
    (``_similar``: ratio ≥ ``repetition_similarity``), an earlier one (the nearest). Computed once
    per document (the rule and the indicators both ask)."""
    if doc.repeats is not None:
        return doc.repeats
    least, similarity = doc.threshold("repetition_min_chars"), doc.threshold("repetition_similarity")
    seen: list[tuple[int, tuple[str, set[str], SequenceMatcher]]] = []
    repeats = []
    for index, sentence in enumerate(doc.sentences):
        key = _narration_key(doc, sentence)
        if len(key) < least:
            continue
        bigrams = _bigrams(key)
        earlier = next((i for i, e in reversed(seen) if _similar((key, bigrams), e, similarity)), None)
        if earlier is not None:
            repeats.append((index, earlier))
        matcher = SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(key)
        seen.append((index, (key, bigrams, matcher)))
    doc.repeats = repeats
    return repeats


def sentence_repetition(doc: Document) -> Finding | None:
    """Repeated sentences (``repeated_sentences``), near their earlier twin (``within_window``) or
    anywhere before it."""
    repeats, window = repeated_sentences(doc), doc.threshold("repetition_window")
    if not repeats:
        return None
    evidence = doc.evidence([(doc.sentences[i].start, doc.sentences[i].end) for i, _ in repeats])
    for item, (index, earlier) in zip(evidence, repeats):
        item["repeats_start"] = doc.sentences[earlier].start
        item["within_window"] = index - earlier < window
    return Finding("sentence_repetition", len(repeats), evidence, rate_per_kchars=doc.rate(len(repeats)),
                   message=f"{len(repeats)} 个句子与前文相同或几乎相同：删去或换一种说法")
