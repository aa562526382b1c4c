"""Which open facts of the ledger (issue #18) a chapter's writer is reminded of.

The open facts that bind the contract's cast or its foreshadowing, ranked by relevance and taken
whole, best first, until the budget is spent: a promise made 150 chapters ago by two people who
meet again in this chapter comes before an injury of someone who is only mentioned. The rank:

- each contract character the fact binds (the more of the cast, the closer to the scene);
- each foreshadowing item of the contract the fact relates to;
- the chapter's storyline;
- the kind: a death, a revealed identity or a secret contradicted is a worse continuity error
  than a forgotten injury;
- then the older fact first: recent ones are still in the summaries.

A fact that binds none of the cast and none of the contract's foreshadowing is left out, unless
it binds nobody at all and belongs to the chapter's storyline (a secret of the line itself).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipeline.jacquard.tokens import estimate_tokens
from projects.models import Project
from projects.selectors import story_facts_open

FACTS_BUDGET = 800  # estimator tokens of the writer's prompt given to open facts (about 15 facts)
KIND_WEIGHT = {"death": 3, "identity": 3, "secret": 3, "promise": 2, "debt": 2, "departure": 2, "injury": 1,
               "other": 0}
KIND_WORDS = {"promise": "承诺/誓言", "debt": "债", "injury": "伤", "death": "死亡", "departure": "离开",
              "identity": "身份", "secret": "秘密", "other": "事实"}


def fact_line(fact: dict[str, Any], names: dict[str, str]) -> str:
    """One fact as the prompt shows it: id, kind, chapter, who, what."""
    who = "、".join(names.get(slug, slug) for slug in fact["characters"])
    where = f"第{fact['chapter']}章" + (f"，{who}" if who else "")
    return f"[{fact['id']}] {KIND_WORDS.get(fact['kind'], fact['kind'])}（{where}）：{fact['text']}"


def _score(fact, cast: set[str], foreshadowing: set[str], storyline: str) -> int | None:
    bound = len(cast.intersection(fact.characters))
    related = len(foreshadowing.intersection(fact.foreshadowing))
    same_line = bool(storyline) and fact.storyline == storyline
    if not bound and not related and not (same_line and not fact.characters):
        return None
    return bound * 10 + related * 8 + same_line * 2 + KIND_WEIGHT.get(fact.kind, 0)


def open_facts_for(project: Project, chapter: int, cast_slugs: Iterable[str], foreshadowing_ids: Iterable[str],
                   budget: int = FACTS_BUDGET, *, storyline: str = "") -> list[dict[str, Any]]:
    """The open facts to remind the writer of chapter ``chapter`` of, best first, each with its
    prompt ``line``; their lines together stay within ``budget`` estimator tokens. Two queries."""
    cast, foreshadowing = set(cast_slugs), set(foreshadowing_ids)
    ranked = []
    for fact in story_facts_open(project=project, before_chapter=chapter):
        score = _score(fact, cast, foreshadowing, storyline)
        if score is not None:
            ranked.append((-score, fact.chapter, fact.fact_id, fact))
    ranked.sort(key=lambda entry: entry[:3])
    wanted = {slug for *_rank, fact in ranked for slug in fact.characters}
    names = dict(project.characters.filter(slug__in=wanted).values_list("slug", "display_name")) if wanted else {}
    chosen, spent = [], 0
    for *_rank, fact in ranked:
        item = {"id": fact.fact_id, "kind": fact.kind, "chapter": fact.chapter, "characters": list(fact.characters),
                "storyline": fact.storyline, "foreshadowing": list(fact.foreshadowing), "text": fact.text}
        item["line"] = fact_line(item, names)
        cost = estimate_tokens(item["line"]) + 1
        if spent + cost > budget:
            continue  # a shorter, lower-ranked fact may still fit
        chosen.append(item)
        spent += cost
    return chosen
