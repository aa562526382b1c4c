"""NOVEL_ASK gates (seed 003; facts §14, §1). Pure Python, no ORM.

* ``validate_question_spec`` / ``validate_answer_spec``: the QuestionSpec and AnswerSpec rules (§14.2, §14.3).
* ``check_answer``: an AnswerSpec against its QuestionSpec (§14.4).
* ``validate_answer_path`` / ``validate_gate_wiring``: safe project-relative paths and gate wiring (§1, §14.5).
* ``validate_instruction_packet``: the InstructionPacket shape (§14.1).
* ``answer_spec``: builds a valid AnswerSpec; ``parse_step_id`` / ``format_step_id``: the step id grammar (§1).

Validators return messages ``"<field path>: <problem>"`` (e.g. ``questions[1].options[0].label: must be a
non-empty string``); an empty list means valid. As in the CLI, "non-empty string" means non-empty after trim.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from projects.vocabulary import CHAPTER_STEP_STAGES, STEP_PHASES

# --- Vocabulary (facts §1, §14) --------------------------------------------------------------------
SNAKE_CASE_ID = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", re.ASCII)  # facts §1, used with fullmatch
RFC3339 = re.compile(  # facts §14.3 rule 3, used with fullmatch (so a trailing "\n" does not slip through)
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-](\d{2}):(\d{2}))", re.ASCII)
QUESTION_KINDS = ("single_choice", "multi_choice", "free_text")
QUESTION_SPEC_KEYS = frozenset({"version", "topic", "questions"})
FREE_TEXT_KEYS = frozenset({"id", "header", "question", "kind", "required"})
CHOICE_KEYS = FREE_TEXT_KEYS | {"options", "allow_other", "default"}
OPTION_KEYS = frozenset({"label", "description"})
ANSWER_SPEC_KEYS = frozenset({"version", "topic", "answers", "answered_at", "answered_by"})

AGENT_NAMES: dict[str, tuple[str, ...]] = {  # facts §14.1
    "subagent": ("world-builder", "character-weaver", "style-analyzer", "plot-architect", "chapter-writer",
                 "summarizer", "style-refiner", "quality-judge", "consistency-auditor"),
    "cli": ("volume-review", "manual-review", "novel"),
}
PACKET_KEYS = frozenset({"version", "step", "agent", "novel_ask", "answer_path", "manifest", "expected_outputs",
                         "next_actions"})
MANIFEST_MODES = ("paths", "paths+embed")
BRIEF_PREVIEW_MAX = 2000  # `--embed brief`: the first 2000 chars of brief.md (facts §14.1)

Errors = list[str]


# --- Small helpers ---------------------------------------------------------------------------------
def _at(prefix: str, field: str) -> str:
    """Join a field path: ``_at("questions[0]", "id")`` -> ``questions[0].id``."""
    return field if not prefix else f"{prefix}.{field}"


def _is_obj(value: Any) -> bool:
    return isinstance(value, dict)  # a JSON object ("plain object")


def _is_int(value: Any) -> bool:
    """A JS integer: ``1`` or ``1.0``, never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _is_pos_int(value: Any) -> bool:
    return _is_int(value) and value >= 1


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _dedupe(errors: Errors) -> Errors:
    return list(dict.fromkeys(errors))  # the same message from two rule families appears once


def _unknown_keys(obj: Mapping[str, Any], allowed: frozenset[str], at: str, why: str = "") -> Errors:
    """Unknown fields; keys starting with "_" are ignored (facts §14.2 rule 1)."""
    return [f"{_at(at, str(key))}: unknown field{why}" for key in obj
            if not str(key).startswith("_") and key not in allowed]


def _check(obj: Mapping[str, Any], key: str, at: str, ok: Callable[[Any], bool], problem: str) -> Errors:
    """A mandatory field: ``is required`` when missing, ``problem`` when ``ok`` rejects its value."""
    if key not in obj:
        return [f"{_at(at, key)}: is required"]
    return [] if ok(obj[key]) else [f"{_at(at, key)}: {problem}"]


def _string_list_errors(value: Any, at: str, labels: list[str] | None = None) -> Errors:
    """A non-empty array of unique non-empty strings, each one of ``labels`` when given."""
    if not isinstance(value, list) or not value:
        return [f"{at}: must be a non-empty array of unique non-empty strings"]
    errors: Errors = []
    seen: set[str] = set()
    for i, item in enumerate(value):
        if not _is_text(item):
            errors.append(f"{at}[{i}]: must be a non-empty string")
            continue
        if item in seen:
            errors.append(f"{at}[{i}]: duplicate entry {item!r}")
        elif labels is not None and item not in labels:
            errors.append(f"{at}[{i}]: must be one of the option labels ({', '.join(labels)})")
        seen.add(item)
    return errors


# --- QuestionSpec (facts §14.2) --------------------------------------------------------------------
def validate_question_spec(spec: Any) -> Errors:
    """All violations of facts §14.2 rules 1–11 (field paths relative to the spec root)."""
    return _question_spec_errors(spec, "")


def _question_spec_errors(spec: Any, at: str) -> Errors:
    if not _is_obj(spec):  # rule 1
        return [f"{at or 'question_spec'}: must be a plain object"]
    errors = _unknown_keys(spec, QUESTION_SPEC_KEYS, at)
    errors += _check(spec, "version", at, _is_pos_int, "must be an integer >= 1")  # rule 2
    errors += _check(spec, "topic", at, _is_text, "must be a non-empty string")  # rule 3
    questions = spec.get("questions")
    if "questions" not in spec:  # rule 4
        errors.append(f"{_at(at, 'questions')}: is required")
    elif not isinstance(questions, list) or not questions:
        errors.append(f"{_at(at, 'questions')}: must be a non-empty array of question objects")
    else:
        seen_ids: set[str] = set()
        for i, question in enumerate(questions):
            errors += _question_errors(question, _at(at, f"questions[{i}]"), seen_ids)
    return errors


def _question_errors(q: Any, at: str, seen_ids: set[str]) -> Errors:
    if not _is_obj(q):  # rule 4
        return [f"{at}: must be a plain object"]
    errors = _check(q, "id", at, _is_text, "must be a non-empty string")  # rule 5
    qid = q.get("id")
    if _is_text(qid):
        if not SNAKE_CASE_ID.fullmatch(qid):
            errors.append(f"{at}.id: must be snake_case (^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$)")
        elif qid in seen_ids:
            errors.append(f"{at}.id: duplicate question id {qid!r}")
        seen_ids.add(qid)
    errors += _check(q, "header", at, _is_text, "must be a non-empty string")  # rule 6
    errors += _check(q, "question", at, _is_text, "must be a non-empty string")
    errors += _check(q, "kind", at, lambda k: k in QUESTION_KINDS,  # rule 7
                     f"must be one of {', '.join(QUESTION_KINDS)}")
    errors += _check(q, "required", at, _is_bool, "must be a boolean")
    kind = q.get("kind")
    if kind == "free_text":  # rule 8
        return errors + _unknown_keys(q, FREE_TEXT_KEYS, at, " (not allowed on free_text questions)")
    errors += _unknown_keys(q, CHOICE_KEYS, at)  # rule 9 (also when kind is invalid: the widest key set)
    if kind in ("single_choice", "multi_choice"):
        errors += _choice_errors(q, at, kind)
    return errors


def _choice_errors(q: Mapping[str, Any], at: str, kind: str) -> Errors:
    errors: Errors = []
    labels: list[str] | None = None  # None: options unusable, so defaults are not checked against them
    options = q.get("options")
    if "options" not in q:  # rule 9
        errors.append(f"{at}.options: is required")
    elif not isinstance(options, list) or not options:
        errors.append(f"{at}.options: must be a non-empty array of {{label, description}} objects")
    else:
        labels = []
        for j, option in enumerate(options):
            oat = f"{at}.options[{j}]"
            if not _is_obj(option):
                errors.append(f"{oat}: must be a plain object")
                continue
            errors += _unknown_keys(option, OPTION_KEYS, oat)
            errors += _check(option, "label", oat, _is_text, "must be a non-empty string")
            errors += _check(option, "description", oat, _is_text, "must be a non-empty string")
            label = option.get("label")
            if _is_text(label):
                if label in labels:
                    errors.append(f"{oat}.label: duplicate option label {label!r}")
                else:
                    labels.append(label)
    if "allow_other" in q and not _is_bool(q["allow_other"]):
        errors.append(f"{at}.allow_other: must be a boolean")
    if "default" in q:
        default, dat = q["default"], f"{at}.default"
        if kind == "single_choice":  # rule 10
            if not _is_text(default):
                errors.append(f"{dat}: must be a non-empty string")
            elif labels is not None and default not in labels:
                errors.append(f"{dat}: must be one of the option labels ({', '.join(labels)})")
        else:  # rule 11
            errors += _string_list_errors(default, dat, labels)
    return errors


# --- AnswerSpec (facts §14.3) ----------------------------------------------------------------------
def validate_answer_spec(answer: Any) -> Errors:
    """All violations of facts §14.3 rules 1–4."""
    if not _is_obj(answer):  # rule 1
        return ["answer_spec: must be a plain object"]
    errors = _unknown_keys(answer, ANSWER_SPEC_KEYS, "")
    errors += _check(answer, "version", "", _is_pos_int, "must be an integer >= 1")  # rule 2
    errors += _check(answer, "topic", "", _is_text, "must be a non-empty string")
    errors += _check(answer, "answered_by", "", _is_text, "must be a non-empty string")
    errors += _check(answer, "answered_at", "", lambda v: isinstance(v, str) and RFC3339.fullmatch(v) is not None,
                     "must be an RFC 3339 date-time YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)")  # rule 3
    if isinstance(answer.get("answered_at"), str) and not _is_real_datetime(answer["answered_at"]):
        errors.append("answered_at: must be a real date and time (month, day, hour, minute, second, offset)")
    answers = answer.get("answers")
    if "answers" not in answer:  # rule 4
        errors.append("answers: is required")
    elif not _is_obj(answers):
        errors.append("answers: must be a plain object")
    else:
        for key, value in answers.items():
            if not (isinstance(key, str) and SNAKE_CASE_ID.fullmatch(key)):  # so "_x" is an error here
                errors.append(f"answers.{key}: key must be snake_case (^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$)")
            if isinstance(value, list):
                errors += _string_list_errors(value, f"answers.{key}")
            elif not _is_text(value):
                errors.append(f"answers.{key}: must be a non-empty string or a non-empty array of unique "
                              "non-empty strings")
    return errors


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _is_real_datetime(text: str) -> bool:
    """A real calendar date and time (no month 13, no Feb 30; facts §14.3 rule 3 "Date.parse is finite").
    24:00:00 (ECMAScript end of day) is accepted only with zero minutes, seconds and fraction."""
    match = RFC3339.fullmatch(text)
    if match is None:
        return True  # not this rule's business: the regex rule reports it
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, tz_hour, tz_minute = match.group(7) or "", match.group(9), match.group(10)
    if not 1 <= month <= 12 or not 1 <= day <= _days_in_month(year, month):
        return False
    if hour == 24:
        time_ok = minute == 0 and second == 0 and fraction.strip("0") == ""
    else:
        time_ok = hour <= 23 and minute <= 59 and second <= 59
    offset_ok = tz_hour is None or (int(tz_hour) <= 23 and int(tz_minute) <= 59)
    return time_ok and offset_ok


# --- Cross-check (facts §14.4) ---------------------------------------------------------------------
def check_answer(answer: Any, question_spec: Any) -> Errors:
    """validate_answer_spec's errors, the question spec's own errors (``question_spec.``-prefixed), then
    the §14.4 cross-check (only when the question spec is valid)."""
    errors = validate_answer_spec(answer)
    spec_errors = _question_spec_errors(question_spec, "question_spec")
    if spec_errors or not _is_obj(answer):
        return _dedupe(errors + spec_errors)
    if answer.get("version") != question_spec["version"]:
        errors.append(f"version: must equal the question spec version ({question_spec['version']})")
    if answer.get("topic") != question_spec["topic"]:
        errors.append(f"topic: must equal the question spec topic ({question_spec['topic']!r})")
    answers = answer.get("answers")
    if not _is_obj(answers):
        return _dedupe(errors)
    questions = {q["id"]: q for q in question_spec["questions"]}
    errors += [f"answers.{key}: does not match any question id" for key in answers if key not in questions]
    for qid, q in questions.items():
        errors += _answer_value_errors(q, answers, f"answers.{qid}")
    return _dedupe(errors)


def _answer_value_errors(q: Mapping[str, Any], answers: Mapping[str, Any], at: str) -> Errors:
    if q["id"] not in answers:
        return [f"{at}: required question is not answered"] if q["required"] else []
    value, kind = answers[q["id"]], q["kind"]
    labels = None if q.get("allow_other") is True else [o["label"] for o in q.get("options", [])]
    if kind == "multi_choice":
        return _string_list_errors(value, at, labels)
    if not _is_text(value):  # free_text and single_choice
        return [f"{at}: must be a non-empty string"]
    if kind == "single_choice" and labels is not None and value not in labels:
        return [f"{at}: must be one of the option labels ({', '.join(labels)})"]
    return []


# --- answer_path and gate wiring (facts §1 safe-path rules, §14.5) ---------------------------------
def validate_answer_path(path: Any, *, field: str = "answer_path", root: str | os.PathLike[str] | None = None
                         ) -> Errors:
    """``resolveProjectRelativePath`` + ``rejectPathTraversalInput`` (facts §1). With ``root``, also the
    symlink-aware containment check (realpath of the target, or of its nearest existing ancestor)."""
    if not _is_text(path):
        return [f"{field}: must be a non-empty string"]
    if "\x00" in path:
        return [f"{field}: must not contain NUL characters"]
    normalized = path.replace("\\", "/")  # rejectPathTraversalInput: "\" -> "/"
    if normalized.startswith("/") or re.match(r"[A-Za-z]:", normalized):  # POSIX, UNC, "\x", "C:"
        return [f"{field}: must be a project-relative path, not an absolute one"]
    if ".." in normalized.split("/"):  # empty and "." segments are allowed, as in the CLI
        return [f"{field}: must not contain '..' path traversal segments"]
    if root is not None and not _stays_inside(os.fspath(root), normalized):
        return [f"{field}: resolves outside the project root"]
    return []


def _stays_inside(root: str, relative: str) -> bool:
    root_real = os.path.realpath(root)
    target = os.path.normpath(os.path.join(root, relative))
    probe = target
    while not os.path.exists(probe):  # a write target: check its nearest existing ancestor
        parent = os.path.dirname(probe)
        if parent == probe:
            return True
        probe = parent
    real = os.path.realpath(probe)
    return os.path.commonpath([root_real, real]) == root_real


def validate_gate_wiring(step: str, novel_ask: dict[str, Any] | None, answer_path: str | None, *,
                         root: str | os.PathLike[str] | None = None) -> Errors:
    """facts §14.5; ``None`` means absent."""
    return _gate_errors(step, novel_ask is not None, novel_ask, answer_path is not None, answer_path, root)


def _gate_errors(step: Any, has_ask: bool, novel_ask: Any, has_path: bool, answer_path: Any,
                 root: str | os.PathLike[str] | None) -> Errors:
    if not has_ask and not has_path:
        return []
    errors: Errors = []
    if not has_path:
        errors.append("answer_path: is required when novel_ask is present")
    if not has_ask:
        errors.append("novel_ask: is required when answer_path is present")
    if step is not None:
        errors += _step_errors(step)
    if isinstance(step, str) and step.strip().split(":", 1)[0] == "review":
        errors.append(f"step: NOVEL_ASK gates are not allowed on review:* steps ({step!r})")
    if has_path:
        errors += validate_answer_path(answer_path, root=root)
    if has_ask:
        errors += _question_spec_errors(novel_ask, "novel_ask")
    return _dedupe(errors)


# --- Step ids (facts §1) ---------------------------------------------------------------------------
class StepId(NamedTuple):
    kind: str  # chapter | volume | quickstart | review
    chapter: int | None  # chapter steps only
    phase: str  # the chapter stage, or the volume/quickstart/review phase


def parse_step_id(step: str) -> StepId:
    """``chapter:7:draft`` -> ``StepId("chapter", 7, "draft")``; ValueError for a malformed id."""
    if not isinstance(step, str):
        raise ValueError(f"invalid step id {step!r}: must be a string")
    parts = step.strip().split(":")  # the CLI trims too
    if len(parts) == 3 and parts[0] == "chapter":
        raw, stage = parts[1], parts[2]
        if not re.fullmatch(r"[0-9]+", raw):
            raise ValueError(f"invalid step id {step!r}: chapter must be all digits")
        if int(raw) < 1:
            raise ValueError(f"invalid step id {step!r}: chapter must be >= 1")
        if stage not in CHAPTER_STEP_STAGES:
            raise ValueError(f"invalid step id {step!r}: stage must be one of {', '.join(CHAPTER_STEP_STAGES)}")
        return StepId("chapter", int(raw), stage)
    if len(parts) == 2 and parts[0] in STEP_PHASES:
        kind, phase = parts
        if phase not in STEP_PHASES[kind]:
            raise ValueError(f"invalid step id {step!r}: {kind} phase must be one of {', '.join(STEP_PHASES[kind])}")
        return StepId(kind, None, phase)
    raise ValueError(f"invalid step id {step!r}: expected chapter:NNN:<stage>, volume:<phase>, "
                     "quickstart:<phase> or review:<phase>")


def format_step_id(kind: str, chapter: int | None, phase: str) -> str:
    """The canonical id (chapter 3-digit padded); ``format_step_id(*parse_step_id(s))`` round-trips."""
    if kind == "chapter":
        if isinstance(chapter, bool) or not isinstance(chapter, int) or chapter < 1:
            raise ValueError(f"invalid chapter {chapter!r}: must be an integer >= 1")
        text = f"chapter:{chapter:03d}:{phase}"
    elif chapter is not None:
        raise ValueError(f"invalid step: a {kind} step has no chapter (got {chapter!r})")
    else:
        text = f"{kind}:{phase}"
    if parse_step_id(text) != (kind, chapter, phase):  # e.g. stray whitespace in kind or phase
        raise ValueError(f"invalid step id {text!r}")
    return text


def _step_errors(step: Any) -> Errors:
    try:
        parse_step_id(step)
    except ValueError as exc:
        return [f"step: {exc}"]
    return []


# --- AnswerSpec builder ----------------------------------------------------------------------------
def answer_spec(*, question_spec: Mapping[str, Any], answers: Mapping[str, Any], answered_by: str,
                answered_at: datetime) -> dict[str, Any]:
    """A valid AnswerSpec for ``question_spec``; ValueError (listing the problems) otherwise.

    ``None`` and empty-list answers are left out: an optional multi_choice with no selection must not be
    written at all (seed 003)."""
    spec_errors = validate_question_spec(question_spec)
    if spec_errors:
        raise ValueError("invalid question spec: " + "; ".join(spec_errors))
    offset = answered_at.utcoffset() if isinstance(answered_at, datetime) else None
    if offset is None:
        raise ValueError("answered_at: must be a timezone-aware datetime")
    if offset % timedelta(minutes=1):
        raise ValueError("answered_at: the UTC offset must be whole minutes (RFC 3339 ±HH:MM)")
    micro = answered_at.microsecond
    precision = "seconds" if not micro else "milliseconds" if micro % 1000 == 0 else "microseconds"
    record = {
        "version": question_spec["version"],
        "topic": question_spec["topic"],
        "answers": {key: list(value) if isinstance(value, (list, tuple)) else value
                    for key, value in answers.items() if value is not None and value != [] and value != ()},
        "answered_at": answered_at.isoformat(timespec=precision),  # e.g. 2026-11-22T10:00:00+08:00
        "answered_by": answered_by,
    }
    errors = check_answer(record, question_spec)
    if errors:
        raise ValueError("invalid answers: " + "; ".join(errors))
    return record


# --- InstructionPacket (facts §14.1) ---------------------------------------------------------------
def validate_instruction_packet(packet: Any, *, root: str | os.PathLike[str] | None = None) -> Errors:
    """The exact packet shape of facts §14.1 plus the gate rules of §14.5 ("_" keys are ignored)."""
    if not _is_obj(packet):
        return ["packet: must be a plain object"]
    errors = _unknown_keys(packet, PACKET_KEYS, "")
    errors += _check(packet, "version", "", lambda v: _is_int(v) and v == 1, "must be 1")
    errors += ["step: is required"] if "step" not in packet else _step_errors(packet["step"])
    for key, section_errors in (("agent", _agent_errors), ("manifest", _manifest_errors)):
        errors += [f"{key}: is required"] if key not in packet else section_errors(packet[key])
    outputs = packet.get("expected_outputs")
    errors += _entries_errors(packet, "expected_outputs", {"path", "required", "note"}, {
        "path": (_is_text, "must be a non-empty string"), "required": (_is_bool, "must be a boolean")})
    errors += _entries_errors(packet, "next_actions", {"kind", "command", "note"}, {
        "kind": (lambda v: v == "command", "must be 'command'"),
        "command": (_is_text, "must be a non-empty string")})
    has_ask, has_path = "novel_ask" in packet, "answer_path" in packet
    errors += _gate_errors(packet.get("step"), has_ask, packet.get("novel_ask"), has_path,
                           packet.get("answer_path"), root)
    if has_ask and has_path and isinstance(outputs, list):  # the answer path is prepended (facts §14.5)
        first = outputs[0] if outputs else None
        if not (_is_obj(first) and first.get("path") == packet["answer_path"] and first.get("required") is True):
            errors.append("expected_outputs[0]: must be {path: answer_path, required: true} when a NOVEL_ASK "
                          "gate is present")
    return _dedupe(errors)


def _agent_errors(agent: Any) -> Errors:
    if not _is_obj(agent):
        return ["agent: must be a plain object"]
    errors = _unknown_keys(agent, frozenset({"kind", "name"}), "agent")
    errors += _check(agent, "kind", "agent", lambda k: k in AGENT_NAMES, "must be one of subagent, cli")
    names = AGENT_NAMES.get(agent.get("kind"), AGENT_NAMES["subagent"] + AGENT_NAMES["cli"])
    errors += _check(agent, "name", "agent", lambda n: n in names,
                     f"must be one of {', '.join(names)}" + (f" for kind {agent['kind']!r}"
                                                             if agent.get("kind") in AGENT_NAMES else ""))
    return errors


def _manifest_errors(manifest: Any) -> Errors:
    if not _is_obj(manifest):
        return ["manifest: must be a plain object"]
    errors = _unknown_keys(manifest, frozenset({"mode", "inline", "paths", "embed"}), "manifest")
    errors += _check(manifest, "mode", "manifest", lambda m: m in MANIFEST_MODES, "must be one of paths, paths+embed")
    errors += _check(manifest, "inline", "manifest", _is_obj, "must be a plain object")
    errors += _check(manifest, "paths", "manifest", _is_obj, "must be a plain object")
    mode, embed = manifest.get("mode"), manifest.get("embed")
    if mode == "paths+embed" and "embed" not in manifest:
        errors.append("manifest.embed: is required when manifest.mode is 'paths+embed'")
    if mode == "paths" and "embed" in manifest:
        errors.append("manifest.embed: must be absent when manifest.mode is 'paths'")
    if "embed" in manifest and not _is_obj(embed):
        errors.append("manifest.embed: must be a plain object")
    elif _is_obj(embed) and "brief_preview" in embed:
        preview = embed["brief_preview"]
        if not (preview is None or (isinstance(preview, str) and len(preview) <= BRIEF_PREVIEW_MAX)):
            errors.append(f"manifest.embed.brief_preview: must be null or a string of at most "
                          f"{BRIEF_PREVIEW_MAX} characters")
    return errors


def _entries_errors(packet: Mapping[str, Any], key: str, allowed: set[str],
                    rules: dict[str, tuple[Callable[[Any], bool], str]]) -> Errors:
    """expected_outputs / next_actions: an array of objects with the given fields and an optional note."""
    if key not in packet:
        return [f"{key}: is required"]
    entries = packet[key]
    if not isinstance(entries, list):
        return [f"{key}: must be an array"]
    errors: Errors = []
    for i, entry in enumerate(entries):
        at = f"{key}[{i}]"
        if not _is_obj(entry):
            errors.append(f"{at}: must be a plain object")
            continue
        errors += _unknown_keys(entry, frozenset(allowed), at)
        for field, (ok, problem) in rules.items():
            errors += _check(entry, field, at, ok, problem)
        if "note" in entry and not isinstance(entry["note"], str):
            errors.append(f"{at}.note: must be a string")
    return errors
