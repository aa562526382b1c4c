"""The offline refiner's fixes for the hard craft-lint findings in its slice (``lint_targets``,
with offsets into ``chapter_text``): each fix becomes a find → replace edit whose ``find`` occurs
exactly once, so ``stages.refine.apply_edits`` applies it."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_PUNCTUATION = set("，。！？；：、…“”‘’,.!?;:\n")
_QUOTE_PAIRS = {"「": "“", "」": "”", "『": "“", "』": "”", "‘": "“", "’": "”"}
_STRAIGHT = set("\"＂'＇")
_GROUP_GAP = 4  # fixes closer than this share one edit, so no edit's find swallows another's mark
_CONTEXT = 4


def _replacement(rule: str, text: str, start: int, end: int) -> str | None:
    if rule == "em_dash":  # a dash next to punctuation just goes; between words it becomes a comma
        before = text[start - 1] if start else "\n"
        after = text[end] if end < len(text) else "\n"
        return "" if before in _PUNCTUATION or after in _PUNCTUATION else "，"
    if rule == "md_separator":
        return ""
    if rule == "quote_format":
        mark = text[start:end]
        if mark in _QUOTE_PAIRS:
            return _QUOTE_PAIRS[mark]
        if mark in _STRAIGHT:  # straight quotes alternate: opening, closing, opening …
            same = sum(text.count(ch, 0, start) for ch in _STRAIGHT)
            return "“" if same % 2 == 0 else "”"
    return None


def hard_fix_edits(text: str, targets: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    fixes = []
    for target in targets:
        if target.get("severity") != "hard":
            continue
        for item in target.get("evidence") or []:
            start, end = item.get("start"), item.get("end")
            if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
                continue
            replacement = _replacement(str(target.get("rule")), text, start, end)
            if replacement is not None:
                fixes.append((start, end, replacement, str(target.get("name") or target.get("rule"))))
    fixes.sort()
    groups: list[list[tuple[int, int, str, str]]] = []
    for fix in fixes:
        if groups and fix[0] < groups[-1][-1][1] + _GROUP_GAP:
            if fix[0] >= groups[-1][-1][1]:  # overlapping fixes: keep the first
                groups[-1].append(fix)
        else:
            groups.append([fix])
    return [_edit(text, group) for group in groups]


def _edit(text: str, group: list[tuple[int, int, str, str]]) -> dict[str, str]:
    low, high = group[0][0], group[-1][1]
    margin = _CONTEXT
    while True:  # widen until the find is unique in the text
        start, end = max(0, low - margin), min(len(text), high + margin)
        if text.count(text[start:end]) == 1 or (start == 0 and end == len(text)):
            break
        margin *= 2
    window = text[start:end]
    for fix_start, fix_end, replacement, _name in reversed(group):
        window = window[:fix_start - start] + replacement + window[fix_end - start:]
    reasons = "、".join(dict.fromkeys(name for *_, name in group))
    return {"find": text[start:end], "replace": window, "reason": f"修正必须修改的问题：{reasons}"}
