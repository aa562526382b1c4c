"""Rules on the chapter's frame: the ``# 第 N 章 标题`` heading line, the title policy and the
platform's word-count range."""
from __future__ import annotations

import re

from pipeline.chapter.craft.document import Document, Finding
from pipeline.chapter.craft.text_units import body_start, heading_line, lines, stripped
from projects.text_stats import count_chars

HEADING = re.compile(r"^#(?!#)\s*第\s*(\d+)\s*章[ \t]*(.*)$")
DEFAULT_TITLE_POLICY = {"min_chars": 2, "max_chars": 20, "banned_words": [], "forbidden_chars": "——!！?？…~～"}


def heading_title(text: str) -> str | None:
    """The title of a ``# 第 N 章 标题`` heading line, if the text has one."""
    line = heading_line(text)
    match = HEADING.match(line.text) if line else None
    return match[2].strip() if match else None


def chapter_heading(doc: Document) -> Finding | None:
    """The file's first line is ``# 第 N 章 标题`` (N in digits, the chapter's own number when known).
    Text without any heading line passes unless ``expect_heading`` (a chapter file, not stored prose)."""
    line = heading_line(doc.text)
    if line is None:
        first = next((line for line in map(stripped, lines(doc.text)) if line.text), None)
        if not doc.expect_heading or first is None:
            return None
        return Finding("chapter_heading", 1, doc.evidence([(first.start, first.end)]),
                       message="缺少章节标题行：第一行应为“# 第 N 章 标题”")
    match, problems = HEADING.match(line.text), []
    if not match:
        problems.append("格式应为“# 第 N 章 标题”（一个 #，阿拉伯数字）")
    else:
        if doc.chapter is not None and int(match[1]) != doc.chapter:
            problems.append(f"章节号 {int(match[1])} 与第 {doc.chapter} 章不符")
        if not match[2].strip():
            problems.append("缺少章名")
    if not problems:
        return None
    return Finding("chapter_heading", len(problems), doc.evidence([(line.start, line.end)]),
                   message="章节标题行有误：" + "；".join(problems))


def title(doc: Document) -> Finding | None:
    """The title policy (facts §7.3 title gate: only when the policy is enabled): length, banned
    words and forbidden characters."""
    policy = doc.title_policy
    if not policy or policy.get("enabled") is False:
        return None
    policy = {**DEFAULT_TITLE_POLICY, **policy}
    line = heading_line(doc.text)
    match = HEADING.match(line.text) if line else None
    if match:
        name = match[2].strip()
        start = line.start + match.start(2) + (len(match[2]) - len(match[2].lstrip()))
        spans = [(start, start + len(name))] if name else []
    else:
        name, spans = (doc.title or "").strip(), []
    problems, size = [], count_chars(name)
    if size < int(policy["min_chars"]):
        problems.append(f"章名 {size} 字，少于 {policy['min_chars']} 字")
    if size > int(policy["max_chars"]):
        problems.append(f"章名 {size} 字，超过 {policy['max_chars']} 字")
    problems += [f"章名含禁用词“{w}”" for w in policy.get("banned_words") or []
                 if isinstance(w, str) and w and w in name]
    bad = sorted({ch for ch in name if ch in str(policy.get("forbidden_chars") or "")})
    if bad:
        problems.append("章名含禁用符号 " + " ".join(bad))
    if not problems:
        return None
    return Finding("title", len(problems), doc.evidence(spans), message="章名不合要求：" + "；".join(problems))


def word_count(doc: Document) -> Finding | None:
    """The prose's non-space characters (heading line excluded) within the platform's range."""
    if not doc.word_range:
        return None
    low, high = doc.word_range
    size = count_chars(doc.text[body_start(doc.text):])
    if low is not None and size < low:
        message, limit = f"正文 {size} 字，少于平台要求的 {low} 字", low
    elif high is not None and size > high:
        message, limit = f"正文 {size} 字，超过平台上限 {high} 字", high
    else:
        return None
    return Finding("word_count", 1, value=size, limit=limit, message=message)
