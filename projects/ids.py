"""Id and file-name rules of the seed (seed 000 §9.1, facts §1), in one place."""
from __future__ import annotations

import re

from django.core.validators import RegexValidator

from projects.schemas import SLUG_PATTERN

CHAPTERS_PER_VOLUME = 30  # facts §1: fixed; volumeForChapter = ceil(ch / 30), a volume ends at V * 30
SLUG_RE = re.compile(SLUG_PATTERN)
WORLD_RULE_ID_RE = re.compile(r"^W-\d{3,}$")
# A file stem under research/ or world/: one path segment, no hidden files, no separators.
FILE_STEM_RE = re.compile(r"^(?!\.)[^/\\\x00-\x1f]{1,100}$")

slug_validator = RegexValidator(
    SLUG_RE,
    "Use a slug id: lowercase letters or pinyin and digits joined by hyphens, e.g. lin-feng or main-arc.",
    code="invalid_slug",
)
world_rule_id_validator = RegexValidator(WORLD_RULE_ID_RE, "World rule ids look like W-001.", code="invalid_rule_id")
file_stem_validator = RegexValidator(
    FILE_STEM_RE, "A file name without slashes or control characters, not starting with a dot.", code="invalid_name"
)


def volume_for_chapter(chapter: int) -> int:
    """The volume a chapter belongs to by number alone: ceil(chapter / 30) (facts §1)."""
    return -(-chapter // CHAPTERS_PER_VOLUME)


def chapter_id(number: int) -> str:
    """``chapter-{C:03d}``: 3 digits, more when the book passes 999 chapters."""
    return f"chapter-{number:03d}"


def volume_id(number: int) -> str:
    return f"vol-{number:02d}"


def is_slug(value: object) -> bool:
    return isinstance(value, str) and bool(SLUG_RE.match(value))
