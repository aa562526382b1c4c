"""World pages: characters, storylines, rules, world documents, the foreshadowing ledger,
relationships (a table and a graph) and the story state (current, or at any chapter replayed from
the changelog). Each section links to its editing page."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from projects.models import Character, Foreshadowing, StateChange, Storyline, WorldDoc, WorldRule
from projects.query_params import query_int
from projects.relationship_graph import relationship_graph_svg
from projects.selectors import character_names, foreshadowing_flags, story_state_at_chapter
from projects.state_ops import PatchError
from projects.views.access import page_context, project_access
from projects.views.world_text import folded_texts


@login_required
@require_safe
def world_view(request, slug: str):
    access = project_access(request, slug)
    project = access.project
    characters = Character.objects.filter(project=project).order_by("status", "slug")
    docs = WorldDoc.objects.filter(project=project).order_by("name")
    flags = foreshadowing_flags(project=project)
    ledger = [{"row": f, "overdue": f.fid in flags.overdue, "dormant": flags.dormant.get(f.fid)}
              for f in Foreshadowing.objects.filter(project=project).order_by("fid")]
    names = character_names(project=project)
    return render(request, "projects/world.html", page_context(
        access, characters=folded_texts(characters, "profile"), docs=folded_texts(docs, "content"), ledger=ledger,
        storylines=Storyline.objects.filter(project=project).order_by("position", "slug"),
        rules=WorldRule.objects.filter(project=project).order_by("rule_id"),
        relationships=relationship_rows(project.relationships, names=names),
        relationship_graph=relationship_graph_svg(project.relationships, names=names),
        relationships_raw=project.relationships or None))


def relationship_rows(data, *, names: dict[str, str]) -> list[tuple[str, str, object]]:
    """``{who: {whom: value}}`` as (who, whom, value) rows with display names; another shape as one
    row per top-level key (the value shown as a list)."""
    rows = []
    for who, towards in (data or {}).items() if isinstance(data, dict) else []:
        if isinstance(towards, dict):
            rows += [(names.get(who, who), names.get(whom, whom), value) for whom, value in towards.items()]
        else:
            rows.append((names.get(who, who), "", towards))
    return rows


@login_required
@require_safe
def state_view(request, slug: str):
    """The story state now, or after chapter ``?chapter=N`` (replayed from the changelog)."""
    access = project_access(request, slug)
    project = access.project
    chapter = query_int(request.GET, "chapter")  # a malformed number: 404 (NovelsiteErrorMiddleware)
    error = ""
    if chapter is not None:
        try:
            state = story_state_at_chapter(project=project, chapter=chapter)
        except PatchError as exc:  # an imported changelog may not replay from an empty state: say so
            state, error = {}, _("The changelog cannot be replayed to this chapter: %(error)s") % {"error": exc}
    else:
        chapter = ""
        story_state = getattr(project, "story_state", None)
        state = story_state.data if story_state else {}
    changes = StateChange.objects.filter(project=project).order_by("-state_version").only(
        "state_version", "chapter", "source", "created_at")[:30]
    return render(request, "projects/state.html", page_context(
        access, state=state, names=character_names(project=project), chapter=chapter, error=error, changes=changes))
