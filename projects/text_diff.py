"""Line diffs for people to read (templates/pipeline/_diff.html): a chapter's versions, a staged
plan against its previous version, a revised draft against the one before it."""
from __future__ import annotations

import difflib


def line_diff(old: str, new: str, *, context: int = 2) -> list[tuple[str, str]]:
    """Unified line diff as (kind, line) pairs: kind is '+', '-', ' ' or '@' (a hunk header)."""
    lines = difflib.unified_diff((old or "").splitlines(), (new or "").splitlines(), lineterm="", n=context)
    return [(line[:1] or " ", line[1:]) for line in list(lines)[2:]]
