"""A character profile by section, for the writer (#18): the sections that matter, whole, instead
of the first 400 characters (which cut a secret written late in the profile).

A profile is Markdown; its ``#``…``######`` headings split it into sections, each recognised by its
heading in Chinese or English (identity, voice, secret, abilities, goals, relationships,
appearance, history; anything else is "other"). The text before the first heading counts as
identity.

The rule (``profile_for_writer``):

- identity and voice always: who the character is and how they speak;
- a character the contract names (a real member of the chapter's cast) also gets their secrets,
  then abilities, goals, relationships, appearance, history and the rest, in that order, as long as
  they fit ``PROFILE_MAX_CHARS``; a character present only as a fallback (the contract names
  nobody) gets their secrets only when the chapter's outline or contract mentions them;
- a section is given whole or not at all; a secret is never cut in the middle (a half secret is
  worse than none: the writer would contradict the other half). Only a single section longer than
  ``SECTION_HARD_MAX`` is shortened, at a sentence boundary: that is a document, not a profile;
- a profile without headings is given whole when it is at most ``PLAIN_MAX_CHARS`` long, else its
  first sentences up to that length.

Character contracts are not profile text: the writer always gets them whole.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

PROFILE_MAX_CHARS = 1200  # per character: abilities, goals and the other optional sections
PLAIN_MAX_CHARS = 600  # a profile without headings
SECTION_HARD_MAX = 3000  # one section longer is shortened (at a sentence end); also the bound of
# identity + voice + secrets together, which only hostile input reaches

_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(\S.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_SENTENCE_END = re.compile(r"[。！？!?；;…]+[”’」』）)]*|\.(?=\s)|\n+")

# (kind, words a heading of that kind contains), checked in this order: "真实身份" is a secret,
# not an identity
KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("secret", ("秘密", "隐秘", "隐情", "秘辛", "真实身份", "真相", "不为人知", "暗中",
                "secret", "hidden", "true identity")),
    ("voice", ("声音", "说话", "口吻", "语气", "口头禅", "语言", "性格", "个性", "voice", "speech", "personality",
               "manner", "temperament")),
    ("identity", ("身份", "背景", "简介", "出身", "概况", "基本", "简述", "identity", "background", "bio", "overview",
                  "summary", "basics", "who")),
    ("abilities", ("能力", "功法", "技能", "修为", "实力", "武功", "法术", "天赋",
                   "abilit", "skill", "power", "magic")),
    ("goals", ("目标", "动机", "欲望", "愿望", "执念", "goal", "motivation", "desire", "want")),
    ("relationships", ("关系", "人际", "亲友", "relationship", "ties", "family")),
    ("appearance", ("外貌", "外形", "长相", "样貌", "容貌", "衣着", "appearance", "looks", "physical")),
    ("history", ("经历", "过去", "往事", "前史", "history", "past", "backstory")),
]
ALWAYS = ("identity", "voice")
NAMED_ORDER = ("secret", "abilities", "goals", "relationships", "appearance", "history", "other")


@dataclass(frozen=True)
class Section:
    kind: str
    heading: str  # "" for the text before the first heading
    body: str

    def text(self) -> str:
        return f"## {self.heading}\n{self.body}".strip() if self.heading else self.body


def section_kind(heading: str) -> str:
    lowered = heading.lower()
    for kind, words in KINDS:
        if any(word in lowered for word in words):
            return kind
    return "other"


def profile_sections(profile: str) -> list[Section]:
    """The profile's sections in their order; empty sections are left out."""
    text = (profile or "").replace("\r\n", "\n")
    matches = list(_HEADING.finditer(text))
    sections = []
    head = text[:matches[0].start()] if matches else text
    if head.strip():
        sections.append(Section("identity", "", head.strip()))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = text[match.end():end].strip()
        heading = match[2].strip()
        if body:
            sections.append(Section(section_kind(heading), heading, body))
    return sections


def sentences_up_to(text: str, limit: int) -> str:
    """The longest run of whole sentences from the start that fits ``limit`` characters (at least
    the first ``limit`` characters when the first sentence alone is longer)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > limit:
            break
        cut = match.end()
    return (text[:cut] if cut else text[:limit]).rstrip() + "…"


def profile_for_writer(profile: str, *, named: bool, mentioned: bool = False) -> str:
    """What the writer gets of one character's profile (see the module's docstring for the rule)."""
    sections = profile_sections(profile)
    if not any(section.heading for section in sections):
        return sentences_up_to(profile or "", PLAIN_MAX_CHARS)
    wanted = set(ALWAYS)
    if named:
        wanted.update(NAMED_ORDER)
    elif mentioned:
        wanted.add("secret")
    chosen: set[int] = set()
    essential = optional = 0  # characters given: identity, voice and secrets / the rest
    for kind in (*ALWAYS, *NAMED_ORDER):
        if kind not in wanted:
            continue
        for index, section in enumerate(sections):
            if section.kind != kind:
                continue
            size = min(len(section.text()), SECTION_HARD_MAX)
            if kind in ALWAYS or kind == "secret":  # whole, within a bound only hostile input reaches
                if essential and essential + size > SECTION_HARD_MAX:
                    continue
                essential += size
            elif optional + size <= PROFILE_MAX_CHARS:
                optional += size
            else:
                continue
            chosen.add(index)
    parts = []
    for index, section in enumerate(sections):
        if index in chosen:
            body = sentences_up_to(section.body, SECTION_HARD_MAX)
            parts.append(Section(section.kind, section.heading, body).text())
    return "\n\n".join(parts)
