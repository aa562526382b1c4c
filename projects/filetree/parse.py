"""Parse a ``TreeSource`` into plain data, checking everything before anything is written.

Accepts our own exports and novel-writer-cli v0.5.0 trees with every documented shape variant
(facts §15). Each problem raises ``TreeError`` naming the file and the reason; a file the tree
format does not know is kept verbatim (``extra_files``) and reported.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from django.utils.dateparse import parse_datetime

from projects.evaluations import chapter_log_columns, evaluation_columns
from projects.filetree import paths, platform_files
from projects.filetree.chapter_heading import heading_title
from projects.filetree.canonical import decode_exact, load_json, load_json_lines, load_text
from projects.filetree.errors import TreeError
from projects.filetree.source import TreeSource
from projects.ids import is_slug, volume_for_chapter
from projects.json_validation import json_issues
from projects.models.project import BRIEF_MAX_CHARS
from projects.models.storylines import STORYLINE_MEMORY_MAX_CHARS
from projects.errors import InvalidData
from projects.models.voice import VoiceSource
from projects.services.facts import story_facts_file_issues
from projects.services.voice import clean_sample_text
from projects.text_stats import count_chars
from projects.state_ops import PatchError, replay
from projects.vocabulary import legacy_state

STORYLINE_LINE_RE = re.compile(r"^-\s*storyline_id:\s*([A-Za-z0-9_-]+)\s*$", re.MULTILINE)


@dataclass
class ParsedChapter:
    number: int
    title: str = ""
    text: str = ""
    summary: str | None = None
    evaluation: dict | None = None
    log: dict | None = None


@dataclass
class ParsedTree:
    project: dict[str, Any] = field(default_factory=dict)  # novelsite/project.json, if any
    checkpoint: dict[str, Any] | None = None
    brief: str = ""
    style_profile: dict = field(default_factory=dict)
    ai_blacklist: dict = field(default_factory=dict)
    style_drift: dict | None = None
    research: dict[str, str] = field(default_factory=dict)
    world_docs: dict[str, str] = field(default_factory=dict)
    rules: list[dict] = field(default_factory=list)
    characters: dict[str, dict] = field(default_factory=dict)  # slug -> {status, json, profile}
    relationships: Any = field(default_factory=dict)
    storylines: list[dict] = field(default_factory=list)
    storylines_meta: dict = field(default_factory=dict)
    storyline_spec: dict = field(default_factory=dict)
    memories: dict[str, str] = field(default_factory=dict)
    volumes: dict[int, dict[str, Any]] = field(default_factory=dict)
    contracts: dict[int, tuple[int, dict]] = field(default_factory=dict)  # chapter -> (volume, data)
    chapters: dict[int, ParsedChapter] = field(default_factory=dict)
    state: dict | None = None
    deltas: list[dict] = field(default_factory=list)
    snapshots: dict[int, dict] = field(default_factory=dict)
    foreshadowing: list[dict] = field(default_factory=list)
    archives: list[dict] = field(default_factory=list)
    facts: list[dict] = field(default_factory=list)  # novelsite/facts.json (issue #18)
    voice_sample: dict | None = None  # novelsite/voice-sample.json: text, source_type, file_name (#17 §3)
    extra_files: dict[str, str] = field(default_factory=dict)
    kept: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    volume_spellings: dict[int, str] = field(default_factory=dict)  # vol-01 vs vol-001
    replayed_state: dict | None = None  # the changelog applied from the empty state
    chapter_headings: dict[int, str] = field(default_factory=dict)  # the H1 lines as they came
    platform_profile: dict | None = None  # the four platform files (projects.filetree.platform_files)
    genre_weight_profiles: dict | None = None
    golden_chapter_gates: dict | None = None
    platform_writing_guide: str = ""


def _valid(schema_name: str, value: Any, path: str) -> Any:
    issues = json_issues(schema_name, value)
    if issues:
        raise TreeError(path, "; ".join(str(issue) for issue in issues))
    return value


MAX_NUMBER = 2_147_483_647  # the largest value of a PositiveIntegerField on every database


def _number(text: str, path: str, *, minimum: int = 1) -> int:
    number = int(text)
    if not minimum <= number <= MAX_NUMBER:
        raise TreeError(path, f"number {number} is out of range (must be {minimum}..{MAX_NUMBER})")
    return number


def _chapter(tree: ParsedTree, number: int, path: str) -> ParsedChapter:
    chapter = tree.chapters.get(number)
    if chapter is None:
        raise TreeError(path, f"belongs to chapter {number}, but {paths.chapter_path(number)} is missing")
    return chapter


# --- one handler per kind of file ----------------------------------------------------------------


def _checkpoint(tree, match, path, data):
    tree.checkpoint = _valid("CHECKPOINT_FILE", load_json(data, path), path)
    moment = tree.checkpoint.get("last_checkpoint_time")
    if moment:  # the schema's "date-time" format is not enforced by the validator
        try:
            parsed = parse_datetime(moment)
        except ValueError as exc:  # well formed but impossible, e.g. month 13
            raise TreeError(path, f"last_checkpoint_time {moment!r}: {exc}") from exc
        if parsed is None:
            raise TreeError(path, f"last_checkpoint_time {moment!r} is not an ISO 8601 date-time")


def _brief(tree, match, path, data):
    tree.brief = load_text(data, path)
    if count_chars(tree.brief) > BRIEF_MAX_CHARS:
        raise TreeError(path, f"{count_chars(tree.brief)} characters (字, whitespace not counted); a brief has at "
                              f"most {BRIEF_MAX_CHARS} (seed 000 §9.1)")


def _json_setting(attribute: str, schema: str):
    def handler(tree, match, path, data):
        setattr(tree, attribute, _valid(schema, load_json(data, path), path))
    return handler


def _novelsite_project(tree, match, path, data):
    tree.project = _valid("NOVELSITE_PROJECT", load_json(data, path), path)
    platform_files.check_platform_profile_in_project_file(tree, path)


def _research(tree, match, path, data):
    tree.research[match[1]] = load_text(data, path)


def _world_doc(tree, match, path, data):
    tree.world_docs[match[1]] = load_text(data, path)


def _world_rules(tree, match, path, data):
    rules = _valid("WORLD_RULES_FILE", load_json(data, path), path)["rules"]
    seen = set()
    for rule in rules:
        if rule["id"] in seen:
            raise TreeError(path, f"rule id {rule['id']} appears twice")
        seen.add(rule["id"])
    tree.rules = rules


def _character(tree, match, path, data):
    status, slug, extension = match[1], match[2], match[3]
    if not is_slug(slug):
        raise TreeError(path, f"{slug!r} is not a slug id (lowercase letters, digits and hyphens)")
    entry = tree.characters.setdefault(slug, {"status": status, "json": None, "profile": "", "path": path})
    if entry["status"] != status:
        raise TreeError(path, f"character {slug} is both active and retired")
    if extension == "md":
        entry["profile"] = load_text(data, path)
        return
    body = _valid("CHARACTER_FILE", load_json(data, path), path)
    if body.get("id", slug) != slug:
        raise TreeError(path, f"id {body['id']!r} does not match the file name {slug!r}")
    entry["json"] = body


def _storylines(tree, match, path, data):
    body = _valid("STORYLINES_FILE", load_json(data, path), path)
    seen = set()
    for line in body["storylines"]:
        if line["id"] in seen:
            raise TreeError(path, f"storyline id {line['id']} appears twice")
        seen.add(line["id"])
        line["type"] = line.get("type", "").removeprefix("type:")  # facts §15.6
    tree.storylines = body["storylines"]
    tree.storylines_meta = {key: value for key, value in body.items() if key != "storylines"}


def _memory(tree, match, path, data):
    text = load_text(data, path)
    if len(text) > STORYLINE_MEMORY_MAX_CHARS:
        raise TreeError(path, f"{len(text)} characters; storyline memory has at most {STORYLINE_MEMORY_MAX_CHARS}")
    tree.memories[match[1]] = text


def _volume_number(tree: ParsedTree, digits: str, path: str) -> int:
    """vol-01 and vol-001 are the same volume: refuse a tree that spells one volume twice."""
    number = _number(digits, path)
    seen = tree.volume_spellings.setdefault(number, digits)
    if seen != digits:
        raise TreeError(path, f"volume {number} appears as both vol-{seen} and vol-{digits}")
    return number


def _volume_file(tree, match, path, data):
    number = _volume_number(tree, match[1], path)
    volume = tree.volumes.setdefault(number, {})
    name = match[2]
    if name in ("outline.md", "review.md"):
        volume[name.removesuffix(".md")] = load_text(data, path)
    elif name == "storyline-schedule.json":
        volume["storyline_schedule"] = _schedule(_valid("STORYLINE_SCHEDULE", load_json(data, path), path))
    elif name == "foreshadowing.json":
        volume["foreshadowing_plan"] = _plan(_valid("FORESHADOWING_PLAN", load_json(data, path), path))
    else:
        volume["new_characters"] = _valid("NEW_CHARACTERS", load_json(data, path), path)


def _schedule(schedule: dict) -> dict:
    """facts §15.1: undo ``export.schedule_for_export``. Our exports write ``active_storylines`` as
    ids and keep the objects under ``storyline_roles``; put the objects back where they were."""
    active, roles = schedule.get("active_storylines"), schedule.get("storyline_roles")
    if not (isinstance(active, list) and all(isinstance(item, str) for item in active) and isinstance(roles, list)):
        return schedule
    by_id = {role["storyline_id"]: role for role in roles
             if isinstance(role, dict) and isinstance(role.get("storyline_id"), str)}
    rest = {key: value for key, value in schedule.items() if key != "storyline_roles"}
    return {**rest, "active_storylines": [by_id.get(item, item) for item in active]}


def _plan(plan: Any) -> dict:
    """facts §15.2: store one shape, with the list under both keys every reader looks in."""
    if isinstance(plan, list):
        plan = {"items": plan}
    items = plan.get("items") or plan.get("foreshadowing") or []
    return {"schema_version": 1, **plan, "items": items, "foreshadowing": items}


def _contract(tree, match, path, data):
    volume, chapter = _volume_number(tree, match[1], path), _number(match[2], path)
    body = _valid("CHAPTER_CONTRACT", load_json(data, path), path)
    if body["chapter"] != chapter:
        raise TreeError(path, f"$.chapter is {body['chapter']}, but the file is for chapter {chapter}")
    if chapter in tree.contracts:
        raise TreeError(path, f"a second contract for chapter {chapter}")
    tree.volumes.setdefault(volume, {})
    tree.contracts[chapter] = (volume, body)


def _chapter_file(tree, match, path, data):
    number = _number(match[1], path)
    if number in tree.chapters:
        raise TreeError(path, f"chapter {number} appears twice (another file has the same number)")
    text = load_text(data, path)
    title = ""
    if text.startswith("# "):
        first, _, rest = text.partition("\n")
        title, text = heading_title(first), rest.removeprefix("\n")
        tree.chapter_headings[number] = first
    if not text.strip():
        raise TreeError(path, "the chapter has no text")
    tree.chapters[number] = ParsedChapter(number=number, title=title[:200], text=text)


def _chapter_part(attribute: str, loader: Callable[[bytes, str], Any], schema: str | None = None):
    def handler(tree, match, path, data):
        chapter = _chapter(tree, _number(match[1], path), path)
        value = loader(data, path)
        if schema:
            _valid(schema, value, path)
        setattr(chapter, attribute, value)
    return handler


# Bounds of the columns the importer derives from an evaluation or a log (projects.models.chapters).
_COLUMN_BOUNDS = {"overall": (0, 5), "revisions": (0, 32767), "total_duration_ms": (0, 2**63 - 1),
                  "total_cost_usd": (0, 999_999)}


def _with_columns(attribute: str, schema: str, columns: Callable[[dict], dict]):
    """An evaluation or a log: valid JSON of its schema whose derived columns (score, gate
    metadata, duration, cost) are readable and fit their database columns."""
    def handler(tree, match, path, data):
        chapter = _chapter(tree, _number(match[1], path), path)
        value = _valid(schema, load_json(data, path), path)
        try:
            derived = columns(value)
        except (AttributeError, TypeError, ValueError, ArithmeticError) as exc:
            raise TreeError(path, f"unreadable score, gate or cost fields ({exc})") from exc
        for name, (low, high) in _COLUMN_BOUNDS.items():
            if derived.get(name) is not None and not low <= derived[name] <= high:
                raise TreeError(path, f"{name} {derived[name]} is outside {low}..{high}")
        setattr(chapter, attribute, value)
    return handler


def _current_state(tree, match, path, data):
    tree.state = _valid("STORY_STATE", load_json(data, path), path)


def _changelog(tree, match, path, data):
    tree.deltas = load_json_lines(data, path)
    for number, delta in enumerate(tree.deltas, start=1):
        _valid("STATE_DELTA", delta, f"{path}:{number}")


def _snapshot(tree, match, path, data):
    number = _number(match[1], path)
    if number in tree.snapshots:
        raise TreeError(path, f"a second final-state snapshot for volume {number}")
    tree.snapshots[number] = _valid("STORY_STATE", load_json(data, path), path)


def _global_foreshadowing(tree, match, path, data):
    body = _valid("GLOBAL_FORESHADOWING", load_json(data, path), path)
    items = body if isinstance(body, list) else body["foreshadowing"]
    if len({item["id"] for item in items}) != len(items):
        raise TreeError(path, "a foreshadowing id appears twice")
    for item in items:  # #18: an item is resolved once; a tree that recorded it twice is refused
        resolved = sorted({entry.get("chapter") for entry in item.get("history") or []
                           if isinstance(entry, dict) and entry.get("action") == "resolved"}, key=str)
        if len(resolved) > 1:
            raise TreeError(path, f"foreshadowing {item['id']} is resolved twice (chapters "
                                  f"{', '.join(map(str, resolved))}); an item is resolved once")
    tree.foreshadowing = items


def _archives(tree, match, path, data):
    archives = _valid("ARCHIVED_SUMMARIES", load_json(data, path), path)["archived_summaries"]
    seen = set()
    for index, archive in enumerate(archives):  # the table's constraints, checked before writing
        if archive["chapter_end"] < archive["chapter_start"]:
            raise TreeError(path, f"$.archived_summaries[{index}]: chapter_end {archive['chapter_end']} is before "
                                  f"chapter_start {archive['chapter_start']}")
        key = (archive["level"], archive["chapter_start"])
        if key in seen:
            raise TreeError(path, f"$.archived_summaries[{index}]: a second {key[0]} starting at chapter {key[1]}")
        seen.add(key)
    tree.archives = archives


def _facts(tree, match, path, data):
    body = load_json(data, path)
    issues = story_facts_file_issues(body)
    if issues:
        raise TreeError(path, "; ".join(issues))
    tree.facts = body["facts"]


def _voice_sample(tree, match, path, data):
    body = load_json(data, path)
    if not isinstance(body, dict):
        raise TreeError(path, "must be an object with text, source_type and file_name")
    text, source, name = body.get("text"), body.get("source_type", VoiceSource.ORIGINAL), body.get("file_name", "")
    if not isinstance(text, str) or not isinstance(name, str):
        raise TreeError(path, "$.text and $.file_name must be strings")
    if source not in VoiceSource.values:
        raise TreeError(path, f"$.source_type must be one of {', '.join(VoiceSource.values)}, not {source!r}")
    try:
        text = clean_sample_text(text)
    except InvalidData as exc:
        raise TreeError(path, f"$.text: {exc.message}") from exc
    tree.voice_sample = {"text": text, "source_type": source, "file_name": name[:200]}


# Order matters: chapters before their summaries, evaluations and logs.
HANDLERS: list[tuple[re.Pattern | str, Callable]] = [
    (paths.CHECKPOINT, _checkpoint),
    (paths.BRIEF, _brief),
    (paths.STYLE_PROFILE, _json_setting("style_profile", "STYLE_PROFILE")),
    (paths.AI_BLACKLIST, _json_setting("ai_blacklist", "AI_BLACKLIST")),
    (paths.STYLE_DRIFT, _json_setting("style_drift", "STYLE_DRIFT")),
    (paths.NOVELSITE_PROJECT, _novelsite_project),
    *platform_files.HANDLERS,
    (paths.NOVELSITE_ARCHIVES, _archives),
    (paths.NOVELSITE_FACTS, _facts),
    (paths.NOVELSITE_VOICE_SAMPLE, _voice_sample),
    (paths.RESEARCH_RE, _research),
    (paths.WORLD_RULES, _world_rules),
    (paths.WORLD_DOC_RE, _world_doc),
    (paths.CHARACTER_RE, _character),
    (paths.RELATIONSHIPS, _json_setting("relationships", "OPAQUE_JSON")),
    (paths.STORYLINES, _storylines),
    (paths.STORYLINE_SPEC, _json_setting("storyline_spec", "STORYLINE_SPEC")),
    (paths.MEMORY_RE, _memory),
    (paths.VOLUME_FILE_RE, _volume_file),
    (paths.CONTRACT_RE, _contract),
    (paths.CHAPTER_RE, _chapter_file),
    (paths.SUMMARY_RE, _chapter_part("summary", load_text)),
    (paths.EVALUATION_RE, _with_columns("evaluation", "EVALUATION", evaluation_columns)),
    (paths.LOG_RE, _with_columns("log", "CHAPTER_LOG", chapter_log_columns)),
    (paths.CURRENT_STATE, _current_state),
    (paths.STATE_CHANGELOG, _changelog),
    (paths.SNAPSHOT_RE, _snapshot),
    (paths.GLOBAL_FORESHADOWING, _global_foreshadowing),
]


def _match(rule: re.Pattern | str, path: str):
    if isinstance(rule, str):
        return (path,) if path == rule else None
    return rule.match(path)


def _dispatch(tree: ParsedTree, path: str, data: bytes) -> None:
    if path in paths.GENERATED:
        tree.extra_files[path] = load_text(data, path)  # kept as the head of the generated changelog
        return
    for prefix, pattern in paths.STRICT_DIRS.items():
        if path.startswith(prefix) and not pattern.match(path):
            raise TreeError(path, f"malformed file name in {prefix} (expected e.g. {prefix}chapter-001…)")
    for rule, handler in HANDLERS:
        match = _match(rule, path)
        if match:
            handler(tree, match, path, data)
            return
    _keep(tree, path, data)


def file_meaning(path: str, data: bytes) -> str | None:
    """What an import reads from this one file, as one text: two files with the same meaning import
    the same, however differently they are written (a bare list or an object, ``type:main_arc`` or
    ``main_arc``, a checkpoint with or without the state its legacy fields imply). None when the
    file does not parse on its own."""
    tree = ParsedTree()
    try:
        _dispatch(tree, path, data)
    except TreeError:
        return None
    if tree.checkpoint is not None:
        tree.checkpoint = {"orchestrator_state": legacy_state(tree.checkpoint), **tree.checkpoint}
    read = {f.name: getattr(tree, f.name) for f in fields(tree) if f.name not in ("kept", "warnings")}
    return json.dumps(read, ensure_ascii=False, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, ParsedChapter):
        return asdict(value)
    raise TypeError(f"{type(value).__name__} is not plain data")


def _keep(tree: ParsedTree, path: str, data: bytes) -> None:
    """A file Novelsite does not model: checked for readability, kept verbatim, reported."""
    if path.endswith(".jsonl"):
        load_json_lines(data, path)
    elif path.endswith(".json"):
        load_json(data, path)
    tree.extra_files[path] = decode_exact(data, path)
    tree.kept.append(path)


def _order(path: str) -> tuple[int, str]:
    for index, (rule, _handler) in enumerate(HANDLERS):
        if _match(rule, path):
            return index, path
    return len(HANDLERS), path


def parse_tree(source: TreeSource) -> ParsedTree:
    tree = ParsedTree()
    for path in sorted(source.files, key=_order):
        _dispatch(tree, path, source.files[path])
    _cross_check(tree)
    return tree


# --- rules that span files ---------------------------------------------------------------------------


def _cross_check(tree: ParsedTree) -> None:
    for slug, entry in tree.characters.items():
        if entry["json"] is None:
            raise TreeError(entry["path"], f"characters/{entry['status']}/{slug}.json is missing "
                                           "(a character needs display_name and contracts[])")
    known_lines = {line["id"] for line in tree.storylines}
    for slug in tree.memories:
        if slug not in known_lines:
            raise TreeError(paths.memory_path(slug), f"memory of storyline {slug!r}, which storylines.json lacks")
    _check_state(tree)
    if tree.state is None and tree.deltas:
        tree.state = tree.replayed_state


def _check_state(tree: ParsedTree) -> None:
    """Every changelog delta must pass the patch engine, in order, from the empty state."""
    try:
        state = replay(tree.deltas)
    except PatchError as exc:
        line = exc.extra.get("delta_index", 0) + 1
        raise TreeError(f"{paths.STATE_CHANGELOG}:{line}", f"the patch engine refuses this delta: "
                                                          f"{exc.message}") from exc
    tree.replayed_state = state
    if tree.state is not None and tree.deltas and _without_mirror(tree.state) != _without_mirror(state):
        tree.warnings.append(f"{paths.CURRENT_STATE} differs from the state replayed from {paths.STATE_CHANGELOG}; "
                             "the current state file was kept")
    if tree.state is not None and tree.state["state_version"] < len(tree.deltas):
        raise TreeError(paths.CURRENT_STATE, f"state_version {tree.state['state_version']} is older than the "
                                             f"{len(tree.deltas)} deltas of the changelog")


def _without_mirror(state: dict) -> dict:
    """The state without ``active_foreshadowing``, which Novelsite keeps in step with foreshadow ops
    and the tool leaves as it is: a tool tree's state is not "different" for that alone."""
    return {key: value for key, value in state.items() if key != "active_foreshadowing"}


def chapter_storyline(tree: ParsedTree, number: int) -> str | None:
    """Which line a chapter belongs to: novelsite/project.json, else its summary, else its contract."""
    overrides = tree.project.get("chapter_storylines", {})
    if str(number) in overrides:
        return overrides[str(number)]
    summary = tree.chapters[number].summary
    found = STORYLINE_LINE_RE.search(summary) if summary else None
    if found:
        return found[1]
    contract = tree.contracts.get(number)
    return contract[1].get("storyline_id") if contract else None


def chapter_volume(tree: ParsedTree, number: int) -> int:
    """novelsite/project.json, else the volume holding the chapter's contract, else 30 a volume."""
    overrides = tree.project.get("chapter_volumes", {})
    if str(number) in overrides:
        return overrides[str(number)]
    contract = tree.contracts.get(number)
    return contract[0] if contract else volume_for_chapter(number)
