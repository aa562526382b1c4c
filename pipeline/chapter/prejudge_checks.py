"""Deterministic chapter checks that run before the LLM judge and feed it (DESIGN §4 step 4).

Pure Python on plain dicts/lists/strings. ``run_checks`` combines them: ``.violations`` go to
``gate.decide(deterministic_violations=...)`` (each forces a revision like a high-confidence
violation); ``.as_dict()`` goes into the judge's prompt and the evaluation metadata.
Violation and warning texts are Chinese: they are shown to the writer as fixes.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.chapter.story_checks import StoryInputs, story_checks
from projects.text_stats import CLOSE_QUOTES, OPEN_QUOTES, count_chars, quoted_mask, quoted_spans  # noqa: F401 (re-exported)

NARRATION_ONLY = "narration_only"
_MASK = "\0"


# --- blacklist (facts §13 lint-blacklist) -------------------------------------------------------------

@dataclass
class BlacklistReport:
    chars: int  # non-whitespace characters
    total_hits: int
    hits_per_kchars: float  # total_hits / (chars / 1000), 3 dp
    hits: list[dict[str, Any]]  # [{word, count}], most frequent first
    per_chapter_limit_hits: list[dict[str, Any]]  # [{word, count, per_chapter_max}]
    narration_connector_count: int = 0  # counted hits of the narration_connector category (indicator 6)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["statistical_profile"] = {"blacklist_hit_rate": self.hits_per_kchars,
                                       "narration_connector_count": self.narration_connector_count}
        return data


def _whitelist(blacklist: Mapping[str, Any]) -> set[str]:
    raw = blacklist.get("whitelist") or []
    words = raw.get("words") or [] if isinstance(raw, Mapping) else raw  # facts §15.8: array or {words}
    return {w for w in words if isinstance(w, str) and w}


def _entries(blacklist: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """word -> {narration_only, per_chapter_max, category}. ``words[]`` entries count everywhere; a word is
    narration-only when every entry naming it says so; the smallest ``per_chapter_max`` wins."""
    entries: dict[str, dict[str, Any]] = {}

    def add(word: Any, narration_only: bool, limit: Any, category: str | None) -> None:
        if not isinstance(word, str) or not word:
            return
        entry = entries.setdefault(word, {"narration_only": True, "per_chapter_max": None, "category": category})
        entry["narration_only"] = entry["narration_only"] and narration_only
        entry["category"] = entry["category"] or category
        if isinstance(limit, int) and not isinstance(limit, bool):
            old = entry["per_chapter_max"]
            entry["per_chapter_max"] = limit if old is None else min(old, limit)

    for word in blacklist.get("words") or []:
        add(word, False, None, None)
    for category, items in (blacklist.get("categories") or {}).items():
        for item in items if isinstance(items, list) else []:
            if isinstance(item, Mapping):
                add(item.get("word"), item.get("context") == NARRATION_ONLY, item.get("per_chapter_max"), category)
    return entries


def blacklist_matches(text: str, blacklist: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The counted blacklist hits of ``text`` as ``[{start, end, word, category}]`` in text order
    (character offsets), matched as ``blacklist_hits`` counts them (facts §13): longest match first;
    a matched span is masked so the shorter words inside it do not count again ("嘴角微微上扬" hides
    its "微微"). Whitelisted words take part in the masking but never count. ``narration_only``
    words inside Chinese quotes are skipped (and still mask their span)."""
    blacklist = blacklist or {}
    whitelist = _whitelist(blacklist)
    entries = _entries(blacklist)
    in_quote = quoted_mask(text)
    # longest first; at equal length a whitelisted word goes first so it wins
    candidates = sorted(set(entries) | whitelist, key=lambda w: (-len(w), w not in whitelist, w))
    masked, found = text, []
    for word in candidates:
        start = masked.find(word)
        while start != -1:
            entry = entries.get(word)
            if word not in whitelist and entry and not (entry["narration_only"] and in_quote[start]):
                found.append({"start": start, "end": start + len(word), "word": word, "category": entry["category"]})
            masked = masked[:start] + _MASK * len(word) + masked[start + len(word):]
            start = masked.find(word, start + len(word))
    return sorted(found, key=lambda hit: hit["start"])


def blacklist_hits(text: str, blacklist: Mapping[str, Any] | None) -> BlacklistReport:
    """facts §13 lint-blacklist over the hits of ``blacklist_matches``."""
    entries = _entries(blacklist or {})
    counts: dict[str, int] = {}
    for hit in blacklist_matches(text, blacklist):
        counts[hit["word"]] = counts.get(hit["word"], 0) + 1
    chars = count_chars(text)
    total = sum(counts.values())
    limits = [{"word": w, "count": c, "per_chapter_max": entries[w]["per_chapter_max"]}
              for w, c in sorted(counts.items())
              if entries[w]["per_chapter_max"] is not None and c > entries[w]["per_chapter_max"]]
    return BlacklistReport(
        chars=chars,
        total_hits=total,
        hits_per_kchars=round(total / (chars / 1000), 3) if chars else 0.0,
        hits=[{"word": w, "count": c} for w, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))],
        per_chapter_limit_hits=limits,
        narration_connector_count=sum(c for w, c in counts.items() if entries[w]["category"] == "narration_connector"),
    )


# --- length, characters, foreshadowing, hard rules --------------------------------------------------

@dataclass
class LengthReport:
    status: str  # "ok" | "too_short" | "too_long"
    chars: int
    target_chars: int | None
    min_chars: int | None
    max_chars: int | None


def length_check(text: str, target_chars: int | None, tolerance: float = 0.25) -> LengthReport:
    """Non-whitespace length against ``target_chars`` ± ``tolerance`` (bounds rounded); no target -> ok."""
    chars = count_chars(text)
    if not target_chars or target_chars <= 0:
        return LengthReport("ok", chars, None, None, None)
    low, high = round(target_chars * (1 - tolerance)), round(target_chars * (1 + tolerance))
    status = "too_short" if chars < low else "too_long" if chars > high else "ok"
    return LengthReport(status, chars, target_chars, low, high)


@dataclass
class CharacterReport:
    retired_present: list[dict[str, str]]  # [{slug, display_name}] named in the text; whether that is a
    # violation (acting) or a suspicion (a mention) is pipeline.chapter.story_checks' call (#18)
    missing_contract: list[dict[str, str]]  # warning: contract characters the text never names


def character_check(text: str, characters: Sequence[Mapping[str, Any]],
                    contract_slugs: Iterable[str] = ()) -> CharacterReport:
    """``characters``: [{slug, display_name, status}] (status "retired" = characters/retired/, facts §10.2).
    A character is "present" when its display_name (or, without one, its slug) occurs in the text."""
    by_slug = {str(c.get("slug")): c for c in characters if c.get("slug")}

    def named(c: Mapping[str, Any]) -> dict[str, str]:
        return {"slug": str(c.get("slug") or ""), "display_name": str(c.get("display_name") or c.get("slug") or "")}

    retired = [named(c) for c in characters if c.get("status") == "retired" and named(c)["display_name"]
               and named(c)["display_name"] in text]
    missing = []
    for slug in dict.fromkeys(contract_slugs):
        who = named(by_slug.get(slug, {"slug": slug}))
        if who["display_name"] not in text:
            missing.append(who)
    return CharacterReport(retired, missing)


@dataclass
class ForeshadowReport:
    missing_updates: list[dict[str, str]]  # violation: [{id, expected}] contract updates with no delta op
    status_mismatches: list[dict[str, str]]  # warning: [{id, expected, actual}] op present, other status
    missing_objectives: list[dict[str, str]]  # violation: [{objective_id, target}] required, no op on target


def foreshadowing_check(contract_updates: Mapping[str, str] | None, delta_ops: Sequence[Mapping[str, Any]],
                        objectives: Sequence[Mapping[str, Any]] = ()) -> ForeshadowReport:
    """Contract ``postconditions.foreshadowing_updates`` {id: status} and required ``foreshadowing``
    objectives (``target`` = foreshadow id, facts §10.7) against the delta's ``foreshadow`` ops
    (``path`` = id, ``value`` = status, facts §10.8). ``required`` defaults to true."""
    ops: dict[str, list[str]] = {}
    for op in delta_ops:
        if isinstance(op, Mapping) and op.get("op") == "foreshadow" and op.get("path"):
            ops.setdefault(str(op["path"]), []).append(str(op.get("value")))
    missing, mismatched = [], []
    for fid, expected in (contract_updates or {}).items():
        if fid not in ops:
            missing.append({"id": fid, "expected": str(expected)})
        elif str(expected) not in ops[fid]:
            mismatched.append({"id": fid, "expected": str(expected), "actual": ops[fid][-1]})
    objectives_missing = [
        {"objective_id": str(o.get("id") or ""), "target": str(o.get("target"))}
        for o in objectives
        if isinstance(o, Mapping) and o.get("type") == "foreshadowing" and o.get("required", True)
        and o.get("target") and str(o.get("target")) not in ops
    ]
    return ForeshadowReport(missing, mismatched, objectives_missing)


def hard_rule_check(text: str, rules: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Established hard L1 rules (missing ``canon_status`` = established, facts §10.1) whose keyword
    occurs in the text: [{rule_id, keyword, rule}], one per rule (its first keyword found)."""
    hits = []
    for rule in rules:
        if rule.get("constraint_type") != "hard" or (rule.get("canon_status") or "established") != "established":
            continue
        keyword = next((k for k in rule.get("keywords") or [] if isinstance(k, str) and k and k in text), None)
        if keyword:
            hits.append({"rule_id": str(rule.get("id") or ""), "keyword": keyword, "rule": str(rule.get("rule") or "")})
    return hits


# --- combined ----------------------------------------------------------------------------------------

@dataclass
class ChecksReport:
    blacklist: BlacklistReport
    length: LengthReport
    characters: CharacterReport
    foreshadowing: ForeshadowReport
    hard_rules: list[dict[str, str]]
    violations: list[str] = field(default_factory=list)  # for gate.decide(deterministic_violations=...)
    warnings: list[str] = field(default_factory=list)  # for the judge only
    story: Any = None  # pipeline.chapter.story_checks.StoryReport (#18)
    suspicions: list[str] = field(default_factory=list)  # for the judge: it decides (#18)

    def as_dict(self) -> dict[str, Any]:
        return {
            "blacklist": self.blacklist.as_dict(),
            "length": asdict(self.length),
            "characters": asdict(self.characters),
            "foreshadowing": asdict(self.foreshadowing),
            "hard_rules": list(self.hard_rules),
            "violations": list(self.violations),
            "warnings": list(self.warnings),
            "suspicions": list(self.suspicions),
            "story": self.story.as_dict() if self.story is not None else None,
        }


def run_checks(text: str, *, blacklist: Mapping[str, Any] | None = None, target_chars: int | None = None,
               tolerance: float = 0.25, characters: Sequence[Mapping[str, Any]] = (),
               contract_slugs: Iterable[str] = (), contract_updates: Mapping[str, str] | None = None,
               delta_ops: Sequence[Mapping[str, Any]] = (), objectives: Sequence[Mapping[str, Any]] = (),
               rules: Sequence[Mapping[str, Any]] = (), story: Any = None) -> ChecksReport:
    """All checks on one staged chapter. Violations: the story checks' (#18, ``pipeline.chapter.story_checks``:
    a retired or dead character acting, a character out of place, an item not held, a foreshadowing
    item resolved again, a hard rule broken in plain narration, too many unknown names), a contract
    foreshadowing update or required foreshadowing objective with no delta op. Their suspicions go
    to the judge; everything else (length, absent contract characters, blacklist overruns) is a
    warning. ``story`` is a ``StoryInputs``; without one, the roster and rules given here are used."""

    story = story or StoryInputs(characters=characters, delta_ops=delta_ops, rules=rules)
    report = ChecksReport(
        blacklist=blacklist_hits(text, blacklist),
        length=length_check(text, target_chars, tolerance),
        characters=character_check(text, characters, contract_slugs),
        foreshadowing=foreshadowing_check(contract_updates, delta_ops, objectives),
        hard_rules=hard_rule_check(text, rules),
        story=story_checks(text, story),
    )
    v, w = report.violations, report.warnings
    # a retired character named, or a rule's keyword found, is judged in context by the story checks:
    # acting or plain narration is a violation, a mention or a negation a suspicion (#18)
    v += report.story.violations
    report.suspicions += report.story.suspicions
    v += [f"伏笔 {m['id']} 按章节契约应为 {m['expected']}，但状态补丁中没有对应的 foreshadow 操作"
          for m in report.foreshadowing.missing_updates]
    v += [f"目标 {m['objective_id']} 要求处理伏笔 {m['target']}，但状态补丁中没有对应的 foreshadow 操作"
          for m in report.foreshadowing.missing_objectives]
    length = report.length
    if length.status != "ok":
        w.append(f"字数 {length.chars}，目标 {length.target_chars}（允许 {length.min_chars}–{length.max_chars}）")
    w += [f"契约角色「{c['display_name']}」未在正文中出现" for c in report.characters.missing_contract]
    w += [f"伏笔 {m['id']} 契约要求 {m['expected']}，补丁为 {m['actual']}"
          for m in report.foreshadowing.status_mismatches]
    w += [f"黑名单词「{h['word']}」出现 {h['count']} 次，超过每章上限 {h['per_chapter_max']}"
          for h in report.blacklist.per_chapter_limit_hits]
    return report
