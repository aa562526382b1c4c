"""Rules on punctuation and layout marks: em dashes, Markdown scene breaks, quote marks, and the
density of ellipses and exclamation marks."""
from __future__ import annotations

import re

from pipeline.chapter.craft.document import Document, Finding
from pipeline.chapter.craft.text_units import lines, SEPARATOR_LINE

EM_DASH = re.compile("[\u2014\u2015]+")  # —— (a run is one dash; ― is the horizontal bar some fonts use)
ELLIPSIS = re.compile(r"…+|\.{3,}|。{3,}|·{3,}")
EXCLAMATION = re.compile(r"[！!？?]*[！!][！!？?]*")
_ALWAYS_WRONG_QUOTES = set("「」『』＂\"＇'")
_SINGLE_QUOTES = set("‘’")


def em_dash(doc: Document) -> Finding | None:
    spans = [m.span() for m in EM_DASH.finditer(doc.text)]
    if len(spans) <= doc.threshold("em_dash_max"):
        return None
    return Finding("em_dash", len(spans), doc.evidence(spans), rate_per_kchars=doc.rate(len(spans)),
                   limit=doc.threshold("em_dash_max"),
                   message=f"出现 {len(spans)} 处破折号“——”：改用逗号、句号或重写句子，一个不留")


def md_separator(doc: Document) -> Finding | None:
    spans = []
    for line in lines(doc.text):
        if SEPARATOR_LINE.match(line.text):
            lead = len(line.text) - len(line.text.lstrip())
            spans.append((line.start + lead, line.start + len(line.text.rstrip())))
    if not spans:
        return None
    return Finding("md_separator", len(spans), doc.evidence(spans),
                   message=f"出现 {len(spans)} 行 Markdown 分隔线（---、***、* * *）：场景转换用空行或叙述过渡")


def _between_ascii_letters(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isascii() and text[i - 1].isalnum() \
        and text[i + 1].isascii() and text[i + 1].isalnum()


def quote_format(doc: Document) -> Finding | None:
    """Dialogue belongs in “”. Wrong: 「」『』 and ASCII or full-width straight quotes anywhere; single
    quotes ‘’ (or ') outside “…”. Legitimate: ‘’ nested inside “…”, an apostrophe inside an English
    word (don't)."""
    spans = []
    for i, ch in enumerate(doc.text):
        if ch in _ALWAYS_WRONG_QUOTES and not (ch in "'＇" and _between_ascii_letters(doc.text, i)):
            spans.append((i, i + 1))
        elif ch in _SINGLE_QUOTES and doc.is_narration(i) and not _between_ascii_letters(doc.text, i):
            spans.append((i, i + 1))
    if not spans:
        return None
    return Finding("quote_format", len(spans), doc.evidence(spans), rate_per_kchars=doc.rate(len(spans)),
                   message=f"{len(spans)} 个引号不合格式：对话一律用中文双引号“”，嵌套引用用‘’")


def _density(doc: Document, rule: str, regex: re.Pattern, key: str, what: str) -> Finding | None:
    spans = [m.span() for m in regex.finditer(doc.text)]
    rate, limit = doc.rate(len(spans)), doc.threshold(key)
    if len(spans) < doc.threshold("density_min_count") or rate <= limit:
        return None
    return Finding(rule, len(spans), doc.evidence(spans), rate_per_kchars=rate, limit=limit,
                   message=f"{what} {len(spans)} 处，每千字 {rate}，超过 {limit}：删去多余的")


def ellipsis_density(doc: Document) -> Finding | None:
    return _density(doc, "ellipsis_density", ELLIPSIS, "ellipsis_max_per_kchars", "省略号")


def exclamation_density(doc: Document) -> Finding | None:
    return _density(doc, "exclamation_density", EXCLAMATION, "exclamation_max_per_kchars", "感叹号")
