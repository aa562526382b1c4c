"""The cast as the checks know it (#18): every character's names (display name, aliases, titles),
whether the story says they are gone (retired, or dead in the state), and where each name occurs
in a chapter. Also the person-name tagger: jieba ``posseg`` with the roster loaded as a user
dictionary on a private ``jieba.Tokenizer``, so one project's names never leak into another's.
"""
from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# facts §10.8 state has no status field; a project that records one uses words like these
DEAD_STATUSES = frozenset({"dead", "deceased", "killed", "retired", "死亡", "已死", "身亡", "阵亡", "已故", "亡故",
                           "殒命", "遇害", "牺牲", "去世", "逝世", "死"})
USER_WORD_FREQ = 200_000  # high enough that jieba keeps a roster name whole
_BASE_LOCK = threading.Lock()
_BASE: Any = None


@dataclass(frozen=True)
class Person:
    slug: str
    display_name: str
    names: tuple[str, ...]  # display name first, then aliases and titles
    gone: str  # "" | "retired" | "dead": the story says they can no longer act


@dataclass(frozen=True)
class NameHit:
    person: Person
    name: str
    start: int
    end: int


def _dead(state_entry: Any) -> bool:
    status = state_entry.get("status") if isinstance(state_entry, Mapping) else None
    return isinstance(status, str) and status.strip().lower() in DEAD_STATUSES


class Roster:
    def __init__(self, characters: Sequence[Mapping[str, Any]], state: Mapping[str, Any] | None = None) -> None:
        states = state.get("characters") if isinstance(state, Mapping) else None
        states = states if isinstance(states, Mapping) else {}
        people = []
        for row in characters:
            slug = str(row.get("slug") or "")
            if not slug:
                continue
            display = str(row.get("display_name") or slug)
            aliases = [a.strip() for a in row.get("aliases") or [] if isinstance(a, str) and a.strip()]
            gone = "retired" if row.get("status") == "retired" else "dead" if _dead(states.get(slug)) else ""
            people.append(Person(slug, display, tuple(dict.fromkeys([display, *aliases])), gone))
        self.people = people
        self.by_slug = {p.slug: p for p in people}
        # a name two people share (a common title) identifies nobody: kept for "known", not for hits
        owners: dict[str, set[str]] = {}
        for person in people:
            for name in person.names:
                owners.setdefault(name, set()).add(person.slug)
        self.known_names = frozenset(owners)
        self._unique = {name: self.by_slug[next(iter(slugs))] for name, slugs in owners.items() if len(slugs) == 1}

    def hits(self, text: str) -> list[NameHit]:
        """Every occurrence of a roster name, longest name first, a matched span never matched again
        (so 林枫 inside 林枫儿 is not counted twice)."""
        taken = [False] * len(text)
        found = []
        for name in sorted(self._unique, key=lambda n: (-len(n), n)):
            for match in re.finditer(re.escape(name), text):
                if any(taken[match.start():match.end()]):
                    continue
                taken[match.start():match.end()] = [True] * len(name)
                found.append(NameHit(self._unique[name], name, match.start(), match.end()))
        return sorted(found, key=lambda h: h.start)


def _base_tagger():
    """jieba's default dictionary and tags, loaded once per process (about a second), then only read."""
    global _BASE
    with _BASE_LOCK:
        if _BASE is None:
            import jieba
            import jieba.posseg

            jieba.setLogLevel(logging.WARNING)
            tokenizer = jieba.Tokenizer()
            tokenizer.initialize()
            _BASE = jieba.posseg.POSTokenizer(tokenizer)
    return _BASE


def person_tagger(names: Iterable[str]):
    """A ``jieba.posseg.POSTokenizer`` whose dictionary is jieba's plus ``names`` (tagged ``nr``), on a
    fresh Tokenizer that shares nothing writable with jieba's global one or another project's. The
    same names give the same tagger (kept for the next chapter: copying jieba's dictionary is the
    costly part, and tagging never changes it)."""
    return _person_tagger(frozenset(name for name in names if name and len(name) <= 20))


@lru_cache(maxsize=2)  # a copy of jieba's dictionary is tens of MB: the project being written, and one more
def _person_tagger(names: frozenset[str]):
    import jieba
    import jieba.posseg

    base = _base_tagger()
    tokenizer = jieba.Tokenizer()
    tokenizer.FREQ, tokenizer.total = dict(base.tokenizer.FREQ), base.tokenizer.total
    tokenizer.initialized = True
    tagger = object.__new__(jieba.posseg.POSTokenizer)  # its __init__ would re-read the dictionary file
    tagger.tokenizer, tagger.word_tag_tab = tokenizer, dict(base.word_tag_tab)
    for name in sorted(names):
        tokenizer.add_word(name, USER_WORD_FREQ, "nr")
    return tagger
