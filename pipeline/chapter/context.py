"""What the stages of one chapter know about the story: read once per stage, with a fixed number
of queries, and selected so it stays bounded as the book grows (DESIGN §6, facts §12).

Selection instead of truncation: the contract's characters only (their state, profile and L2
contracts), the current storyline's memory and its neighbours', the summaries since the last
archive (seed 002) plus the memory levels above them, foreshadowing that is due or dormant, and
for a character back after a long absence the summary of their last real appearance
(pipeline/chapter/recall.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from pipeline.chapter.book_bible import book_bible
from pipeline.chapter.facts_recall import open_facts_for
from pipeline.chapter.foreshadowing_tasks import foreshadowing_tasks
from pipeline.chapter.memory import DETAIL_CHAPTERS_MAX, memory_for_writer
from pipeline.book.plan_validation import outline_blocks, outline_value
from pipeline.chapter.profile_sections import profile_for_writer
from pipeline.chapter.recall import recall_returning
from projects.models import ArchivedSummary, Chapter, ChapterSummary, Project

MAX_FALLBACK_CHARACTERS = 15  # facts §12: without contract characters, the first 15
RECENT_WINDOW = 10  # seed 002: at most 10 unarchived summaries before consolidation
BLACKLIST_TOP = 10  # facts §12: ai_blacklist_top10
PREVIOUS_ENDING_CHARS = 800  # issue #17 §4: the previous chapter's last ~800 characters, verbatim


@dataclass(frozen=True)
class CastMember:
    slug: str
    display_name: str
    status: str
    profile: str
    contracts: list[dict]
    state: dict
    named: bool = True  # named by the contract (False: one of the fallback characters)
    writer_profile: str = ""  # the profile's sections the writer gets (pipeline/chapter/profile_sections.py)


@dataclass(frozen=True)
class ChapterContext:
    project: Project
    chapter: int
    volume: int
    contract: dict[str, Any]
    title: str
    outline_block: str
    storyline_id: str
    cast: list[CastMember]
    all_characters: list[dict]  # slug, display_name, status, aliases of everyone (for the checks)
    rules: list[dict]
    hard_rules: list[str]
    style_profile: dict
    blacklist: dict
    blacklist_top: list[str]
    drift_directives: list[str]
    storyline_memory: str
    adjacent_memories: dict[str, str]
    recent_summaries: list[tuple[int, str]]
    memory_levels: list[dict]  # level, chapters [start, end], text, chars, allowed, stored_chars
    recall: list[tuple[str, int, str]]  # (display_name, chapter, summary)
    foreshadowing_tasks: list[dict]
    state: dict
    state_version: int
    place: str = ""
    extra: dict = field(default_factory=dict)
    open_facts: list[dict] = field(default_factory=list)  # the ledger's open facts (pipeline/chapter/facts_recall.py)
    bible: str = ""  # the book bible every chapter stage opens with (pipeline/chapter/book_bible.py)
    previous_ending: str = ""  # the last lines of the chapter before, verbatim (so the seam reads on)

    @property
    def foreshadowing_updates(self) -> dict[str, str]:
        return dict((self.contract.get("postconditions") or {}).get("foreshadowing_updates") or {})

    @property
    def objectives(self) -> list[dict]:
        return list(self.contract.get("objectives") or [])


def outline_block(outline: str, chapter: int) -> tuple[str, str]:
    """The ``### 第 N 章`` block of the outline and the chapter's title (facts §10.7)."""
    block = outline_blocks(outline).get(chapter, "")
    heading = block.split("\n", 1)[0]
    title = re.sub(r"^###\s*第\s*\d+\s*章[:：]?\s*", "", heading).strip()
    return block.strip(), title


def _cast(project: Project, contract: dict, state: dict, outline: str) -> tuple[list[CastMember], list[dict]]:
    everyone = list(project.characters.only("slug", "display_name", "status", "profile", "contracts",
                                                    "aliases"))
    wanted = {str(key).lower() for key in ((contract.get("preconditions") or {}).get("character_states") or {})}
    chosen = [c for c in everyone if c.slug.lower() in wanted or c.display_name.lower() in wanted]
    named = bool(chosen)
    if not chosen:
        chosen = [c for c in everyone if c.status == "active"][:MAX_FALLBACK_CHARACTERS]
    states = state.get("characters", {})
    mentions = outline + json.dumps(contract, ensure_ascii=False)
    cast = [CastMember(c.slug, c.display_name, c.status, c.profile, c.contracts, states.get(c.slug, {}), named,
                       profile_for_writer(c.profile, named=named,
                                          mentioned=c.display_name in mentions or c.slug in mentions))
            for c in chosen]
    return cast, [{"slug": c.slug, "display_name": c.display_name, "status": c.status, "aliases": c.aliases}
                  for c in everyone]


def _memory(project: Project, chapter: int) -> tuple[list[tuple[int, str]], list[dict], int]:
    """Summaries since the last archive (seed 002) and the live memory levels above them, each held
    to the size of what it covers, all within one room that a young book fills with the summaries
    of its archived chapters (pipeline/chapter/memory.py)."""
    levels = list(ArchivedSummary.objects.filter(project=project, superseded=False, chapter_end__lt=chapter)
                  .order_by("chapter_start").values_list("level", "chapter_start", "chapter_end", "text"))
    archived_until = max((end for _level, _start, end, _text in levels), default=0)
    summaries = list(ChapterSummary.objects.filter(
        project=project, chapter__number__gt=max(0, archived_until - DETAIL_CHAPTERS_MAX), chapter__number__lt=chapter)
        .order_by("-chapter__number").values_list("chapter__number", "text")[:RECENT_WINDOW + DETAIL_CHAPTERS_MAX])
    recent = [row for row in summaries if row[0] > archived_until][:RECENT_WINDOW]
    earlier = [row for row in summaries if row[0] <= archived_until]
    shown, slots = memory_for_writer(levels, recent, earlier)
    memory = [{**slot.receipt(), "text": slot.text} for slot in slots]
    return shown, memory, archived_until


def previous_ending(project: Project, chapter: int) -> str:
    """The last ~800 characters of the chapter before, starting at a paragraph (else a sentence) so
    the writer reads whole lines; "" for the first chapter or when it is not written."""
    text = Chapter.objects.filter(project=project, number=chapter - 1).values_list("text", flat=True).first()
    if not text:
        return ""
    text = text.strip()
    if len(text) <= PREVIOUS_ENDING_CHARS:
        return text
    tail = text[-PREVIOUS_ENDING_CHARS:]
    for mark in ("\n", "。", "！", "？", "”"):
        cut = tail.find(mark)
        if 0 <= cut < PREVIOUS_ENDING_CHARS // 3:
            return tail[cut + 1:].strip()
    return tail.strip()


def _blacklist_words(blacklist: dict) -> list[str]:
    words = list(blacklist.get("words") or [])
    for entries in (blacklist.get("categories") or {}).values():
        words += [entry["word"] for entry in entries if isinstance(entry, dict) and entry.get("word")]
    return list(dict.fromkeys(words))


def chapter_context(project: Project, chapter: int) -> ChapterContext:
    contract_row = project.chapter_contracts.select_related("volume").get(chapter=chapter)
    contract, volume = contract_row.data, contract_row.volume
    block, title = outline_block(volume.outline, chapter)
    state_row = project.story_state
    cast, everyone = _cast(project, contract, state_row.data, block)
    storyline_id = contract.get("storyline_id") or "main-arc"
    memories = dict(project.storylines.values_list("slug", "memory"))
    schedule_lines = [s if isinstance(s, str) else s.get("storyline_id")
                      for s in (volume.storyline_schedule.get("active_storylines") or [])]
    recent, levels, _until = _memory(project, chapter)
    rules = list(project.world_rules.exclude(canon_status="deprecated").values(
        "rule_id", "rule", "constraint_type", "canon_status", "keywords"))
    blacklist = project.ai_blacklist or {}
    drift = project.style_drift if project.style_drift and project.style_drift.get("active") else None
    return ChapterContext(
        project=project, chapter=chapter, volume=volume.number, contract=contract,
        title=title or f"第{chapter}章", outline_block=block, storyline_id=storyline_id, cast=cast,
        all_characters=everyone, rules=rules,
        hard_rules=[f"{r['rule_id']}: {r['rule']}" for r in rules
                    if r["constraint_type"] == "hard" and r["canon_status"] == "established"],
        style_profile=project.style_profile or {}, blacklist=blacklist,
        blacklist_top=_blacklist_words(blacklist)[:BLACKLIST_TOP],
        drift_directives=[d["directive"] for d in (drift or {}).get("drifts", [])][:3],
        storyline_memory=memories.get(storyline_id, ""),
        adjacent_memories={s: memories[s] for s in schedule_lines if s and s != storyline_id and memories.get(s)},
        recent_summaries=recent, memory_levels=levels, recall=recall_returning(project, cast, chapter),
        foreshadowing_tasks=foreshadowing_tasks(project, contract, chapter, volume),
        state=state_row.data, state_version=state_row.state_version, place=outline_value(block, "Location") or "",
        open_facts=open_facts_for(project, chapter, [c.slug for c in cast], ((contract.get("postconditions") or {})
                                  .get("foreshadowing_updates") or {}), storyline=storyline_id),
        bible=book_bible(project), previous_ending=previous_ending(project, chapter),
    )


def all_blacklist_words(blacklist: dict) -> list[str]:
    return _blacklist_words(blacklist)


# --- one read per chapter run ---------------------------------------------------------------------
# The context is built when the draft stage runs and kept on the run (``PipelineRun.context``);
# summarize, refine, judge and maintain restore it from there instead of re-reading the story. That
# is also the right context for them: the one the chapter was drafted against. Nothing the pipeline
# writes before commit changes it, and a person's edit of the state meanwhile is caught at commit
# (stale base_state_version), which clears the snapshot so that summarize reads the new state.

SNAPSHOT_VERSION = 4  # bump when ChapterContext changes shape: older snapshots are then rebuilt
_TUPLE_LISTS = ("recent_summaries", "recall")


def context_snapshot(ctx: ChapterContext) -> dict[str, Any]:
    """Everything but the project row, as JSON."""
    data = {f.name: getattr(ctx, f.name) for f in fields(ctx) if f.name != "project"}
    data["cast"] = [asdict(member) for member in ctx.cast]
    return {"v": SNAPSHOT_VERSION, **data}


def context_restore(project: Project, snapshot: dict[str, Any]) -> ChapterContext | None:
    """The context kept by ``context_snapshot``; None when there is none or it is of another shape."""
    if not snapshot or snapshot.get("v") != SNAPSHOT_VERSION:
        return None
    data = {key: value for key, value in snapshot.items() if key != "v"}
    data["cast"] = [CastMember(**member) for member in data["cast"]]
    for name in _TUPLE_LISTS:
        data[name] = [tuple(item) for item in data[name]]
    return ChapterContext(project=project, **data)
