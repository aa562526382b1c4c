"""The H1 line of a chapter file (facts §7.1): the tool writes ``# 第 N 章 标题``. Novelsite keeps
the title alone (``标题``) and writes the line in the tool's form, except for a chapter imported
with a heading of another form (``# 标题``, ``# 第3章：标题``), which is written back as it came
while its title is unchanged."""
from __future__ import annotations

import re

# "第 12 章", "第12章：", "第十二章 " …: the number part of a heading, not the title
NUMBER_PREFIX = re.compile(r"^第\s*[0-9０-９零〇一二三四五六七八九十百千两]+\s*章\s*[:：·\-—]?\s*")


def heading_title(line: str) -> str:
    """The title a heading line (``# …``) or a heading text names, without ``第 N 章``."""
    text = line.strip()
    text = text[1:].strip() if text.startswith("#") else text
    return NUMBER_PREFIX.sub("", text).strip()


def heading_line(number: int, title: str, *, imported: str | None = None) -> str:
    """The chapter's H1 line: the imported one while it names the same title, else the tool's form."""
    if imported and heading_title(imported) == title:
        return imported
    return f"# 第 {number} 章 {title}".rstrip()


def chapter_file_text(number: int, title: str, text: str, *, imported_heading: str | None = None) -> str:
    """facts §7.1: a chapter file starts with its H1 title line."""
    return f"{heading_line(number, title, imported=imported_heading)}\n\n{text}"
