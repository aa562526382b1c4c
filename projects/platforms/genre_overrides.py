"""``genre_overrides`` of a writer's packet (facts §12): structural thresholds by genre, for an outside
writer using the original tool's skills. Source priority as the tool's: the brief's explicit override
notes (``- **覆写说明**：…``, the ``{genre_override_notes}`` placeholder of facts §10.16) on top of the
genre's defaults, then the genre's defaults alone, then nothing (a genre the tool does not know).

The genre is the project's (Novelsite's code, mapped to the tool's canonical id), else the brief's
``- **题材**：`` line. The thresholds per genre are the tool's published defaults.
"""
from __future__ import annotations

import re
from typing import Any

from projects.platforms.genres import genre_code, genre_from_brief

# Novelsite's genre codes -> the tool's canonical ids (facts §10.16); others have no tool preset
TOOL_GENRES = {"xuanhuan": "xuanhuan", "dushi": "dushi", "kehuan": "scifi", "lishi": "history",
               "xuanyi": "suspense", "yanqing": "romance"}
SINGLE_SENTENCE, PARAGRAPH_MAX, ELLIPSIS_MAX, EXCLAMATION_MAX = (0.25, 0.45), 100, 5, 8
DEFAULT_NOTE = "未命中特定类型覆写，使用默认人类写作阈值。"
# genre -> (single-sentence paragraph share, longest paragraph, ellipses, exclamations per chapter, notes)
PRESETS: dict[str, tuple[tuple[float, float], int, int, int, list[str]]] = {
    "xuanhuan": (SINGLE_SENTENCE, PARAGRAPH_MAX, ELLIPSIS_MAX, EXCLAMATION_MAX, [DEFAULT_NOTE]),
    "dushi": (SINGLE_SENTENCE, PARAGRAPH_MAX, ELLIPSIS_MAX, EXCLAMATION_MAX, [DEFAULT_NOTE]),
    "history": (SINGLE_SENTENCE, PARAGRAPH_MAX, ELLIPSIS_MAX, EXCLAMATION_MAX, [DEFAULT_NOTE]),
    "scifi": ((0.15, 0.3), 120, ELLIPSIS_MAX, 5, ["科幻允许更长单段，但感叹号收紧到 ≤5/章。",
                                               "“难以形容 / 不可名状”仅可灰度出现，建议 ≤2/章且尽量补具体感官。"]),
    "suspense": ((0.2, 0.35), 100, 8, EXCLAMATION_MAX, ["悬疑强调断点与停顿，允许省略号 ≤8/章。"]),
    "romance": (SINGLE_SENTENCE, PARAGRAPH_MAX, ELLIPSIS_MAX, EXCLAMATION_MAX,
                ["言情沿用默认阈值，重点依赖语气差异和情感回收。"]),
}
NOTES_LINE_RE = re.compile(r"^\s*-\s*\*\*覆写说明\*\*\s*[:：]\s*(.+?)\s*$", re.MULTILINE)
PLACEHOLDER = "{genre_override_notes}"
RANGE_SEPARATORS = r"(?:-|–|—|~|～|至|到)"
RATIO_RE = re.compile(r"单句段(?:落)?(?:占比)?[^0-9]*(\d{1,3})\s*%\s*" + RANGE_SEPARATORS + r"\s*(\d{1,3})\s*%")
LIMIT_PREFIX = r"[^0-9]*(?:≤|<=|不超过|最多)?\s*(\d{1,3})"
PARAGRAPH_RE = re.compile(r"(?:段长(?:上限)?|段落(?:长度|字数)?(?:上限)?|单段(?:可放宽到)?)" + LIMIT_PREFIX)
ELLIPSIS_RE = re.compile(r"省略号(?:上限)?" + LIMIT_PREFIX)
EXCLAMATION_RE = re.compile(r"感叹号(?:上限)?" + LIMIT_PREFIX)


def brief_override_notes(brief: str) -> str | None:
    """The brief's explicit override notes; None when absent or still the template's placeholder."""
    found = NOTES_LINE_RE.findall(brief or "")
    notes = found[-1].strip() if found else ""
    return notes if notes and notes != PLACEHOLDER else None


def tool_genre(project) -> str | None:
    """The tool's canonical genre of ``project``, or None when it has none the tool knows."""
    code = genre_code(project.genre or "") or genre_from_brief(project.brief)
    return TOOL_GENRES.get(code)


def _explicit(notes: str, overrides: dict[str, Any]) -> bool:
    """Apply the thresholds the notes state (``单句段 15%-30%；段长上限 120 字；感叹号 ≤ 5/章``)."""
    applied = False
    if (ratio := RATIO_RE.search(notes)) and int(ratio[1]) <= int(ratio[2]):
        overrides["paragraph_structure"]["single_sentence_ratio"] = {"min": int(ratio[1]) / 100,
                                                                     "max": int(ratio[2]) / 100}
        applied = True
    for pattern, section, key in ((PARAGRAPH_RE, "paragraph_structure", "max_paragraph_chars"),
                                  (ELLIPSIS_RE, "punctuation_rhythm", "ellipsis_max_per_chapter"),
                                  (EXCLAMATION_RE, "punctuation_rhythm", "exclamation_max_per_chapter")):
        if found := pattern.search(notes):
            overrides[section][key] = int(found[1])
            applied = True
    return applied


def genre_overrides(project) -> dict[str, Any] | None:
    """The packet's ``genre_overrides`` for ``project``, or None (the key is then omitted)."""
    genre = tool_genre(project)
    if genre is None:
        return None
    ratio, paragraph, ellipsis, exclamation, notes_list = PRESETS[genre]
    overrides: dict[str, Any] = {
        "genre": genre,
        "paragraph_structure": {"single_sentence_ratio": {"min": ratio[0], "max": ratio[1]},
                                "max_paragraph_chars": paragraph},
        "punctuation_rhythm": {"ellipsis_max_per_chapter": ellipsis, "exclamation_max_per_chapter": exclamation,
                               "em_dash_max_per_chapter": 0},
        "notes": list(notes_list),
    }
    notes = brief_override_notes(project.brief)
    applied = _explicit(notes, overrides) if notes else False
    overrides["source"] = {"brief": "brief.md", "mode": "brief_override_notes" if applied else "brief_genre_fallback"}
    if notes:
        overrides["explicit_notes"] = notes
    return overrides
