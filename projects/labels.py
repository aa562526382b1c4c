"""Human words for the codes the story and the pipeline speak in (states, stages, step ids, gate
topics, decisions, score dimensions, genres, platforms, roles …): the one place that turns a code
into a translated label for the web pages. The API, the CLI and the file tree keep the codes.

A *kind* names one vocabulary (``"state"``, ``"dimension"``, ``"step"`` …). Each kind has a table
of fixed codes and, for codes that carry numbers (``chapter:004:draft``, ``chapter.006.judge_pause``),
pattern translators that build the label. ``projects`` never imports ``pipeline``: the pipeline's
vocabulary (run kinds, step ids, gate topics …) is registered by ``pipeline/web/labels.py`` from
``PipelineConfig.ready()``. An unknown code is shown as it is (``label`` never fails).

Templates use the filters in ``projects/templatetags/words.py``: ``{{ code|label:"state" }}`` for
the text, ``{{ code|coded:"state" }}`` for the text with the code in ``title`` and ``data-code``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from projects.schemas import SCORE_DIMENSIONS
from projects.vocabulary import OrchestratorState, PipelineStage

Label = str | Promise
PatternLabel = Callable[[str], str | None]  # a code -> its label, or None when the pattern does not fit

_TABLES: dict[str, dict[str, Label]] = {}
_PATTERNS: dict[str, list[PatternLabel]] = {}


def labels_register(kind: str, table: Mapping[str, Label]) -> None:
    """Add fixed ``code -> label`` pairs to ``kind`` (labels are lazy: translated when shown)."""
    _TABLES.setdefault(kind, {}).update(table)


def label_pattern_register(kind: str, translate: PatternLabel) -> None:
    """Add a translator for the codes of ``kind`` that no table lists (tried in order)."""
    patterns = _PATTERNS.setdefault(kind, [])
    if translate not in patterns:
        patterns.append(translate)


def label(kind: str, code: Any) -> str:
    """The label of ``code`` in the active language; the code itself when nothing knows it."""
    if code is None or code == "":
        return ""
    text = str(code)
    known = _TABLES.get(kind, {}).get(text)
    if known is not None:
        return str(known)
    for translate in _PATTERNS.get(kind, ()):
        found = translate(text)
        if found:
            return found
    return text


def label_is_known(kind: str, code: Any) -> bool:
    return label(kind, code) != str(code)


def yes_no(value: bool) -> str:
    return gettext("yes") if value else gettext("no")


# --- the story's vocabulary ----------------------------------------------------------------------

labels_register("state", {  # facts §3 orchestrator states
    OrchestratorState.INIT: _("Just created"),
    OrchestratorState.QUICK_START: _("Quick start"),
    OrchestratorState.VOL_PLANNING: _("Planning a volume"),
    OrchestratorState.WRITING: _("Writing"),
    OrchestratorState.CHAPTER_REWRITE: _("Rewriting a chapter"),
    OrchestratorState.VOL_REVIEW: _("Reviewing a volume"),
    OrchestratorState.ERROR_RETRY: _("Stopped by an error"),
})

labels_register("stage", {  # seed 000 §9.2 pipeline_stage
    PipelineStage.DRAFTING: _("drafting"),
    PipelineStage.DRAFTED: _("drafted"),
    PipelineStage.REFINED: _("polished"),
    PipelineStage.JUDGED: _("judged"),
    PipelineStage.REVISING: _("revising"),
    PipelineStage.COMMITTED: _("committed"),
})

labels_register("dimension", {  # facts §10.11, projects.schemas.SCORE_DIMENSIONS, plus promotion hooks
    "plot_logic": _("Plot logic"),
    "character": _("Characters"),
    "immersion": _("Immersion"),
    "foreshadowing": _("Foreshadowing"),
    "pacing": _("Pacing"),
    "style_naturalness": _("Natural style"),
    "emotional_impact": _("Emotional impact"),
    "storyline_coherence": _("Storyline coherence"),
    "hook_strength": _("Hook strength"),
})
assert set(SCORE_DIMENSIONS) <= set(_TABLES["dimension"]), "every score dimension needs a label"

labels_register("genre", {  # the quick start's genre question (pipeline/book/quickstart.py GENRES)
    "xuanhuan": _("Xuanhuan (fantasy)"),
    "xianxia": _("Xianxia (immortals)"),
    "dushi": _("Urban"),
    "lishi": _("Historical"),
    "kehuan": _("Science fiction"),
    "scifi": _("Science fiction"),
    "yanqing": _("Romance"),
    "xuanyi": _("Mystery"),
    "wuxia": _("Wuxia (martial arts)"),
    "qihuan": _("Western fantasy"),
    "youxi": _("Games"),
    "junshi": _("Military"),
})

labels_register("platform", {  # where the novel is published, and where its promotion posts go
    "qidian": _("Qidian"),
    "fanqie": _("Fanqie"),
    "jinjiang": _("Jinjiang"),
    "general": _("General"),
    "xiaohongshu": _("Xiaohongshu"),
    "wechat": _("WeChat"),
    "twitter": _("Twitter / X"),
})

labels_register("hook_type", {  # the chapter-end hook types of the platform profiles (facts §10.11)
    "question": _("Open question"),
    "threat_reveal": _("Threat revealed"),
    "twist_reveal": _("Twist"),
    "emotional_cliff": _("Emotional cliffhanger"),
    "next_objective": _("Next goal"),
})

labels_register("role", {
    "owner": _("Owner"), "editor": _("Editor"), "reviewer": _("Reviewer"), "viewer": _("Viewer"),
})

labels_register("gate_decision", {  # facts §11, projects.schemas.GATE_DECISIONS
    "pass": _("passed"),
    "polish": _("one more polish"),
    "revise": _("revise"),
    "pause_for_user": _("paused for a person"),
    "pause_for_user_force_rewrite": _("paused: rewrite advised"),
    "force_passed": _("passed after revisions"),
})

labels_register("recommendation", {  # the judge's recommendation (facts §10.11)
    "pass": _("pass"), "polish": _("polish"), "revise": _("revise"), "review": _("needs a person"),
    "rewrite": _("rewrite"),
})

labels_register("constraint", {"hard": _("hard rule"), "soft": _("soft rule")})
labels_register("canon", {"established": _("established"), "planned": _("planned"), "deprecated": _("deprecated")})
labels_register("character_status", {"active": _("active"), "retired": _("retired")})
labels_register("storyline_status", {"active": _("active"), "dormant": _("dormant"), "planned": _("planned")})
labels_register("storyline_scope", {"novel": _("whole novel"), "multi_volume": _("several volumes"),
                                    "single_volume": _("one volume")})
labels_register("storyline_type", {  # facts §10.4's examples; other types show as written
    "main_arc": _("main arc"), "faction_conflict": _("faction conflict"), "romance": _("romance"),
    "mystery": _("mystery"), "growth": _("growth"), "side_arc": _("side arc"), "conspiracy": _("conspiracy"),
})
labels_register("foreshadow_scope", {"short": _("short"), "medium": _("medium"), "long": _("long")})
labels_register("foreshadow_status", {"planted": _("planted"), "advanced": _("advanced"), "resolved": _("resolved")})
labels_register("fact_kind", {  # the facts ledger (issue #18)
    "promise": _("promise or oath"), "debt": _("debt"), "injury": _("injury"), "death": _("death"),
    "departure": _("departure"), "identity": _("revealed identity"), "secret": _("secret"), "other": _("other fact")})
labels_register("fact_status", {"open": _("open"), "fulfilled": _("fulfilled"), "cancelled": _("cancelled")})
labels_register("change_source", {"pipeline": _("pipeline"), "human": _("a person"), "import": _("import"),
                                  "rollback": _("rollback")})
labels_register("contract_type", {  # facts §10.2: the kinds of a character's L2 contracts
    "capability": _("capability"), "personality": _("personality"), "relationship": _("relationship"),
    "speech": _("speech")})
labels_register("volume_status", {"writing": _("writing"), "reviewing": _("reviewing"), "closed": _("closed")})
labels_register("objective_type", {"plot": _("plot"), "character": _("character"),
                                   "foreshadowing": _("foreshadowing"), "world": _("world"),
                                   "emotion": _("emotion")})
labels_register("excitement", {"setup": _("setup"), "climax": _("climax"), "twist": _("twist"),
                               "payoff": _("payoff"), "reversal": _("reversal"), "cliffhanger": _("cliffhanger")})
labels_register("length", {"ok": _("within the target"), "too_short": _("too short"), "too_long": _("too long")})

labels_register("field", {  # keys of the JSON documents shown as tables and lists (json_display)
    # story state (seed 000 §9.1)
    "characters": _("characters"), "display_name": _("name"), "location": _("location"),
    "emotional_state": _("mood"), "relationships": _("relationships"), "world_state": _("world"),
    "time_marker": _("time"), "inventory": _("items"), "items": _("items"), "status": _("status"),
    "abilities": _("abilities"), "goals": _("goals"), "schema_version": _("schema version"),
    "state_version": _("state version"), "last_updated_chapter": _("last updated in chapter"),
    "active_foreshadowing": _("open foreshadowing"), "factions": _("factions"),
    # storyline schedule (facts §10.6)
    "volume": _("volume"), "volume_theme": _("theme of the volume"), "active_storylines": _("active storylines"),
    "storyline_id": _("storyline"), "volume_role": _("role in the volume"), "target_chapters": _("chapters"),
    "arc_goal": _("goal of the arc"), "interleaving_pattern": _("interleaving"), "strategy": _("strategy"),
    "primary_max_consecutive": _("main line at most in a row"),
    "secondary_min_appearance": _("side lines at least"), "seasoning_placement": _("seasoning"),
    "convergence_events": _("convergences"), "chapter_range": _("chapters"),
    "involved_storylines": _("storylines"), "trigger": _("trigger"), "aftermath": _("aftermath"),
    "dormant_storylines": _("dormant storylines"), "newly_activated": _("newly activated"),
    # chapter contracts (facts §10.7)
    "chapter": _("chapter"), "excitement_type": _("kind of excitement"), "preconditions": _("before"),
    "character_states": _("characters"), "required_world_rules": _("world rules that apply"),
    "objectives": _("objectives"), "id": _("id"), "type": _("type"), "required": _("required"),
    "description": _("description"), "target": _("target"), "postconditions": _("after"),
    "state_changes": _("state changes"), "foreshadowing_updates": _("foreshadowing updates"),
    "acceptance_criteria": _("acceptance criteria"), "title": _("title"), "summary": _("summary"),
    # foreshadowing plan
    "scope": _("scope"), "target_resolve_range": _("resolve in chapters"),
    # checks and evaluations
    "word": _("word"), "count": _("count"), "per_chapter_max": _("at most per chapter"),
    "rule_id": _("rule"), "keyword": _("keyword"), "rule": _("rule"), "slug": _("id"),
    "expected": _("expected"), "actual": _("actual"), "objective_id": _("objective"),
    "evidence": _("evidence"), "reason": _("reason"), "score": _("score"), "weight": _("weight"),
    "instruction": _("instruction"), "constraint_type": _("kind"), "category": _("category"),
    "violation": _("violation"), "severity": _("severity"), "confidence": _("confidence"),
    "contract_id": _("contract"), "detail": _("detail"), "suggestion": _("suggestion"),
})
labels_register("metric", {  # facts §13 style metrics
    "avg_sentence_length": _("average sentence length"), "dialogue_ratio": _("dialogue ratio"),
    "sentence_length_std_dev": _("spread of sentence length"), "paragraph_length": _("paragraph length"),
    "avg_paragraph_length": _("average paragraph length"),
})
labels_register("contract_level", {  # facts §10.11 contract_verification
    "l1_checks": _("World rules (L1)"), "l2_checks": _("Character contracts (L2)"),
    "l3_checks": _("Chapter contract (L3)"), "ls_checks": _("Storyline rules (LS)"),
})
labels_register("density", {"low": _("few"), "medium": _("some"), "high": _("many")})
labels_register("world_doc", {"geography": _("Geography"), "history": _("History"), "rules": _("Rules"),
                              "factions": _("Factions"), "culture": _("Culture"), "power_system": _("Power system")})
labels_register("check_status", {  # a contract check's status (facts §10.11), a step's status
    "pass": _("passed"), "passed": _("passed"), "fail": _("violated"), "failed": _("violated"),
    "violation": _("violated"), "violated": _("violated"), "warning": _("warning"), "warn": _("warning"),
    "unclear": _("unclear"), "skip": _("skipped"), "skipped": _("skipped"), "not_applicable": _("does not apply"),
})
labels_register("confidence", {"high": pgettext_lazy("confidence", "high"),
                               "medium": pgettext_lazy("confidence", "medium"),
                               "low": pgettext_lazy("confidence", "low")})
