"""Where each file of the tree lives (seed 000 §9.1, facts §1–§2), and what a safe path is."""
from __future__ import annotations

import re

from projects.filetree.errors import TreeError
from projects.ids import CHAPTERS_PER_VOLUME, chapter_id, volume_id  # noqa: F401  (re-exported)

CHECKPOINT = ".checkpoint.json"
BRIEF = "brief.md"
STYLE_PROFILE = "style-profile.json"
AI_BLACKLIST = "ai-blacklist.json"
STYLE_DRIFT = "style-drift.json"
WORLD_RULES = "world/rules.json"
WORLD_CHANGELOG = "world/changelog.md"
RELATIONSHIPS = "characters/relationships.json"
CHARACTERS_CHANGELOG = "characters/changelog.md"
STORYLINES = "storylines/storylines.json"
STORYLINE_SPEC = "storylines/storyline-spec.json"
CURRENT_STATE = "state/current-state.json"
STATE_CHANGELOG = "state/changelog.jsonl"
GLOBAL_FORESHADOWING = "foreshadowing/global.json"
# Novelsite's extension of the tree: what the original tool has no file for.
NOVELSITE_PROJECT = "novelsite/project.json"
NOVELSITE_ARCHIVES = "novelsite/archived-summaries.json"
NOVELSITE_FACTS = "novelsite/facts.json"  # the facts ledger (issue #18)
NOVELSITE_VOICE_SAMPLE = "novelsite/voice-sample.json"  # the wanted voice's sample (issue #17 §3)


GENERATED = frozenset({WORLD_CHANGELOG, CHARACTERS_CHANGELOG})
NEVER_EXPORTED_PREFIX = ".novel.lock/"

NUM = r"(\d{3,})"
RESEARCH_RE = re.compile(r"^research/([^/]+)\.md$")
WORLD_DOC_RE = re.compile(r"^world/([^/]+)\.md$")
CHARACTER_RE = re.compile(r"^characters/(active|retired)/([^/]+)\.(md|json)$")
MEMORY_RE = re.compile(r"^storylines/([^/]+)/memory\.md$")
VOLUME_FILE_RE = re.compile(
    r"^volumes/vol-(\d{2,})/(outline\.md|storyline-schedule\.json|foreshadowing\.json|new-characters\.json|review\.md)$"
)
CONTRACT_RE = re.compile(r"^volumes/vol-(\d{2,})/chapter-contracts/chapter-" + NUM + r"\.json$")
CHAPTER_RE = re.compile(r"^chapters/chapter-" + NUM + r"\.md$")
SUMMARY_RE = re.compile(r"^summaries/chapter-" + NUM + r"-summary\.md$")
EVALUATION_RE = re.compile(r"^evaluations/chapter-" + NUM + r"-eval\.json$")
LOG_RE = re.compile(r"^logs/chapter-" + NUM + r"-log\.json$")
SNAPSHOT_RE = re.compile(r"^state/history/vol-(\d{2,})-final-state\.json$")
# Directories whose every file must match one of the patterns above.
STRICT_DIRS = {"chapters/": CHAPTER_RE, "summaries/": SUMMARY_RE, "evaluations/": EVALUATION_RE}

FORBIDDEN_SEGMENTS = frozenset({"..", ".", "__proto__", "constructor", "prototype"})


def chapter_path(number: int) -> str:
    return f"chapters/{chapter_id(number)}.md"


def summary_path(number: int) -> str:
    return f"summaries/{chapter_id(number)}-summary.md"


def evaluation_path(number: int) -> str:
    return f"evaluations/{chapter_id(number)}-eval.json"


def crossref_path(number: int) -> str:
    """facts §7.4: the commit moves the staged crossref to ``state/``."""
    return f"state/chapter-{number:03d}-crossref.json"


def log_path(number: int) -> str:
    return f"logs/{chapter_id(number)}-log.json"


def volume_dir(number: int) -> str:
    return f"volumes/{volume_id(number)}"


def contract_path(volume: int, chapter: int) -> str:
    return f"{volume_dir(volume)}/chapter-contracts/{chapter_id(chapter)}.json"


def snapshot_path(volume: int) -> str:
    return f"state/history/{volume_id(volume)}-final-state.json"


def character_path(status: str, slug: str, ext: str) -> str:
    return f"characters/{status}/{slug}.{ext}"


def memory_path(slug: str) -> str:
    return f"storylines/{slug}/memory.md"


def check_relative_path(path: str) -> str:
    """A tree path must be relative, use "/", and have no "..", "." or forbidden segment (facts §1
    safe-path rules). Returns the path; raises TreeError naming it otherwise."""
    if not path or path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise TreeError(path or "(empty)", "absolute or empty path")
    if "\\" in path:
        raise TreeError(path, "backslash in path")
    if any(ord(ch) < 32 for ch in path):
        raise TreeError(path, "control character in path")
    segments = path.split("/")
    for segment in segments:
        if segment in FORBIDDEN_SEGMENTS or segment == "":
            raise TreeError(path, f"forbidden path segment {segment!r}")
    return path
