"""The facts ledger (issue #18): lasting facts of the story, kept per project.

A person adds or edits a fact (admin, web pages) through ``story_fact_create`` / ``story_fact_update``:
validated, version-checked, recorded by django-simple-history. The pipeline's commit stores the
facts the summarizer found and closes the ones the chapter fulfilled or cancelled
(``story_facts_apply_commit``, inside the commit's transaction), and a rollback of that chapter
takes both back (``story_facts_undo_chapter``).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext as _

from projects.errors import InvalidData
from projects.json_validation import json_issues
from projects.lock_objects import project_lock
from projects.models import Project, StoryFact
from projects.models.facts import FactOrigin
from projects.services.editing import full_clean_or_raise, story_object_create, story_object_update

# What a person may set; ``origin`` is the system's (it decides what a rollback takes back).
HUMAN_FIELDS = ("kind", "text", "chapter", "characters", "storyline", "foreshadowing", "status",
                "closed_chapter", "closing_note")
FACT_ID_RE = re.compile(r"^fact-(\d+)$")
CLOSING_STATUSES = ("fulfilled", "cancelled")


def story_fact_next_id(project: Project, taken: Iterable[str] = ()) -> str:
    """``fact-NNN``: one more than the highest number in use (never reused while the row exists)."""
    ids = list(project.facts.filter(fact_id__startswith="fact-").values_list("fact_id", flat=True)) + list(taken)
    numbers = [int(m[1]) for m in map(FACT_ID_RE.match, ids) if m]
    return f"fact-{max(numbers, default=0) + 1:03d}"


def story_fact_references_check(project: Project, *, characters: list[str], storyline: str) -> None:
    """Cross-row rules: the characters and the storyline must exist in the project."""
    if not isinstance(characters, list) or not all(isinstance(slug, str) for slug in characters):
        raise InvalidData("characters: a list of character ids", extra={"field": "characters"})
    known = set(project.characters.filter(slug__in=characters).values_list("slug", flat=True))
    unknown = [slug for slug in characters if slug not in known]
    if unknown:
        raise InvalidData(_("Unknown characters: %(names)s.") % {"names": ", ".join(unknown)},
                          extra={"field": "characters", "unknown": unknown})
    if storyline and not project.storylines.filter(slug=storyline).exists():
        raise InvalidData(_("Unknown storyline: %(line)s.") % {"line": storyline}, extra={"field": "storyline"})


@transaction.atomic
def story_fact_create(*, project: Project, editor: AbstractBaseUser | None, fact_id: str = "",
                      origin: str = FactOrigin.PERSON, **values: Any) -> StoryFact:
    """A new fact (``fact_id`` given, or the next ``fact-NNN``). Takes the project lock."""
    unknown = set(values) - set(HUMAN_FIELDS)
    if unknown:
        raise InvalidData(f"not a field of a fact: {', '.join(sorted(unknown))}")
    project_lock(project.pk)
    fact_id = fact_id or story_fact_next_id(project)
    if project.facts.filter(fact_id=fact_id).exists():
        raise InvalidData(_("There is already a fact %(id)s.") % {"id": fact_id}, extra={"field": "fact_id"})
    story_fact_references_check(project, characters=values.get("characters") or [],
                      storyline=values.get("storyline") or "")
    return story_object_create(instance=StoryFact(project=project, fact_id=fact_id, origin=origin, **values),
                               editor=editor)


@transaction.atomic
def story_fact_update(*, fact: StoryFact, editor: AbstractBaseUser | None, base_version: int,
                      **changes: Any) -> StoryFact:
    """Change a fact if nobody saved it since ``base_version`` (``VersionConflict`` otherwise).
    Reopening a fact clears its closing chapter. Takes the project lock, then the row lock."""
    unknown = set(changes) - set(HUMAN_FIELDS)
    if unknown:
        raise InvalidData(f"not editable: {', '.join(sorted(unknown))}")
    if changes.get("status") == "open":
        changes["closed_chapter"] = None
    project = Project.objects.get(pk=fact.project_id)
    story_fact_references_check(project, characters=changes.get("characters", fact.characters) or [],
                      storyline=changes.get("storyline", fact.storyline) or "")
    return story_object_update(obj=fact, editor=editor, base_version=base_version, **changes)


# --- the pipeline's side: one chapter's commit, and its rollback ---------------------------------


@dataclass
class FactsCommitted:
    created: list[StoryFact] = field(default_factory=list)
    closed: list[StoryFact] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left out, and why


def story_facts_apply_commit(*, project: Project, chapter: int, storyline_slug: str,
                             facts: dict[str, Any] | None) -> FactsCommitted:
    """Store the chapter's new facts (``facts["new"]``: kind, text, characters, storyline,
    foreshadowing) and close the open facts it fulfilled or cancelled (``facts["closed"]``: id,
    status, note). Inside the commit's transaction; the caller holds the project lock.

    The summarizer's output was checked by the stage; what no longer holds at commit (a character
    deleted meanwhile, a fact closed by hand) is left out with a note, never a failed commit."""
    result = FactsCommitted()
    if not facts:
        return result
    characters = set(project.characters.values_list("slug", flat=True))
    storylines = set(project.storylines.values_list("slug", flat=True))
    taken: list[str] = []
    for item in facts.get("new") or []:
        slugs = [s for s in item.get("characters") or [] if s in characters]
        line = item.get("storyline") or storyline_slug
        fact = StoryFact(project=project, fact_id=story_fact_next_id(project, taken), kind=item.get("kind"),
                         text=(item.get("text") or "").strip(), chapter=chapter, characters=slugs,
                         storyline=line if line in storylines else "",
                         foreshadowing=list(item.get("foreshadowing") or []), origin=FactOrigin.PIPELINE)
        try:
            full_clean_or_raise(fact)
        except InvalidData as exc:
            result.notes.append(f"new fact left out ({exc.message})")
            continue
        fact.save()
        taken.append(fact.fact_id)
        result.created.append(fact)
    wanted = {c.get("id"): c for c in facts.get("closed") or [] if isinstance(c, dict)}
    rows = (StoryFact.objects.select_for_update(of=("self",)).filter(project=project, fact_id__in=list(wanted))
            .order_by("pk"))
    found = set()
    for fact in rows:
        found.add(fact.fact_id)
        closing = wanted[fact.fact_id]
        if fact.status != "open" or fact.chapter >= chapter or closing.get("status") not in CLOSING_STATUSES:
            result.notes.append(f"{fact.fact_id} not closed (it is {fact.status}, from chapter {fact.chapter})")
            continue
        fact.status, fact.closed_chapter = closing["status"], chapter
        fact.closing_note = (closing.get("note") or "")[:300]
        fact.version += 1
        fact._history_user = None
        fact.save()
        result.closed.append(fact)
    result.notes += [f"{fid} is not a fact of this book" for fid in wanted if fid not in found]
    return result


def story_facts_undo_chapter(*, project: Project, chapter: int) -> None:
    """Take back what chapter ``chapter``'s commit did to the ledger: the facts it added go, the
    facts it closed are open again. The caller (the rollback) holds the project lock."""
    StoryFact.objects.filter(project=project, chapter=chapter, origin=FactOrigin.PIPELINE).delete()
    for fact in StoryFact.objects.select_for_update(of=("self",)).filter(project=project, closed_chapter=chapter)\
            .order_by("pk"):
        fact.status, fact.closed_chapter, fact.closing_note = "open", None, ""
        fact.version += 1
        fact._history_user = None
        fact.save()


# --- the tree's side: novelsite/facts.json -------------------------------------------------------


def story_fact_as_json(fact: StoryFact) -> dict[str, Any]:
    return {"id": fact.fact_id, "kind": fact.kind, "text": fact.text, "chapter": fact.chapter,
            "characters": list(fact.characters), "storyline": fact.storyline,
            "foreshadowing": list(fact.foreshadowing), "status": fact.status,
            "closed_chapter": fact.closed_chapter, "closing_note": fact.closing_note, "origin": fact.origin}


def story_facts_file_issues(body: Any) -> list[str]:
    """Everything wrong with a facts file, before anything is written (empty when it is valid)."""
    issues = [str(issue) for issue in json_issues("STORY_FACTS_FILE", body)]
    if issues:
        return issues
    seen: set[str] = set()
    for index, item in enumerate(body["facts"]):
        if item["id"] in seen:
            issues.append(f"$.facts[{index}]: the id {item['id']} appears twice")
        seen.add(item["id"])
        closed = item.get("closed_chapter")
        if (item["status"] == "open") != (closed is None):
            issues.append(f"$.facts[{index}]: an open fact has no closed_chapter, a closed one needs it")
        elif closed is not None and closed < item["chapter"]:
            issues.append(f"$.facts[{index}]: closed_chapter {closed} is before chapter {item['chapter']}")
    return issues


def story_facts_from_json(project: Project, items: list[dict[str, Any]]) -> list[StoryFact]:
    """Rows for the facts of a checked file (``story_facts_file_issues``), not yet saved; bindings
    to characters the tree does not have are dropped, as the summarizer's are."""
    characters = set(project.characters.values_list("slug", flat=True))
    return [StoryFact(project=project, fact_id=item["id"], kind=item["kind"], text=item["text"],
                      chapter=item["chapter"], characters=[s for s in item.get("characters") or [] if s in characters],
                      storyline=item.get("storyline") or "", foreshadowing=list(item.get("foreshadowing") or []),
                      status=item["status"], closed_chapter=item.get("closed_chapter"),
                      closing_note=item.get("closing_note") or "", origin=item.get("origin") or FactOrigin.PERSON)
            for item in items]
