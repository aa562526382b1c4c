"""The book bible: the stable head every chapter stage's prompt opens with (issue #17 §4).

The craft rules in Novelsite's own words, the book (title, genre, brief), the platform's asks, the
voice (statistical targets, directives, exemplars, words to avoid), the established world rules and
a digest of the world documents, and the roster of established characters with one line each. It
is rendered from ``bible.j2`` (a project may override it like any prompt template) and is the same
text from chapter to chapter until a person edits one of those things: nothing in it depends on
the chapter, the story state or the time, and every list is in a stored order. So the prompt cache
holds it across chapters and across the stages of a chapter.

Each part has a size; the whole stays under ``MAX_TOKENS`` (the per-chapter part keeps the
stage's own budget). When a long book's material does not fit, the roster, the world documents and
the brief give way first, saying how much was left out.
"""
from __future__ import annotations

from typing import Any

from pipeline.jacquard.templates import render_string
from pipeline.jacquard.tokens import estimate_tokens
from pipeline.chapter.platform_rules import HOOK_TYPE_WORDS
from pipeline.prompts.overrides import prompt_template_source
from projects.models import CanonStatus, CharacterStatus, Project
from projects.platforms.genres import GENRES
from projects.platforms.limits import platform_limits
from projects.platforms.profiles import default_writing_guide
from projects.style_targets import statistical_targets

TEMPLATE = "bible.j2"
MAX_TOKENS = 6_000  # issue #17 §4: the bible stays ≤ 6K tokens
BRIEF_CHARS = 1_500
GUIDE_CHARS = 600
RULE_CHARS = 90  # one rule, one line
RULES_CHARS = 1_400
DOC_DIGEST_CHARS = 160  # the opening of each world document
DOCS_CHARS = 700
ROSTER_LINE_CHARS = 36
ROSTER_CHARS = 1_400
EXEMPLARS = 5
EXEMPLAR_CHARS = 150
DIRECTIVES = 8
SPEECH_PATTERNS = 8
AVOID_WORDS = 30
PLATFORM_NAMES = {"qidian": "起点中文网", "fanqie": "番茄小说", "jinjiang": "晋江文学城", "general": "不限平台"}
DRIVE_NAMES = {"plot": "情节驱动", "character": "人物驱动", "suspense": "悬疑驱动", "slice_of_life": "日常向"}


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters at the last sentence end within it, marked as cut."""
    text = " ".join(text.split()) if "\n" not in text else text.strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    end = max(head.rfind(mark) for mark in "。！？；\n")
    return (head[:end + 1] if end >= limit // 2 else head).rstrip() + "……"


def _within(items: list[Any], limit: int, size) -> tuple[list[Any], int]:
    """The leading items whose sizes add up to at most ``limit``, and how many were left out."""
    kept, total = [], 0
    for item in items:
        total += size(item)
        if total > limit:
            break
        kept.append(item)
    return kept, len(items) - len(kept)


def _first_line(profile: str) -> str:
    """A character's one line: the first sentence of their profile that is not a heading."""
    for line in profile.splitlines():
        line = line.strip().lstrip("-*> ").strip()
        if line and not line.startswith("#"):
            return clip(line, ROSTER_LINE_CHARS)
    return ""


def _platform(project: Project) -> dict[str, Any]:
    limits = platform_limits(project)
    words, hook, mobile = limits["word_count"], limits["hook_policy"], limits["readability"]
    title = limits["title_policy"]
    return {
        "name": PLATFORM_NAMES.get(limits["platform"], limits["platform"]),
        "target_min": words["target_min"], "target_max": words["target_max"],
        "hard_min": words["hard_min"], "hard_max": words["hard_max"],
        "hook_required": bool(hook["required"]), "hook_min_strength": hook.get("min_strength", 3),
        "hook_types": [HOOK_TYPE_WORDS.get(t, t) for t in hook["allowed_types"]],
        "max_paragraph_chars": mobile.get("max_paragraph_chars") if mobile.get("enabled") else None,
        "max_exposition": mobile.get("max_consecutive_exposition_paragraphs"),
        "max_new_entities": limits["info_load"]["max_new_entities_per_chapter"],
        "title_min": title.get("min_chars") if title.get("enabled") else None,
        "title_max": title.get("max_chars") if title.get("enabled") else None,
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pair(value: Any) -> tuple[float, float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(_number(v) is not None for v in value):
        return float(value[0]), float(value[1])
    return None


def _targets(project: Project, profile: dict[str, Any]) -> list[str]:
    """The figures the writer aims at, in words: a voice sample's (measured by code), else the style
    profile's where it has them, else the platform's and genre's defaults (issue #17 §3)."""
    targets = dict(statistical_targets(project))
    if targets.get("source") != "sample":
        paragraph = profile.get("paragraph_style") if isinstance(profile.get("paragraph_style"), dict) else {}
        for name, value in (("avg_sentence_length", profile.get("avg_sentence_length")),
                            ("dialogue_ratio", profile.get("dialogue_ratio")),
                            ("avg_paragraph_length", paragraph.get("avg_paragraph_length"))):
            if _number(value) is not None:
                targets[name] = value
        if _pair(profile.get("sentence_length_range")):
            targets["sentence_length_range"] = profile["sentence_length_range"]
    words = []
    if (average := _number(targets.get("avg_sentence_length"))) is not None:
        words.append(f"平均句长约 {average:g} 字")
    if spread := _pair(targets.get("sentence_length_range")):
        words.append(f"句长多在 {spread[0]:g}–{spread[1]:g} 字之间")
    if deviation := _pair(targets.get("sentence_length_std_dev")):
        words.append(f"句长的标准差保持在 {deviation[0]:g}–{deviation[1]:g}（长短交错）")
    if (dialogue := _number(targets.get("dialogue_ratio"))) is not None:
        words.append(f"对话约占 {dialogue:.0%}")
    if (paragraph_length := _number(targets.get("avg_paragraph_length"))) is not None:
        words.append(f"段落平均约 {paragraph_length:g} 字")
    if cv := _pair(targets.get("paragraph_length_cv")):
        words.append(f"段落长度的变异系数在 {cv[0]:g}–{cv[1]:g} 之间")
    return words


def _directives(profile: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for item in (profile.get("writing_directives") or [])[:DIRECTIVES]:
        if isinstance(item, str) and item.strip():  # the legacy form: plain strings
            out.append({"directive": clip(item, 80), "do": "", "dont": ""})
        elif isinstance(item, dict) and item.get("directive"):
            out.append({key: clip(str(item.get(key) or ""), 80) for key in ("directive", "do", "dont")})
    return out


def _voice(project: Project, names: dict[str, str]) -> dict[str, Any]:
    profile = {k: v for k, v in (project.style_profile or {}).items() if not str(k).startswith("_")}
    blacklist = project.ai_blacklist or {}
    avoid = [*(profile.get("forbidden_words") or []), *(blacklist.get("words") or [])]
    for entries in (blacklist.get("categories") or {}).values():
        avoid += [e["word"] for e in entries if isinstance(e, dict) and e.get("word")]
    speech = profile.get("character_speech_patterns") or {}
    return {
        "targets": _targets(project, profile),
        "narrative_voice": clip(str(profile.get("narrative_voice") or ""), 120),
        "directives": _directives(profile),
        "exemplars": [clip(str(e), EXEMPLAR_CHARS) for e in (profile.get("style_exemplars") or [])[:EXEMPLARS]
                      if str(e).strip()],
        # the profile may key speech patterns by slug: the writer reads names
        "speech": [(names.get(str(key), str(key)), clip(str(text), 60))
                   for key, text in list(speech.items())[:SPEECH_PATTERNS]]
        if isinstance(speech, dict) else [],
        "preferred": [str(w) for w in (profile.get("preferred_expressions") or [])[:12]],
        "avoid": list(dict.fromkeys(str(w) for w in avoid if str(w).strip()))[:AVOID_WORDS],
    }


def _world(project: Project) -> tuple[list[dict], int, list[dict]]:
    rules = [{"id": r["rule_id"], "rule": clip(r["rule"], RULE_CHARS), "hard": r["constraint_type"] == "hard"}
             for r in project.world_rules.filter(canon_status=CanonStatus.ESTABLISHED)
             .values("rule_id", "rule", "constraint_type")]
    rules.sort(key=lambda r: not r["hard"])  # hard rules first, each group in the stored order
    kept, more = _within(rules, RULES_CHARS, lambda r: len(r["rule"]) + len(r["id"]) + 12)
    docs = [{"name": name, "digest": clip(content, DOC_DIGEST_CHARS)}
            for name, content in project.world_docs.values_list("name", "content") if content.strip()]
    docs, _ = _within(docs, DOCS_CHARS, lambda d: len(d["digest"]) + len(d["name"]) + 3)
    return kept, more, docs


def _roster(project: Project) -> tuple[list[dict], int, dict[str, str]]:
    """The established active characters, one line each, and every character's name by slug."""
    rows = list(project.characters.order_by("created_at", "pk").values_list(
        "slug", "display_name", "aliases", "profile", "status", "canon_status"))
    people = [{"name": name, "aliases": [str(a) for a in (aliases or [])][:3], "line": _first_line(profile)}
              for _slug, name, aliases, profile, status, canon in rows
              if status == CharacterStatus.ACTIVE and canon == CanonStatus.ESTABLISHED]
    kept, more = _within(people, ROSTER_CHARS,
                         lambda c: len(c["name"]) + len(c["line"]) + 6 + sum(map(len, c["aliases"])))
    return kept, more, {slug: name for slug, name, *_rest in rows}


def bible_context(project: Project) -> dict[str, Any]:
    """What ``bible.j2`` renders: plain data, in stored order, nothing that moves per chapter."""
    rules, rules_more, docs = _world(project)
    roster, roster_more, names = _roster(project)
    guide = project.platform_writing_guide or default_writing_guide(platform_limits(project)["platform"])
    return {
        "title": project.title, "genre": GENRES.get(project.genre, project.genre),
        "drive": DRIVE_NAMES.get(project.genre_drive_type, ""),
        "brief": clip(project.brief or "", BRIEF_CHARS), "platform": _platform(project),
        "guide": clip(_guide_lines(guide), GUIDE_CHARS), "voice": _voice(project, names),
        "rules": rules, "rules_more": rules_more, "docs": docs, "roster": roster, "roster_more": roster_more,
    }


# Lines of a platform guide that the bible's platform section already gives, from the active
# profile's figures (which win when an owner edited the profile and not the guide).
GUIDE_LINES_GIVEN = ("- 章节字数", "- 章末", "- 手机阅读", "- 信息量")


def _guide_lines(guide: str) -> str:
    return "\n".join(line for line in guide.strip().splitlines()
                     if not line.startswith("# ") and not line.startswith(GUIDE_LINES_GIVEN))


def _shrink(context: dict[str, Any]) -> bool:
    """Take a step back where a long book's material is largest; False when nothing is left to give."""
    if len(context["roster"]) > 10:
        cut = len(context["roster"]) // 4
        context["roster"], context["roster_more"] = context["roster"][:-cut], context["roster_more"] + cut
    elif context["docs"]:
        context["docs"] = context["docs"][:-1]
    elif len(context["brief"]) > 400:
        context["brief"] = clip(context["brief"], len(context["brief"]) * 3 // 4)
    elif len(context["rules"]) > 10:
        cut = len(context["rules"]) // 4
        context["rules"], context["rules_more"] = context["rules"][:-cut], context["rules_more"] + cut
    else:
        return False
    return True


def book_bible(project: Project) -> str:
    """The bible's text for ``project`` (the project's ``bible.j2`` override if it has one)."""
    source = prompt_template_source(project_id=project.pk, name=TEMPLATE,
                                    has_overrides=getattr(project, "has_prompt_overrides", None))
    context = bible_context(project)
    text = render_string(source, context)
    while estimate_tokens(text) > MAX_TOKENS and _shrink(context):
        text = render_string(source, context)
    return text.strip()
