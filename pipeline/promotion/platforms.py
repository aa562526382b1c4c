"""Platform versions of a post and each platform's limits (seed 001's platform_versions).

Limits are characters (Chinese posts are measured in characters, not words): a title the platform
cuts off, and a body over the limit, are trimmed at a sentence end where possible and the fix is
reported, so a version never leaves the run over its platform's limit.
"""
from __future__ import annotations

import re
from typing import Any

PLATFORMS = ("xiaohongshu", "wechat", "twitter", "general")
STYLES = ("professional", "casual", "humorous", "inspirational", "educational")  # seed 001 meta.style enum
CTA_TYPES = ("follow", "share", "comment", "save", "click")
LIMITS = {  # (title chars, body chars, hashtags)
    "xiaohongshu": (20, 1000, 10),
    "wechat": (64, 2000, 5),
    "twitter": (0, 280, 3),  # one post: the title goes into the body's 280
    "general": (60, 800, 8),
}
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF]")
SENTENCE_END = re.compile(r"[。！？!?…]")


def emoji_density(text: str) -> str:
    count = len(EMOJI.findall(text))
    per_100 = count * 100 / max(len(text), 1)
    return "high" if per_100 >= 3 else "medium" if per_100 >= 1 else "low"


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    ends = [m.end() for m in SENTENCE_END.finditer(cut)]
    return cut[:ends[-1]] if ends and ends[-1] >= limit // 2 else cut[: max(limit - 1, 0)] + "…"


def fit_version(platform: str, version: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The version within ``platform``'s limits, and the fixes made."""
    title_max, body_max, tags_max = LIMITS[platform]
    title, body = str(version.get("title") or ""), str(version.get("body") or "")
    tags = [str(t).lstrip("#").strip() for t in version.get("hashtags") or [] if str(t).strip("# ")]
    fixes = []
    if title_max and len(title) > title_max:
        title, fixes = _trim(title, title_max), fixes + [f"{platform}: 标题截到 {title_max} 字"]
    if platform == "twitter" and title:  # one post: title and body share the limit
        body, title = f"{title} {body}".strip(), ""
    if len(body) > body_max:
        body, fixes = _trim(body, body_max), fixes + [f"{platform}: 正文截到 {body_max} 字"]
    if len(tags) > tags_max:
        tags, fixes = tags[:tags_max], fixes + [f"{platform}: 话题标签留 {tags_max} 个"]
    fitted = {"title": title, "body": body, "hashtags": list(dict.fromkeys(tags)), "word_count": len(body),
              "emoji_density": emoji_density(title + body)}
    return fitted, fixes


def version_errors(platform: str, version: dict[str, Any]) -> list[str]:
    """What breaks the platform's limits (empty for a fitted version)."""
    title_max, body_max, tags_max = LIMITS[platform]
    errors = []
    if title_max and len(version["title"]) > title_max:
        errors.append(f"{platform}: title over {title_max} characters")
    if len(version["body"]) > body_max or version["word_count"] != len(version["body"]):
        errors.append(f"{platform}: body over {body_max} characters or word_count wrong")
    if len(version["hashtags"]) > tags_max:
        errors.append(f"{platform}: more than {tags_max} hashtags")
    return errors
