"""The deterministic checks of one staged chapter and the evidence the judge reads (#18), the same
on every path: the pipeline's judge stage and ``novel import-step``'s judge step.

``chapter_checks`` runs ``pipeline.chapter.prejudge_checks.run_checks`` with the story inputs (roster with aliases,
state, place, ledger, rules). ``judge_evidence`` is what the judge's prompt shows beside the
chapter: the cast's state, the roster's names and aliases, the ledger status of the foreshadowing
the chapter touches, and the check results as Chinese sentences.
"""
from __future__ import annotations

from typing import Any

from pipeline.chapter.prejudge_checks import ChecksReport, run_checks
from pipeline.chapter.context import ChapterContext
from pipeline.chapter.story_checks.project_inputs import project_story_inputs, touched_foreshadowing
from projects.platforms.limits import platform_limits

STATUS_WORDS = {"planted": "已埋设", "advanced": "推进中", "resolved": "已回收"}


def _ops(delta: Any) -> list[dict]:
    ops = delta.get("ops") if isinstance(delta, dict) else None
    return [op for op in ops if isinstance(op, dict)] if isinstance(ops, list) else []


def chapter_checks(ctx: ChapterContext, delta: Any, text: str) -> ChecksReport:
    ops = _ops(delta)
    rules = [{"id": r["rule_id"], **r} for r in ctx.rules]
    story = project_story_inputs(ctx.project, characters=ctx.all_characters, state=ctx.state, place=ctx.place,
                                 delta_ops=ops, rules=rules, contract=ctx.contract)
    return run_checks(
        text, blacklist=ctx.blacklist, target_chars=platform_limits(ctx.project)["target_chars"],
        characters=ctx.all_characters,
        contract_slugs=[c.slug for c in ctx.cast], contract_updates=ctx.foreshadowing_updates,
        delta_ops=ops, objectives=ctx.objectives, rules=rules, story=story,
    )


def _touched_ids(ctx: ChapterContext, ops: list[dict]) -> list[str]:
    ids = [str(op.get("path")) for op in ops if op.get("op") == "foreshadow" and op.get("path")]
    ids += list(ctx.foreshadowing_updates)
    ids += [str(o.get("target")) for o in ctx.objectives
            if isinstance(o, dict) and o.get("type") == "foreshadowing" and o.get("target")]
    ids += [str(t.get("id")) for t in ctx.foreshadowing_tasks if isinstance(t, dict) and t.get("id")]
    return list(dict.fromkeys(ids))


def _cast_state(ctx: ChapterContext) -> list[dict[str, Any]]:
    states = ctx.state.get("characters") if isinstance(ctx.state, dict) else None
    states = states if isinstance(states, dict) else {}
    out = []
    for member in ctx.cast:
        entry = states.get(member.slug) if isinstance(states.get(member.slug), dict) else {}
        inventory = entry.get("inventory") if isinstance(entry.get("inventory"), list) else []
        relationships = entry.get("relationships") if isinstance(entry.get("relationships"), dict) else {}
        out.append({"name": member.display_name, "location": str(entry.get("location") or "未记录"),
                    "inventory": [str(i) for i in inventory], "relationships": relationships,
                    "status": str(entry.get("status") or "")})
    return out


def _roster(ctx: ChapterContext) -> list[str]:
    lines = []
    for c in ctx.all_characters:
        aliases = [a for a in c.get("aliases") or [] if isinstance(a, str)]
        line = c.get("display_name") or c.get("slug") or ""
        if aliases:
            line += f"（又称：{'、'.join(aliases)}）"
        if c.get("status") == "retired":
            line += "【已退场】"
        lines.append(line)
    return lines


def judge_evidence(ctx: ChapterContext, delta: Any, checks: ChecksReport) -> dict[str, Any]:
    """Plain JSON for the judge's prompt and the offline judge's slice, in Chinese."""
    ledger = [{"id": row["id"], "status": STATUS_WORDS.get(row.get("status"), row.get("status")),
               "description": row.get("description") or "", "last_updated_chapter": row.get("last_updated_chapter")}
              for row in touched_foreshadowing(ctx.project, _touched_ids(ctx, _ops(delta)))]
    return {
        "cast_state": _cast_state(ctx),
        "roster": _roster(ctx),
        "place": ctx.place or "",
        "foreshadowing_ledger": ledger,
        # the ledger's open facts about this chapter's cast and foreshadowing (#18): not to be contradicted
        "open_facts": [fact["line"] for fact in getattr(ctx, "open_facts", []) or [] if fact.get("line")],
        "violations": list(checks.violations),
        "suspicions": list(checks.suspicions),
        "warnings": list(checks.warnings),
    }


def staged_chapter_checks(project, number: int, kept_context: dict | None, delta: Any, text: str) -> ChecksReport:
    """The checks for a chapter staged outside the pipeline's own stages (``novel import-step``):
    the run's kept context when there is one, else the chapter's context read now; a chapter with
    no contract still gets the story checks against the roster, state and ledger."""
    from pipeline.chapter.context import chapter_context, context_restore
    from projects.models import ChapterContract

    ctx = context_restore(project, kept_context or {})
    if ctx is None:
        try:
            ctx = chapter_context(project, number)
        except ChapterContract.DoesNotExist:
            ctx = None
    if ctx is not None:
        return chapter_checks(ctx, delta, text)
    characters = [{"slug": c.slug, "display_name": c.display_name, "status": c.status, "aliases": c.aliases}
                  for c in project.characters.only("slug", "display_name", "status", "aliases")]
    state = getattr(getattr(project, "story_state", None), "data", None) or {}
    rules = [{"id": r["rule_id"], **r} for r in project.world_rules.exclude(canon_status="deprecated").values(
        "rule_id", "rule", "constraint_type", "canon_status", "keywords")]
    ops = _ops(delta)
    story = project_story_inputs(project, characters=characters, state=state, place="", delta_ops=ops, rules=rules)
    return run_checks(text, blacklist=project.ai_blacklist or {}, characters=characters, delta_ops=ops, rules=rules,
                      story=story)
