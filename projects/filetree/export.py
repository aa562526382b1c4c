"""Export a project as the canonical novel-project tree (seed 000 §9.1, facts §2, §10, §15).

``tree_files`` yields ``(path, bytes)`` one file at a time in a fixed order, reading chapters
in batches, so a 1000-chapter book streams to a directory or a zip with constant queries per
section and without holding the book in memory. Nothing in a file depends on the time of export.
"""
from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from django.core.exceptions import ObjectDoesNotExist

from projects.checkpoint import checkpoint_of
from projects.filetree import paths
from projects.filetree.canonical import dump_json, dump_json_line, dump_text
from projects.filetree.chapter_heading import chapter_file_text
from projects.filetree.changelogs import CHARACTER_MODELS, WORLD_MODELS, changelog_text
from projects.filetree.fidelity import faithful_files
from projects.filetree.hooks import extension_files, staging_files
from projects.filetree.platform_files import exported_profile, platform_files, profile_travels_in_novelsite_file
from projects.ids import volume_for_chapter
from projects.models import Chapter, Project, VoiceSample
from projects.services.facts import story_fact_as_json

CHAPTER_BATCH = 200
ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed, so two zips of unchanged data are identical


def _project_files(project: Project, originals: dict[str, str]) -> Iterator[tuple[str, bytes]]:
    yield paths.CHECKPOINT, dump_json(checkpoint_of(project, imported_time=_imported_time(originals)))
    yield paths.BRIEF, dump_text(project.brief)
    if project.style_profile:
        yield paths.STYLE_PROFILE, dump_json(project.style_profile)
    if project.ai_blacklist:
        yield paths.AI_BLACKLIST, dump_json(project.ai_blacklist)
    if project.style_drift and project.style_drift.get("active"):  # seed 000 §9.1: only while active
        yield paths.STYLE_DRIFT, dump_json(project.style_drift)
    yield from platform_files(project, originals)
    yield paths.NOVELSITE_PROJECT, dump_json(_novelsite_settings(project))


def _imported_time(originals: dict[str, str]) -> str | None:
    try:
        value = json.loads(originals.get(paths.CHECKPOINT) or "{}").get("last_checkpoint_time")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _novelsite_settings(project: Project) -> dict[str, Any]:
    """What the original tool has no file for: Novelsite's extension, novelsite/project.json."""
    volumes = {str(v.number): {"title": v.title, "status": v.status} for v in project.volumes.all()}
    storyline_overrides, volume_overrides = _chapter_overrides(project)
    return {
        "format": "novelsite-tree/1",
        "slug": project.slug,
        "title": project.title,
        "genre": project.genre,
        "target_platform": project.target_platform,
        "genre_drive_type": project.genre_drive_type,
        "autopilot": {"enabled": project.autopilot_enabled,
                      "chapters_per_night": project.autopilot_chapters_per_night,
                      "cost_cap_usd": str(project.autopilot_cost_cap_usd)},
        "manual_cost_cap_usd": str(project.manual_cost_cap_usd),
        "gate_settings": project.gate_settings,
        **({"lint_settings": project.lint_settings} if project.lint_settings else {}),
        "stage_models": project.stage_models,
        "volumes": volumes,
        "chapter_storylines": storyline_overrides,
        "chapter_volumes": volume_overrides,
        "inactive_style_drift": project.style_drift if project.style_drift and not project.style_drift.get("active")
        else None,
        # a platform the original tool does not know (general) keeps its profile here (platform_files)
        "platform_profile": exported_profile(project) if profile_travels_in_novelsite_file(project) else None,
    }


def _chapter_overrides(project: Project) -> tuple[dict[str, str | None], dict[str, int]]:
    """Where a chapter's storyline or volume differs from what an importer would infer (the
    summary's line, else the contract's; the contract's volume, else 30 chapters a volume)."""
    contracts = {c.chapter: (c.volume.number, c.data.get("storyline_id"))
                 for c in project.chapter_contracts.select_related("volume").only("chapter", "data", "volume__number")}
    by_summary = dict(project.chapter_summaries.values_list("chapter__number", "storyline_slug"))
    storylines, volumes = {}, {}
    for number, slug, volume in project.chapters.values_list("number", "storyline__slug", "volume__number"):
        contract_volume, contract_line = contracts.get(number, (None, None))
        if (by_summary.get(number) or contract_line) != slug:
            storylines[str(number)] = slug
        if (contract_volume or volume_for_chapter(number)) != volume:
            volumes[str(number)] = volume
    return storylines, volumes


def _research_and_world(project: Project) -> Iterator[tuple[str, bytes]]:
    for note in project.research_notes.all():
        yield f"research/{note.name}.md", dump_text(note.content)
    for doc in project.world_docs.all():
        yield f"world/{doc.name}.md", dump_text(doc.content)
    rules = [_rule_json(rule) for rule in project.world_rules.all()]
    if rules:
        yield paths.WORLD_RULES, dump_json({"rules": rules})
    yield from _changelog(project, paths.WORLD_CHANGELOG, WORLD_MODELS)


def _rule_json(rule) -> dict[str, Any]:
    data = {**rule.extra, "id": rule.rule_id, "category": rule.category, "rule": rule.rule,
            "constraint_type": rule.constraint_type, "canon_status": rule.canon_status,
            "exceptions": rule.exceptions, "introduced_chapter": rule.introduced_chapter,
            "last_verified": rule.last_verified}
    if rule.keywords:
        data["keywords"] = rule.keywords
    return data


def _changelog(project: Project, path: str, models) -> Iterator[tuple[str, bytes]]:
    head = project.extra_files.filter(path=path).values_list("content", flat=True).first() or ""
    text = changelog_text(project, head=head, models=models)
    if text:
        yield path, dump_text(text)


def _characters(project: Project) -> Iterator[tuple[str, bytes]]:
    for character in project.characters.all():
        data = {**character.extra, "id": character.slug, "display_name": character.display_name,
                "canon_status": character.canon_status, "contracts": character.contracts}
        if character.aliases:  # #18: an extra key of facts §10.2's file; absent when there are none
            data["aliases"] = character.aliases
        yield paths.character_path(character.status, character.slug, "json"), dump_json(data)
        yield paths.character_path(character.status, character.slug, "md"), dump_text(character.profile)
    if project.relationships:
        yield paths.RELATIONSHIPS, dump_json(project.relationships)
    yield from _changelog(project, paths.CHARACTERS_CHANGELOG, CHARACTER_MODELS)


def _storylines(project: Project) -> Iterator[tuple[str, bytes]]:
    lines = list(project.storylines.all())
    if lines or project.storylines_meta:
        entries = [_storyline_json(line) for line in lines]
        yield paths.STORYLINES, dump_json({**project.storylines_meta, "storylines": entries})
    if project.storyline_spec:
        yield paths.STORYLINE_SPEC, dump_json(project.storyline_spec)
    for line in lines:
        yield paths.memory_path(line.slug), dump_text(line.memory)


def _storyline_json(line) -> dict[str, Any]:
    data = {**line.extra, "id": line.slug, "name": line.name, "type": line.type, "scope": line.scope,
            "pov_characters": line.pov_characters, "affiliated_factions": line.affiliated_factions,
            "timeline": line.timeline, "status": line.status, "description": line.description}
    if line.introduced_volume is not None:
        data["introduced_volume"] = line.introduced_volume
    return data


def schedule_for_export(schedule: dict[str, Any]) -> dict[str, Any]:
    """facts §15.1: the CLI validates active_storylines as strings. Objects are written as their
    ids, and kept whole under ``storyline_roles`` (a key the CLI ignores)."""
    active = schedule.get("active_storylines")
    if not isinstance(active, list) or all(isinstance(item, str) for item in active):
        return schedule
    ids = [item if isinstance(item, str) else item.get("storyline_id") for item in active]
    return {**schedule, "active_storylines": ids,
            "storyline_roles": [item for item in active if isinstance(item, dict)]}


def foreshadowing_plan_for_export(plan: Any) -> dict[str, Any]:
    """facts §15.2: write both ``items`` and ``foreshadowing`` so that every reader finds the list."""
    if isinstance(plan, list):
        plan = {"items": plan}
    items = plan.get("items") or plan.get("foreshadowing") or []
    return {"schema_version": 1, **plan, "items": items, "foreshadowing": items}


def _volumes(project: Project, originals: dict[str, str]) -> Iterator[tuple[str, bytes]]:
    contracts: dict[int, list] = {}
    for contract in project.chapter_contracts.select_related("volume"):
        contracts.setdefault(contract.volume.number, []).append(contract)
    for volume in project.volumes.all():
        base = paths.volume_dir(volume.number)
        yield f"{base}/outline.md", dump_text(volume.outline)
        yield f"{base}/storyline-schedule.json", dump_json(schedule_for_export(volume.storyline_schedule))
        yield f"{base}/foreshadowing.json", dump_json(foreshadowing_plan_for_export(volume.foreshadowing_plan))
        # the plan always has one (facts §6), but no empty one is added to an imported tree that lacked it
        if volume.new_characters or not originals or f"{base}/new-characters.json" in originals:
            yield f"{base}/new-characters.json", dump_json(volume.new_characters)
        for contract in contracts.get(volume.number, []):
            yield paths.contract_path(volume.number, contract.chapter), dump_json(contract.data)
        if volume.review:
            yield f"{base}/review.md", dump_text(volume.review)


def _chapters(project: Project, originals: dict[str, str]) -> Iterator[tuple[str, bytes]]:
    queryset = (Chapter.objects.filter(project=project).order_by("number")
                .select_related("summary", "evaluation", "log"))
    last = 0
    while True:  # keyset batches: constant memory, one query per batch
        batch = list(queryset.filter(number__gt=last)[:CHAPTER_BATCH])
        if not batch:
            return
        for chapter in batch:
            path = paths.chapter_path(chapter.number)
            yield path, dump_text(chapter_file_text(chapter.number, chapter.title, chapter.text,
                                                    imported_heading=originals.get(path)))
            if summary := _related_or_none(chapter, "summary"):
                yield paths.summary_path(chapter.number), dump_text(summary.text)
            if evaluation := _related_or_none(chapter, "evaluation"):
                yield paths.evaluation_path(chapter.number), dump_json(evaluation.data)
            if log := _related_or_none(chapter, "log"):
                yield paths.log_path(chapter.number), dump_json(log.data)
        last = batch[-1].number


def _related_or_none(chapter: Chapter, name: str):
    try:
        return getattr(chapter, name)
    except ObjectDoesNotExist:
        return None


def _state(project: Project) -> Iterator[tuple[str, bytes]]:
    state = getattr(project, "story_state", None)
    if state is not None:
        yield paths.CURRENT_STATE, dump_json(state.data)
    deltas = project.state_changes.order_by("state_version").values_list("delta", flat=True)
    lines = [dump_json_line(delta) for delta in deltas.iterator(chunk_size=500)]
    if lines:
        yield paths.STATE_CHANGELOG, ("\n".join(lines) + "\n").encode()
    for snapshot in project.state_snapshots.all():
        yield paths.snapshot_path(snapshot.volume_number), dump_json(snapshot.data)


def _foreshadowing(project: Project) -> Iterator[tuple[str, bytes]]:
    items = []
    for row in project.foreshadowing.prefetch_related("events").order_by("fid"):
        history = [{"chapter": e.chapter, "action": e.action, **({"detail": e.detail} if e.detail else {})}
                   for e in row.events.all()]
        target = [row.target_resolve_start, row.target_resolve_end] if row.target_resolve_end is not None else None
        items.append({**row.extra, "id": row.fid, "description": row.description, "scope": row.scope,
                      "status": row.status, "planted_chapter": row.planted_chapter,
                      "planted_storyline": row.planted_storyline or None, "target_resolve_range": target,
                      "last_updated_chapter": row.last_updated_chapter, "history": history})
    if items:
        yield paths.GLOBAL_FORESHADOWING, dump_json({"foreshadowing": items})


def _archives(project: Project) -> Iterator[tuple[str, bytes]]:
    rows = [{"level": a.level, "chapter_start": a.chapter_start, "chapter_end": a.chapter_end,
             "volume_number": a.volume_number, "superseded": a.superseded, "text": a.text}
            for a in project.archived_summaries.order_by("chapter_start", "level")]
    if rows:
        yield paths.NOVELSITE_ARCHIVES, dump_json({"archived_summaries": rows})


def _facts(project: Project) -> Iterator[tuple[str, bytes]]:
    rows = [story_fact_as_json(fact) for fact in project.facts.order_by("chapter", "fact_id")]
    if rows:
        yield paths.NOVELSITE_FACTS, dump_json({"facts": rows})


def _voice_sample(project: Project) -> Iterator[tuple[str, bytes]]:
    """The sample of the wanted voice: its text and whose it is (the statistics are measured again
    on import)."""
    sample = VoiceSample.objects.filter(project=project).first()
    if sample is not None:
        yield paths.NOVELSITE_VOICE_SAMPLE, dump_json({"source_type": sample.source_type,
                                                        "file_name": sample.file_name, "text": sample.text})


def tree_files(project: Project) -> Iterator[tuple[str, bytes]]:
    """Every file of the project's tree, in a fixed order. Never ``.novel.lock/``."""
    written: set[str] = set()
    originals = dict(project.imported_files.values_list("path", "content"))
    sections: Iterable[Iterator[tuple[str, bytes]]] = (
        _project_files(project, originals), _research_and_world(project), _characters(project), _storylines(project),
        _volumes(project, originals), _chapters(project, originals), _state(project), _foreshadowing(project),
        _archives(project), _facts(project), _voice_sample(project), extension_files(project),
        staging_files(project),
    )
    for section in sections:
        for path, data in faithful_files(section, originals):
            written.add(path)
            yield path, data
    for extra in project.extra_files.order_by("path").iterator(chunk_size=200):
        # kept from an import; a file Novelsite writes itself (or a generated changelog) wins.
        # ExtraFile paths can be edited in the admin: never write the lock, nor a path that leaves the tree.
        if extra.path.startswith(paths.NEVER_EXPORTED_PREFIX):
            continue
        if extra.path not in written and extra.path not in paths.GENERATED:
            yield paths.check_relative_path(extra.path), extra.content.encode()


def export_to_directory(project: Project, target: Path) -> None:
    """Write the tree under ``target`` (created; must be empty if it exists)."""
    target = Path(target)
    if target.exists() and any(target.iterdir()):
        raise FileExistsError(f"{target} is not empty; export into a new or empty directory")
    for path, data in tree_files(project):
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(data)


class _ChunkSink:
    """A write-only, non-seekable stream that hands out what was written since the last take."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._position = 0

    def write(self, data: bytes) -> int:
        self._chunks.append(bytes(data))
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data, self._chunks = b"".join(self._chunks), []
        return data


def zip_stream(project: Project) -> Iterator[bytes]:
    """The tree as a zip, in chunks, one file at a time: for a streamed download or a file."""
    sink = _ChunkSink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path, data in tree_files(project):
            info = zipfile.ZipInfo(path, date_time=ZIP_DATE)  # fixed date: identical zips for unchanged data
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
            yield sink.take()
    yield sink.take()


def export_to_zip(project: Project, stream: IO[bytes]) -> None:
    for chunk in zip_stream(project):
        stream.write(chunk)


def export_to_path(project: Project, target: str | os.PathLike) -> None:
    """A ``.zip`` path gets a zip file; anything else a directory."""
    target = Path(target)
    if target.suffix.lower() == ".zip":
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as handle:
            export_to_zip(project, handle)
        return
    export_to_directory(project, target)
