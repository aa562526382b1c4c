"""Genres: the codes Novelsite stores and how a brief names them (facts §10.16: the original tool
reads the genre from the brief's ``- **题材**：`` line)."""
from __future__ import annotations

import re

# code -> Chinese name (the quick start's genre question offers the same list)
GENRES = {"xuanhuan": "玄幻", "xianxia": "仙侠", "dushi": "都市", "lishi": "历史", "kehuan": "科幻",
          "yanqing": "言情", "xuanyi": "悬疑", "wuxia": "武侠", "qihuan": "奇幻", "youxi": "游戏", "junshi": "军事"}
# The original tool's canonical genre ids (facts §10.16) -> Novelsite's codes.
CLI_GENRES = {"scifi": "kehuan", "history": "lishi", "suspense": "xuanyi", "romance": "yanqing"}
GENRE_LINE_RE = re.compile(r"^\s*[-*]\s*\*\*题材\*\*\s*[：:]\s*(.+?)\s*$", re.MULTILINE)


def genre_code(text: str) -> str:
    """A genre named in Chinese or by either tool's code -> Novelsite's code; ``""`` if unknown."""
    value = text.strip().strip("`").lower()
    if value in GENRES:
        return value
    if value in CLI_GENRES:
        return CLI_GENRES[value]
    for code, name in GENRES.items():
        if name in text:
            return code
    return ""


def genre_from_brief(brief: str) -> str:
    found = GENRE_LINE_RE.search(brief or "")
    return genre_code(found[1]) if found else ""
