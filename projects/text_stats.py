"""Counting text the way Chinese web-novel platforms do: characters, not words."""
from __future__ import annotations

import re


def count_chars(text: str) -> int:
    """Non-whitespace characters: the 字数 of a chapter (facts §13 uses the same count)."""
    return sum(map(len, text.split()))  # str.split() cuts at exactly the characters isspace() names


OPEN_QUOTES = {"“": "”", "「": "」", "『": "』"}
CLOSE_QUOTES = set(OPEN_QUOTES.values())
_QUOTE_EVENTS = re.compile("[\n" + "".join(OPEN_QUOTES) + "".join(CLOSE_QUOTES) + "]")


def quoted_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of ``text`` inside Chinese quotes “…”, 「…」 or 『…』 (the marks
    themselves are not). Quotes nest; an unclosed quote ends at the line break, so one stray mark
    cannot swallow a chapter. Only the marks and line breaks are visited, not every character."""
    spans, stack, start = [], [], 0
    for match in _QUOTE_EVENTS.finditer(text):
        i, ch = match.start(), match.group()
        if stack and start < i:
            spans.append((start, i))
        if ch == "\n":
            stack.clear()
        elif ch in OPEN_QUOTES:
            stack.append(OPEN_QUOTES[ch])
        elif stack:  # a closing mark
            while stack and stack.pop() != ch:  # closes the matching open mark (and any unclosed inner one)
                pass
        else:  # a closing mark outside any quote: plain text
            continue
        start = i + 1
    if stack and start < len(text):
        spans.append((start, len(text)))
    return spans


def quoted_mask(text: str) -> list[bool]:
    """For each character: is it inside quotes (``quoted_spans``)?"""
    mask = [False] * len(text)
    for start, end in quoted_spans(text):
        mask[start:end] = [True] * (end - start)
    return mask
