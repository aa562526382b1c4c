"""Import a parsed tree as a new project, all or nothing: one transaction, and every check done
(``parse.parse_tree``) before the first row is written. Bulk inserts keep a 1000-chapter book to a
few dozen queries; edits made by the import are in the history with the reason "import"."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.validators import validate_slug
from django.core.exceptions import ValidationError
from django.db import DataError, IntegrityError, transaction
from django.utils.text import slugify
from simple_history.utils import bulk_create_with_history

from projects.checkpoint import checkpoint_moment
from projects.evaluations import chapter_log_columns, evaluation_columns
from projects.filetree import paths
from projects.filetree.changelogs import IMPORT_REASON
from projects.filetree.errors import TreeError
from projects.filetree.fidelity import is_kept_as_imported
from projects.filetree.platform_files import PLATFORM_WRITING_GUIDE
from projects.filetree.hooks import extension_read, staging_read
from projects.filetree.platform_files import platform_fields
from projects.filetree.parse import STORYLINE_LINE_RE, ParsedTree, chapter_storyline, chapter_volume, parse_tree
from projects.filetree.source import TreeSource
from projects.models import (
    CHECKPOINT_FIELDS,
    ArchivedSummary,
    ChangeSource,
    Chapter,
    ChapterContract,
    ChapterLog,
    ChapterSummary,
    Character,
    Evaluation,
    ExtraFile,
    Foreshadowing,
    ForeshadowingEvent,
    GateDecision,
    ImportedFile,
    Membership,
    Project,
    ResearchNote,
    Role,
    StateChange,
    StoryFact,
    StoryState,
    Storyline,
    VoiceSample,
    Volume,
    VolumeStateSnapshot,
    WorldDoc,
    WorldRule,
)
from projects.services.facts import story_facts_from_json
from projects.services.appearances import character_appearances_rebuild
from projects.slugs import slug_not_available_message, slug_unavailable_message
from projects.state_ops import empty_state
from projects.text_stats import count_chars
from projects.vocabulary import OrchestratorState, legacy_state
from projects.voice_stats import voice_statistics

BATCH = 500


@dataclass
class ImportReport:
    project: Project
    files: int
    kept: list[str] = field(default_factory=list)  # files Novelsite does not model, kept verbatim
    skipped: list[str] = field(default_factory=list)  # .novel.lock/ entries
    warnings: list[str] = field(default_factory=list)


def tree_import(
    source: TreeSource, *, slug: str | None = None, owner: AbstractBaseUser | None = None, replace: bool = False,
    may_replace: Callable[[Project], None] | None = None, operator: bool = False,
) -> ImportReport:
    """Create a project from ``source``. Refuses an existing slug unless ``replace`` is set, in
    which case the old project is deleted in the same transaction (so a failure keeps it).
    ``may_replace`` is called with that project first and raises to refuse (the slug may come from
    the tree itself, so a caller cannot check it beforehand). A taken slug is refused in words that
    do not say whether the project exists (``projects.slugs``), unless the caller is the server's
    ``operator`` (the ``novel import`` command), who is told and may pass ``--replace``."""
    tree = parse_tree(source)
    slug = _choose_slug(slug, tree, source)
    try:
        with transaction.atomic():
            existing = Project.objects.filter(slug=slug).first()
            unavailable = slug_unavailable_message(slug=slug, user=owner)
            if existing is None and unavailable:  # reserved
                raise TreeError(slug, unavailable)
            if existing is not None:
                if not replace and operator:
                    raise TreeError(slug, "a project with this slug exists; choose another slug or replace it")
                if not replace:  # the same words whether or not the caller can see that project
                    raise TreeError(slug, unavailable or slug_not_available_message())
                if may_replace is not None:
                    may_replace(existing)
                existing.delete()
            project = _write(tree, slug, owner)
            _keep_originals(project, source, tree)
    except (DataError, IntegrityError, OverflowError) as exc:
        # a value the checks above let through but a column cannot hold (a huge number, an over-long
        # id on PostgreSQL): still an invalid tree, and the transaction has rolled everything back
        raise TreeError("(database)", f"a value of the tree does not fit the database: {exc}") from exc
    return ImportReport(project=project, files=len(source.files), kept=tree.kept, skipped=source.skipped,
                        warnings=tree.warnings)


def _choose_slug(slug: str | None, tree: ParsedTree, source: TreeSource) -> str:
    candidate = slug or tree.project.get("slug") or slugify(source.name)
    try:
        validate_slug(candidate)
    except ValidationError as exc:
        raise TreeError("(project)", f"{candidate!r} is not a valid project slug; pass one with --project") from exc
    return candidate[:60]


def _write(tree: ParsedTree, slug: str, owner: AbstractBaseUser | None) -> Project:
    project = Project.objects.create(slug=slug, **_project_fields(tree), **_checkpoint_fields(tree.checkpoint))
    if owner is not None:
        Membership.objects.create(project=project, user=owner, role=Role.OWNER)
    history = {"default_user": owner, "default_change_reason": IMPORT_REASON, "batch_size": BATCH}
    bulk_create_with_history([ResearchNote(project=project, name=n, content=c) for n, c in tree.research.items()],
                             ResearchNote, **history)
    bulk_create_with_history([WorldDoc(project=project, name=n, content=c) for n, c in tree.world_docs.items()],
                             WorldDoc, **history)
    bulk_create_with_history([_rule(project, i, r) for i, r in enumerate(tree.rules)], WorldRule, **history)
    bulk_create_with_history([_character(project, s, e) for s, e in sorted(tree.characters.items())], Character,
                             **history)
    lines = bulk_create_with_history([_storyline(project, i, line, tree) for i, line in enumerate(tree.storylines)],
                                     Storyline, **history)
    volumes = _volumes(project, tree, history)
    bulk_create_with_history([ChapterContract(project=project, volume=volumes[v], chapter=c, data=data)
                              for c, (v, data) in sorted(tree.contracts.items())], ChapterContract, **history)
    _chapters(project, tree, volumes, {line.slug: line for line in lines}, history)
    _state(project, tree)
    _foreshadowing(project, tree)
    character_appearances_rebuild(project=project)  # where the characters were (#18), from contracts and deltas
    ArchivedSummary.objects.bulk_create([ArchivedSummary(project=project, **a) for a in tree.archives])
    bulk_create_with_history(story_facts_from_json(project, tree.facts), StoryFact, **history)
    unbound = [f["id"] for f in tree.facts if set(f.get("characters") or []) - set(tree.characters)]
    if unbound:
        tree.warnings.append(f"{paths.NOVELSITE_FACTS}: facts naming characters the tree does not have "
                             f"({', '.join(unbound)}) were kept without them")
    if tree.voice_sample is not None:  # its statistics are measured again, by the same code as on the voice page
        VoiceSample.objects.create(project=project, statistics=voice_statistics(tree.voice_sample["text"]),
                                   **tree.voice_sample)
    taken = extension_read(project, tree.extra_files)  # e.g. promotions/: read back by the pipeline
    staged, notes = staging_read(project, tree.extra_files)  # an in-flight chapter's work: its run (#20 item 3)
    taken |= staged
    tree.kept[:] = [path for path in tree.kept if path not in staged]
    tree.warnings.extend(notes)
    for path in staged:  # no longer opaque: its JSON text is kept as imported, for a faithful export
        tree.extra_files.pop(path, None)
    ExtraFile.objects.bulk_create([ExtraFile(project=project, path=p, content=c)
                                   for p, c in sorted(tree.extra_files.items()) if p not in taken], batch_size=BATCH)
    return project


def _keep_originals(project: Project, source: TreeSource, tree: ParsedTree) -> None:
    """The JSON files as the tree wrote them, for a faithful export (filetree/fidelity.py), and the
    chapters' heading lines; the files Novelsite does not model are kept whole already (ExtraFile)."""
    originals = []
    for path, data in sorted(source.files.items()):
        if path in tree.extra_files or not (is_kept_as_imported(path) or path == PLATFORM_WRITING_GUIDE):
            continue  # (the guide: so that an export knows the tree had one)
        try:
            originals.append(ImportedFile(project=project, path=path, content=data.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    # chapter files: only their H1 line, written back while the title is the same (chapter_heading.py)
    originals += [ImportedFile(project=project, path=paths.chapter_path(number), content=line)
                  for number, line in sorted(tree.chapter_headings.items())]
    ImportedFile.objects.bulk_create(originals, batch_size=BATCH)


def _project_fields(tree: ParsedTree) -> dict[str, Any]:
    meta = tree.project
    autopilot = meta.get("autopilot", {})
    title = meta.get("title") or _title_from_brief(tree.brief)
    return {
        "title": title, "brief": tree.brief, **platform_fields(tree),
        "style_profile": tree.style_profile, "ai_blacklist": tree.ai_blacklist,
        "style_drift": tree.style_drift or meta.get("inactive_style_drift"),
        "relationships": tree.relationships, "storyline_spec": tree.storyline_spec,
        "storylines_meta": tree.storylines_meta,
        "autopilot_enabled": autopilot.get("enabled", False),
        "autopilot_chapters_per_night": autopilot.get("chapters_per_night", 3),
        "autopilot_cost_cap_usd": Decimal(autopilot.get("cost_cap_usd", "5.00")),
        "manual_cost_cap_usd": Decimal(meta.get("manual_cost_cap_usd", "20.00")),
        "gate_settings": meta.get("gate_settings", {}), "stage_models": meta.get("stage_models", {}),
        "lint_settings": meta.get("lint_settings") or {},
    }


def _title_from_brief(brief: str) -> str:
    """The ``- **书名**：…`` line of the brief template; else its first H1 (the template's H1 is the
    generic "创作纲领", so it only counts when there is no 书名 line)."""
    lines = [line.strip() for line in brief.splitlines()]
    for stripped in lines:
        if "书名" in stripped and ("：" in stripped or ":" in stripped):
            title = stripped.replace("：", ":").split(":", 1)[1].strip(" *")[:200]
            if title:
                return title
    for stripped in lines:
        if stripped.startswith("# "):
            return stripped[2:].strip()[:200] or "未命名"
    return "未命名"


def _checkpoint_fields(checkpoint: dict[str, Any] | None) -> dict[str, Any]:
    """facts §3: no checkpoint means INIT; without orchestrator_state, infer it from legacy fields;
    unknown keys are kept."""
    if checkpoint is None:
        return {"orchestrator_state": OrchestratorState.INIT}
    fields = {name: checkpoint[name] for name in CHECKPOINT_FIELDS if name in checkpoint}
    fields.setdefault("orchestrator_state", legacy_state(checkpoint))
    fields["pending_actions"] = checkpoint.get("pending_actions", [])
    if fields.get("last_checkpoint_time"):
        fields["last_checkpoint_time"] = checkpoint_moment(fields["last_checkpoint_time"])
    fields["checkpoint_extra"] = {k: v for k, v in checkpoint.items() if k not in CHECKPOINT_FIELDS}
    return fields


def _rule(project: Project, position: int, rule: dict[str, Any]) -> WorldRule:
    known = ("id", "category", "rule", "constraint_type", "canon_status", "exceptions", "introduced_chapter",
             "last_verified", "keywords")
    return WorldRule(
        project=project, position=position, rule_id=rule["id"], category=rule.get("category", "")[:60],
        rule=rule["rule"], constraint_type=rule["constraint_type"],
        canon_status=rule.get("canon_status", "established"), exceptions=rule.get("exceptions", []),
        introduced_chapter=rule.get("introduced_chapter"), last_verified=rule.get("last_verified"),
        keywords=rule.get("keywords", []), extra={k: v for k, v in rule.items() if k not in known},
    )


def _character(project: Project, slug: str, entry: dict[str, Any]) -> Character:
    body = entry["json"]
    known = ("id", "display_name", "canon_status", "contracts", "aliases")
    return Character(
        project=project, slug=slug, status=entry["status"], display_name=body["display_name"],
        canon_status=body.get("canon_status", "established"), profile=entry["profile"],
        contracts=body["contracts"], aliases=body.get("aliases", []),
        extra={k: v for k, v in body.items() if k not in known},
    )


def _storyline(project: Project, position: int, line: dict[str, Any], tree: ParsedTree) -> Storyline:
    known = ("id", "name", "type", "scope", "pov_characters", "affiliated_factions", "timeline", "status",
             "description", "introduced_volume")
    return Storyline(
        project=project, position=position, slug=line["id"], name=line["name"], type=line.get("type", "")[:40],
        scope=line.get("scope", "novel"), pov_characters=line.get("pov_characters", []),
        affiliated_factions=line.get("affiliated_factions", []), timeline=line.get("timeline", "present"),
        status=line.get("status", "active"), description=line.get("description", ""),
        introduced_volume=line.get("introduced_volume"), memory=tree.memories.get(line["id"], ""),
        extra={k: v for k, v in line.items() if k not in known},
    )


def _volumes(project: Project, tree: ParsedTree, history: dict[str, Any]) -> dict[int, Volume]:
    meta = {int(k): v for k, v in tree.project.get("volumes", {}).items()}
    numbers = set(tree.volumes) | set(meta) | {chapter_volume(tree, n) for n in tree.chapters}
    rows = []
    for number in sorted(numbers):
        files = tree.volumes.get(number, {})
        rows.append(Volume(
            project=project, number=number, title=meta.get(number, {}).get("title", ""),
            status=meta.get(number, {}).get("status", "writing"), outline=files.get("outline", ""),
            storyline_schedule=files.get("storyline_schedule", {}), review=files.get("review", ""),
            foreshadowing_plan=files.get("foreshadowing_plan", {}), new_characters=files.get("new_characters", []),
        ))
    return {volume.number: volume for volume in bulk_create_with_history(rows, Volume, **history)}


def _chapters(project, tree: ParsedTree, volumes, lines: dict[str, Storyline], history) -> None:
    rows = []
    for number, parsed in sorted(tree.chapters.items()):
        slug = chapter_storyline(tree, number)
        rows.append(Chapter(project=project, number=number, volume=volumes[chapter_volume(tree, number)],
                            storyline=lines.get(slug) if slug else None, title=parsed.title, text=parsed.text,
                            word_count=count_chars(parsed.text)))  # bulk_create skips save(): count here
    chapters = {c.number: c for c in bulk_create_with_history(rows, Chapter, **history)}
    summaries, evaluations, logs = [], [], []
    for number, parsed in sorted(tree.chapters.items()):
        chapter = chapters[number]
        if parsed.summary is not None:
            found = STORYLINE_LINE_RE.search(parsed.summary)
            summaries.append(ChapterSummary(project=project, chapter=chapter, text=parsed.summary,
                                            storyline_slug=found[1][:60] if found else ""))
        if parsed.evaluation is not None:
            columns = evaluation_columns(parsed.evaluation)
            columns["gate_decision"] = _known_decision(columns["gate_decision"])
            evaluations.append(Evaluation(project=project, chapter=chapter, data=parsed.evaluation, **columns))
        if parsed.log is not None:
            columns = chapter_log_columns(parsed.log)
            columns["gate_decision"] = _known_decision(columns["gate_decision"])
            logs.append(ChapterLog(project=project, chapter=chapter, data=parsed.log, **columns))
    ChapterSummary.objects.bulk_create(summaries, batch_size=BATCH)
    Evaluation.objects.bulk_create(evaluations, batch_size=BATCH)
    ChapterLog.objects.bulk_create(logs, batch_size=BATCH)


def _known_decision(decision: str) -> str:
    return decision if decision in GateDecision.values else ""


def _state(project: Project, tree: ParsedTree) -> None:
    data = tree.state or empty_state()
    StoryState.objects.create(project=project, data=data, state_version=data["state_version"],
                              schema_version=data["schema_version"])
    StateChange.objects.bulk_create([
        StateChange(project=project, state_version=d["base_state_version"] + 1,
                    base_state_version=d["base_state_version"],
                    chapter=d["chapter"], storyline_slug=d["storyline_id"], delta=d, source=ChangeSource.IMPORT)
        for d in tree.deltas
    ], batch_size=BATCH)
    VolumeStateSnapshot.objects.bulk_create([VolumeStateSnapshot(project=project, volume_number=v, data=data)
                                             for v, data in sorted(tree.snapshots.items())])


def _foreshadowing(project: Project, tree: ParsedTree) -> None:
    known = ("id", "description", "scope", "status", "planted_chapter", "planted_storyline",
             "target_resolve_range", "last_updated_chapter", "history")
    rows = []
    for item in tree.foreshadowing:
        target = item.get("target_resolve_range") or [None, None]
        rows.append(Foreshadowing(
            project=project, fid=item["id"], description=item.get("description", ""),
            scope=item.get("scope", "medium"), status=item["status"], planted_chapter=item.get("planted_chapter"),
            planted_storyline=(item.get("planted_storyline") or "")[:60], target_resolve_start=target[0],
            target_resolve_end=target[1], last_updated_chapter=item.get("last_updated_chapter"),
            extra={k: v for k, v in item.items() if k not in known},
        ))
    created = {row.fid: row for row in Foreshadowing.objects.bulk_create(rows, batch_size=BATCH)}
    events, seen = [], set()
    for item in tree.foreshadowing:
        for entry in item.get("history", []):
            key = (item["id"], entry["chapter"], entry["action"])  # facts §10.9: unique by chapter:action
            if key not in seen:
                seen.add(key)
                events.append(ForeshadowingEvent(foreshadowing=created[item["id"]], chapter=entry["chapter"],
                                                 action=entry["action"], detail=entry.get("detail", "")))
    ForeshadowingEvent.objects.bulk_create(events, batch_size=BATCH)
