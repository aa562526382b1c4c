"""Reads of story data, scoped by project and membership."""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet

from projects.errors import NotFound, PermissionDenied
from projects.models import Character, Foreshadowing, Membership, Project
from projects.permissions import Action, role_allows, roles_allowing

# facts §12: dormancy thresholds per scope, shifted by the genre's drive type (minimum 1)
DORMANCY_THRESHOLDS = {"short": 6, "medium": 12, "long": 24}
DORMANCY_SHIFT = {"suspense": -3, "plot": -2, "character": -1, "slice_of_life": 2}


def projects_for_user(*, user: AbstractBaseUser, action: Action = Action.READ) -> QuerySet[Project]:
    """Projects where ``user`` has a role allowing ``action`` (superusers see all)."""
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(
        memberships__user=user, memberships__role__in=roles_allowing(action)
    ).distinct()


def membership_role(*, user: AbstractBaseUser, project: Project) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return "owner"
    return Membership.objects.filter(user=user, project=project).values_list("role", flat=True).first()


def project_get_for_member(*, user: AbstractBaseUser, slug: str, action: Action = Action.READ) -> Project:
    """The project if ``user`` may do ``action`` in it. A non-member gets NotFound, never a hint
    that the project exists."""
    project = Project.objects.filter(slug=slug).first()
    role = membership_role(user=user, project=project) if project else None
    if project is None or role is None:
        raise NotFound("No such project.")
    if not role_allows(role, action):
        raise PermissionDenied()
    return project


@dataclass(frozen=True)
class DormantItem:
    foreshadowing: Foreshadowing
    chapters_since_last_update: int
    dormancy_threshold: int


def dormancy_threshold(scope: str, genre_drive_type: str = "") -> int:
    return max(1, DORMANCY_THRESHOLDS[scope] + DORMANCY_SHIFT.get(genre_drive_type, 0))


def foreshadowing_overdue(*, project: Project, as_of: int | None = None) -> QuerySet[Foreshadowing]:
    """facts §10.9: short scope, not resolved, and the book is past the end of its range."""
    as_of = project.last_completed_chapter if as_of is None else as_of
    return project.foreshadowing.filter(scope="short", target_resolve_end__lt=as_of).exclude(status="resolved")


def foreshadowing_dormant(*, project: Project, as_of: int | None = None) -> list[DormantItem]:
    """facts §12: unresolved and silent for at least the scope's threshold, longest silence first,
    then scope, then id."""
    as_of = project.last_completed_chapter if as_of is None else as_of
    return _dormant(project, project.foreshadowing.exclude(status="resolved").order_by("fid"), as_of)


def _dormant(project: Project, unresolved, as_of: int) -> list[DormantItem]:
    items = []
    for row in unresolved:
        last = row.last_updated_chapter or row.planted_chapter or 0
        threshold = dormancy_threshold(row.scope, project.genre_drive_type)
        if as_of - last >= threshold:
            items.append(DormantItem(row, as_of - last, threshold))
    scope_order = {"short": 0, "medium": 1, "long": 2}
    items.sort(key=lambda d: (-d.chapters_since_last_update, scope_order[d.foreshadowing.scope], d.foreshadowing.fid))
    return items


@dataclass(frozen=True)
class ForeshadowingAttention:
    overdue: list[Foreshadowing]  # as foreshadowing_overdue, by id
    dormant: list[DormantItem]  # as foreshadowing_dormant


def foreshadowing_attention(*, project: Project, as_of: int) -> ForeshadowingAttention:
    """``foreshadowing_overdue`` and ``foreshadowing_dormant`` as of ``as_of`` from one read of the
    unresolved rows (the writer's context asks for both before every chapter)."""
    unresolved = list(project.foreshadowing.exclude(status="resolved").order_by("fid"))
    overdue = [row for row in unresolved if row.scope == "short" and row.target_resolve_end is not None
               and row.target_resolve_end < as_of]
    return ForeshadowingAttention(overdue, _dormant(project, unresolved, as_of))


def unresolved_foreshadowing(project: Project) -> QuerySet[Foreshadowing]:
    return project.foreshadowing.filter(~Q(status="resolved"))


@dataclass(frozen=True)
class ProjectStatus:
    """What ``novel status`` shows: the checkpoint and the size of the story so far."""

    project: Project
    checkpoint: dict
    chapters: int
    words: int
    characters_active: int
    state_version: int
    foreshadowing_open: int
    foreshadowing_overdue: list[str]
    foreshadowing_dormant: list[str]


def project_status(*, project: Project) -> ProjectStatus:
    from django.db.models import Count, Sum

    from projects.checkpoint import checkpoint_of

    chapter_totals = project.chapters.aggregate(n=Count("pk"), words=Sum("word_count"))
    state = getattr(project, "story_state", None)
    return ProjectStatus(
        project=project,
        checkpoint=checkpoint_of(project),
        chapters=chapter_totals["n"],
        words=chapter_totals["words"] or 0,
        characters_active=project.characters.filter(status="active").count(),
        state_version=state.state_version if state else 0,
        foreshadowing_open=unresolved_foreshadowing(project).count(),
        foreshadowing_overdue=list(foreshadowing_overdue(project=project).values_list("fid", flat=True)),
        foreshadowing_dormant=[d.foreshadowing.fid for d in foreshadowing_dormant(project=project)],
    )


@dataclass(frozen=True)
class ProjectAccess:
    """A project and the caller's role in it, for pages that show or hide actions by role."""

    project: Project
    role: str


def project_access_for_member(*, user: AbstractBaseUser, slug: str, action: Action = Action.READ) -> ProjectAccess:
    """Like ``project_get_for_member`` (NotFound for non-members, PermissionDenied for a role that
    may not do ``action``), and also returns the role; two queries."""
    project = Project.objects.filter(slug=slug).first()
    role = membership_role(user=user, project=project) if project else None
    if project is None or role is None:
        raise NotFound("No such project.")
    if not role_allows(role, action):
        raise PermissionDenied()
    return ProjectAccess(project, role)


def chapter_list_for_project(*, project: Project) -> QuerySet:
    """Chapters without their text, with volume, evaluation score and summary presence: one query."""
    from projects.models import Chapter

    return (Chapter.objects.filter(project=project).select_related("volume", "evaluation")
            .only("number", "title", "word_count", "version", "updated_at", "volume__number", "volume__title",
                  "evaluation__overall", "evaluation__gate_decision")
            .order_by("number"))


# --- REST API reads (projects/api) ---------------------------------------------------------------


def chapter_get_for_project(*, project: Project, number: int):
    """One committed chapter with its text, volume and storyline (one query), or NotFound."""
    from projects.models import Chapter

    chapter = Chapter.objects.select_related("volume", "storyline").filter(project=project, number=number).first()
    if chapter is None:
        raise NotFound("No such chapter.")
    return chapter


@dataclass(frozen=True)
class ForeshadowingFlags:
    """Which items of the ledger are overdue (facts §10.9) and dormant (facts §12, with the silence)."""

    overdue: frozenset[str]
    dormant: dict[str, int]


def foreshadowing_flags(*, project: Project) -> ForeshadowingFlags:
    """Two queries, whatever the size of the ledger."""
    overdue = frozenset(foreshadowing_overdue(project=project).values_list("fid", flat=True))
    dormant = {d.foreshadowing.fid: d.chapters_since_last_update for d in foreshadowing_dormant(project=project)}
    return ForeshadowingFlags(overdue, dormant)


def story_state_at_chapter(*, project: Project, chapter: int) -> dict:
    """The story state as it stood after ``chapter`` committed: the changelog (StateChange rows)
    replayed from an empty state in version order, up to the first change made for a later chapter
    (a delta's base is the state before it, so the replay is a prefix of the changelog). One query."""
    from projects.models import StateChange
    from projects.state_ops import replay

    deltas = []
    for row_chapter, delta in (StateChange.objects.filter(project=project).order_by("state_version")
                               .values_list("chapter", "delta").iterator()):
        if row_chapter > chapter:
            break
        deltas.append(delta)
    return replay(deltas)


def volumes_with_counts(*, project: Project) -> QuerySet:
    """The project's volumes in order with ``chapter_count`` and ``chapter_words``: one query."""
    from django.db.models import Count, Sum

    from projects.models import Volume

    return (Volume.objects.filter(project=project).only("number", "title", "status")
            .annotate(chapter_count=Count("chapters"), chapter_words=Sum("chapters__word_count")).order_by("number"))


def character_names(*, project: Project) -> dict[str, str]:
    """Character slug -> display name, for showing ids in JSON documents as names (one query)."""
    return dict(Character.objects.filter(project=project).values_list("slug", "display_name"))


def story_facts_for_list(*, project: Project, status: str = "open", character: str = "") -> list:
    """The facts ledger as the web page lists it: ``status`` open, closed (fulfilled or cancelled)
    or all; with ``character``, only the facts that bind that character (issue #18)."""
    facts = project.facts.order_by("chapter", "fact_id")
    if status == "open":
        facts = facts.filter(status="open")
    elif status == "closed":
        facts = facts.exclude(status="open")
    rows = list(facts)
    return [f for f in rows if character in f.characters] if character else rows


def story_facts_open(*, project: Project, before_chapter: int) -> list:
    """Facts established before ``before_chapter`` and open then: still open, or closed only at or
    after it (issue #18)."""
    still_open = Q(status="open") | Q(closed_chapter__gte=before_chapter)
    return list(project.facts.filter(chapter__lt=before_chapter).filter(still_open).order_by("chapter", "pk"))
