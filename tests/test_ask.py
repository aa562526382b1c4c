"""pipeline.questions.spec: NOVEL_ASK QuestionSpec / AnswerSpec / cross-check / answer_path / gate wiring / step ids /
InstructionPacket (seed 003; facts §1, §14). Every rule: one valid case and one invalid case whose message
names the field."""
from __future__ import annotations

import copy
import os
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.questions.spec import (
    StepId, answer_spec, check_answer, format_step_id, parse_step_id, validate_answer_path, validate_answer_spec,
    validate_gate_wiring, validate_instruction_packet, validate_question_spec,
)

DELETE = object()
CST = timezone(timedelta(hours=8))


def mutate(doc: Any, *edits: tuple[tuple, Any]) -> Any:
    """A deep copy of ``doc`` with each (path, value) applied; value DELETE removes the key."""
    doc = copy.deepcopy(doc)
    for path, value in edits:
        target = doc
        for part in path[:-1]:
            target = target[part]
        if value is DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
    return doc


def question_spec() -> dict:
    """The facts §14.5 example topic, with the seed's platform question plus a multi_choice and a free_text."""
    return {
        "version": 1,
        "topic": "init.platform_binding",
        "questions": [
            {"id": "platform", "header": "Platform", "question": "你准备发布到哪个平台？", "kind": "single_choice",
             "required": True, "default": "qidian",
             "options": [{"label": "qidian", "description": "起点"}, {"label": "jjwxc", "description": "晋江"},
                         {"label": "web", "description": "自建站/博客"}]},
            {"id": "genres", "header": "Genres", "question": "题材？", "kind": "multi_choice", "required": False,
             "options": [{"label": "xianxia", "description": "仙侠"}, {"label": "urban", "description": "都市"}],
             "default": ["xianxia"]},
            {"id": "pen_name", "header": "Pen name", "question": "笔名？", "kind": "free_text", "required": True},
        ],
    }


def answer() -> dict:
    return {"version": 1, "topic": "init.platform_binding",
            "answers": {"platform": "qidian", "genres": ["xianxia", "urban"], "pen_name": "北冥"},
            "answered_at": "2026-02-27T10:12:34.000Z", "answered_by": "human"}


SEED_PACKET = {  # seed 003, step 1 (topic "platform binding")
    "version": 1,
    "step": "chapter:048:draft",
    "agent": {"kind": "subagent", "name": "chapter-writer"},
    "manifest": {"mode": "paths", "inline": {}, "paths": {}},
    "novel_ask": {"version": 1, "topic": "platform binding", "questions": [
        {"id": "platform", "header": "Platform", "question": "你准备发布到哪个平台？", "kind": "single_choice",
         "required": True, "default": "qidian",
         "options": [{"label": "qidian", "description": "起点"}, {"label": "jjwxc", "description": "晋江"},
                     {"label": "web", "description": "自建站/博客"}]}]},
    "answer_path": "staging/novel-ask/chapter-048-draft.answers.json",
    "expected_outputs": [
        {"path": "staging/novel-ask/chapter-048-draft.answers.json", "required": True,
         "note": "AnswerSpec JSON record for the NOVEL_ASK gate (written before main step execution)."},
        {"path": "staging/chapters/chapter-048.md", "required": True},
    ],
    "next_actions": [{"kind": "command", "command": "novel validate chapter:048:draft"},
                     {"kind": "command", "command": "novel advance chapter:048:draft"}],
}
SEED_ANSWER = {"version": 1, "topic": "platform binding", "answers": {"platform": "qidian"},
               "answered_at": "2026-02-27T10:12:34.000Z", "answered_by": "claude_code"}

SNAKE = "must be snake_case (^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$)"
PLATFORM_LABELS = "must be one of the option labels (qidian, jjwxc, web)"
GENRE_LABELS = "must be one of the option labels (xianxia, urban)"
STRINGS = "must be a non-empty array of unique non-empty strings"

# --- QuestionSpec (facts §14.2) --------------------------------------------------------------------


def test_examples_are_valid_question_specs():
    assert validate_question_spec(question_spec()) == []
    assert validate_question_spec(SEED_PACKET["novel_ask"]) == []


@pytest.mark.parametrize("edits", [
    pytest.param([(("_comment",), "ignored")], id="r1-underscore-root-key"),
    pytest.param([(("version",), 2)], id="r2-version-2"),
    pytest.param([(("version",), 1.0)], id="r2-version-json-1.0"),
    pytest.param([(("topic",), "platform binding")], id="r3-seed-topic"),
    pytest.param([(("questions", 0, "id"), "platform_2")], id="r5-snake-digits"),
    pytest.param([(("questions", 0, "required"), False)], id="r7-required-false"),
    pytest.param([(("questions", 2, "_hint"), "x")], id="r8-free-text-underscore-key"),
    pytest.param([(("questions", 0, "allow_other"), True)], id="r9-allow-other"),
    pytest.param([(("questions", 0, "options", 0, "_note"), "x")], id="r9-option-underscore-key"),
    pytest.param([(("questions", 0, "default"), DELETE)], id="r10-no-default"),
    pytest.param([(("questions", 1, "default"), ["urban", "xianxia"])], id="r11-multi-default"),
])
def test_question_spec_valid_variants(edits):
    assert validate_question_spec(mutate(question_spec(), *edits)) == []


@pytest.mark.parametrize("edits, message", [
    ([(("extra",), 1)], "extra: unknown field"),
    ([(("version",), 0)], "version: must be an integer >= 1"),
    ([(("version",), "1")], "version: must be an integer >= 1"),
    ([(("version",), True)], "version: must be an integer >= 1"),
    ([(("version",), 1.5)], "version: must be an integer >= 1"),
    ([(("version",), DELETE)], "version: is required"),
    ([(("topic",), "   ")], "topic: must be a non-empty string"),
    ([(("topic",), 7)], "topic: must be a non-empty string"),
    ([(("questions",), [])], "questions: must be a non-empty array of question objects"),
    ([(("questions",), {"id": "x"})], "questions: must be a non-empty array of question objects"),
    ([(("questions", 1), "genres")], "questions[1]: must be a plain object"),
    ([(("questions", 0, "id"), "Platform")], f"questions[0].id: {SNAKE}"),
    ([(("questions", 0, "id"), "1platform")], f"questions[0].id: {SNAKE}"),
    ([(("questions", 0, "id"), "plat__form")], f"questions[0].id: {SNAKE}"),
    ([(("questions", 0, "id"), "platform\n")], f"questions[0].id: {SNAKE}"),
    ([(("questions", 0, "id"), "")], "questions[0].id: must be a non-empty string"),
    ([(("questions", 1, "id"), "platform")], "questions[1].id: duplicate question id 'platform'"),
    ([(("questions", 0, "header"), " ")], "questions[0].header: must be a non-empty string"),
    ([(("questions", 2, "question"), DELETE)], "questions[2].question: is required"),
    ([(("questions", 0, "kind"), "dropdown")],
     "questions[0].kind: must be one of single_choice, multi_choice, free_text"),
    ([(("questions", 0, "required"), "yes")], "questions[0].required: must be a boolean"),
    ([(("questions", 2, "required"), DELETE)], "questions[2].required: is required"),
    ([(("questions", 2, "options"), [{"label": "a", "description": "b"}])],
     "questions[2].options: unknown field (not allowed on free_text questions)"),
    ([(("questions", 2, "default"), "x")], "questions[2].default: unknown field (not allowed on free_text questions)"),
    ([(("questions", 0, "placeholder"), "x")], "questions[0].placeholder: unknown field"),
    ([(("questions", 0, "options"), DELETE)], "questions[0].options: is required"),
    ([(("questions", 1, "options"), [])],
     "questions[1].options: must be a non-empty array of {label, description} objects"),
    ([(("questions", 0, "options", 1), "jjwxc")], "questions[0].options[1]: must be a plain object"),
    ([(("questions", 0, "options", 0, "value"), "q")], "questions[0].options[0].value: unknown field"),
    ([(("questions", 1, "options", 0, "label"), "")], "questions[1].options[0].label: must be a non-empty string"),
    ([(("questions", 0, "options", 2, "description"), 3)],
     "questions[0].options[2].description: must be a non-empty string"),
    ([(("questions", 0, "options", 2, "description"), DELETE)], "questions[0].options[2].description: is required"),
    ([(("questions", 0, "options", 2, "label"), "qidian")],
     "questions[0].options[2].label: duplicate option label 'qidian'"),
    ([(("questions", 0, "allow_other"), "yes")], "questions[0].allow_other: must be a boolean"),
    ([(("questions", 0, "default"), "")], "questions[0].default: must be a non-empty string"),
    ([(("questions", 0, "default"), ["qidian"])], "questions[0].default: must be a non-empty string"),
    ([(("questions", 0, "default"), "tencent")], f"questions[0].default: {PLATFORM_LABELS}"),
    ([(("questions", 1, "default"), [])], f"questions[1].default: {STRINGS}"),
    ([(("questions", 1, "default"), "xianxia")], f"questions[1].default: {STRINGS}"),
    ([(("questions", 1, "default"), ["xianxia", "xianxia"])], "questions[1].default[1]: duplicate entry 'xianxia'"),
    ([(("questions", 1, "default"), ["romance"])], f"questions[1].default[0]: {GENRE_LABELS}"),
    ([(("questions", 1, "default"), ["xianxia", " "])], "questions[1].default[1]: must be a non-empty string"),
])
def test_question_spec_invalid(edits, message):
    assert message in validate_question_spec(mutate(question_spec(), *edits))


def test_question_spec_root_must_be_object():
    assert validate_question_spec([]) == ["question_spec: must be a plain object"]


def test_question_spec_reports_every_error():
    errors = validate_question_spec(mutate(question_spec(), (("version",), 0), (("topic",), "")))
    assert errors == ["version: must be an integer >= 1", "topic: must be a non-empty string"]


# --- AnswerSpec (facts §14.3) ----------------------------------------------------------------------


def test_example_answers_are_valid():
    assert validate_answer_spec(answer()) == []
    assert validate_answer_spec(SEED_ANSWER) == []


@pytest.mark.parametrize("edits", [
    pytest.param([(("_source",), "codex")], id="r1-underscore-root-key"),
    pytest.param([(("version",), 3)], id="r2-version"),
    pytest.param([(("answered_by",), "codex")], id="r2-answered-by"),
    pytest.param([(("answered_at",), "2026-11-22T10:00:00+08:00")], id="r3-offset"),
    pytest.param([(("answered_at",), "2024-02-29T23:59:59Z")], id="r3-leap-day"),
    pytest.param([(("answered_at",), "2026-02-27T10:12:34.123456789-05:30")], id="r3-nanoseconds"),
    pytest.param([(("answered_at",), "2026-02-27T24:00:00Z")], id="r3-end-of-day"),
    pytest.param([(("answers", "genres"), ["urban"])], id="r4-array"),
])
def test_answer_spec_valid_variants(edits):
    assert validate_answer_spec(mutate(answer(), *edits)) == []


RFC = "answered_at: must be an RFC 3339 date-time YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"
REAL = "answered_at: must be a real date and time (month, day, hour, minute, second, offset)"


@pytest.mark.parametrize("edits, message", [
    ([(("extra",), 1)], "extra: unknown field"),
    ([(("version",), 0)], "version: must be an integer >= 1"),
    ([(("topic",), "")], "topic: must be a non-empty string"),
    ([(("answered_by",), " ")], "answered_by: must be a non-empty string"),
    ([(("answered_by",), DELETE)], "answered_by: is required"),
    ([(("answered_at",), DELETE)], "answered_at: is required"),
    ([(("answered_at",), 1772187154)], RFC),
    ([(("answered_at",), "2026-02-27 10:12:34Z")], RFC),
    ([(("answered_at",), "2026-02-27T10:12:34")], RFC),
    ([(("answered_at",), "2026-02-27T10:12Z")], RFC),
    ([(("answered_at",), "2026-02-27T10:12:34.1234567890Z")], RFC),
    ([(("answered_at",), "2026-02-27T10:12:34Z\n")], RFC),
    ([(("answered_at",), "2026-13-01T00:00:00Z")], REAL),
    ([(("answered_at",), "2026-02-30T00:00:00Z")], REAL),
    ([(("answered_at",), "2025-02-29T00:00:00Z")], REAL),
    ([(("answered_at",), "2026-04-31T00:00:00Z")], REAL),
    ([(("answered_at",), "2026-02-27T25:00:00Z")], REAL),
    ([(("answered_at",), "2026-02-27T24:00:01Z")], REAL),
    ([(("answered_at",), "2026-02-27T10:60:00Z")], REAL),
    ([(("answered_at",), "2026-02-27T10:00:60Z")], REAL),
    ([(("answered_at",), "2026-02-27T10:00:00+24:00")], REAL),
    ([(("answered_at",), "2026-02-27T10:00:00+08:60")], REAL),
    ([(("answers",), ["platform"])], "answers: must be a plain object"),
    ([(("answers",), DELETE)], "answers: is required"),
    ([(("answers", "Platform"), "qidian")], f"answers.Platform: key {SNAKE}"),
    ([(("answers", "_note"), "hi")], f"answers._note: key {SNAKE}"),
    ([(("answers", "pen_name"), " ")], "answers.pen_name: must be a non-empty string or a non-empty array of "
                                       "unique non-empty strings"),
    ([(("answers", "platform"), 3)], "answers.platform: must be a non-empty string or a non-empty array of "
                                     "unique non-empty strings"),
    ([(("answers", "genres"), [])], f"answers.genres: {STRINGS}"),
    ([(("answers", "genres"), ["urban", "urban"])], "answers.genres[1]: duplicate entry 'urban'"),
    ([(("answers", "genres"), ["urban", ""])], "answers.genres[1]: must be a non-empty string"),
])
def test_answer_spec_invalid(edits, message):
    assert message in validate_answer_spec(mutate(answer(), *edits))


def test_answer_spec_root_must_be_object():
    assert validate_answer_spec("qidian") == ["answer_spec: must be a plain object"]


# --- Cross-check (facts §14.4) ---------------------------------------------------------------------


def test_seed_and_facts_answers_match_their_questions():
    assert check_answer(answer(), question_spec()) == []
    assert check_answer(SEED_ANSWER, SEED_PACKET["novel_ask"]) == []


@pytest.mark.parametrize("answer_edits, spec_edits", [
    pytest.param([(("answers", "genres"), DELETE)], [], id="optional-omitted"),
    pytest.param([(("answers", "platform"), "tencent")], [(("questions", 0, "allow_other"), True)],
                 id="single-allow-other"),
    pytest.param([(("answers", "genres"), ["romance", "urban"])], [(("questions", 1, "allow_other"), True)],
                 id="multi-allow-other"),
    pytest.param([(("version",), 2)], [(("version",), 2)], id="version-equal"),
    pytest.param([(("_note",), "x")], [], id="underscore-root-key"),
])
def test_check_answer_valid_variants(answer_edits, spec_edits):
    assert check_answer(mutate(answer(), *answer_edits), mutate(question_spec(), *spec_edits)) == []


@pytest.mark.parametrize("answer_edits, spec_edits, message", [
    ([(("version",), 2)], [], "version: must equal the question spec version (1)"),
    ([(("topic",), "platform binding")], [], "topic: must equal the question spec topic ('init.platform_binding')"),
    ([(("answers", "budget"), "100")], [], "answers.budget: does not match any question id"),
    ([(("answers", "platform"), DELETE)], [], "answers.platform: required question is not answered"),
    ([(("answers", "pen_name"), DELETE)], [], "answers.pen_name: required question is not answered"),
    ([(("answers", "genres"), DELETE)], [(("questions", 1, "required"), True)],
     "answers.genres: required question is not answered"),
    ([(("answers", "pen_name"), ["北冥"])], [], "answers.pen_name: must be a non-empty string"),
    ([(("answers", "platform"), ["qidian"])], [], "answers.platform: must be a non-empty string"),
    ([(("answers", "platform"), "tencent")], [], f"answers.platform: {PLATFORM_LABELS}"),
    ([(("answers", "platform"), "tencent")], [(("questions", 0, "allow_other"), False)],
     f"answers.platform: {PLATFORM_LABELS}"),
    ([(("answers", "genres"), "xianxia")], [], f"answers.genres: {STRINGS}"),
    ([(("answers", "genres"), [])], [], f"answers.genres: {STRINGS}"),
    ([(("answers", "genres"), ["urban", "urban"])], [], "answers.genres[1]: duplicate entry 'urban'"),
    ([(("answers", "genres"), ["urban", "romance"])], [], f"answers.genres[1]: {GENRE_LABELS}"),
    ([(("answers", "genres"), ["urban", ""])], [], "answers.genres[1]: must be a non-empty string"),
    ([(("answered_at",), "2026-02-30T00:00:00Z")], [], REAL),  # validate_answer_spec runs first
    ([], [(("version",), 0)], "question_spec.version: must be an integer >= 1"),
    ([], [(("questions", 0, "id"), "Platform")], f"question_spec.questions[0].id: {SNAKE}"),
])
def test_check_answer_invalid(answer_edits, spec_edits, message):
    assert message in check_answer(mutate(answer(), *answer_edits), mutate(question_spec(), *spec_edits))


def test_check_answer_does_not_repeat_a_message():
    errors = check_answer(mutate(answer(), (("answers", "genres"), [])), question_spec())
    assert errors == [f"answers.genres: {STRINGS}"]


def test_check_answer_with_non_object_spec():
    assert check_answer(answer(), None) == ["question_spec: must be a plain object"]


# --- answer_path (facts §1, §14.5) -----------------------------------------------------------------


@pytest.mark.parametrize("path", [
    "staging/novel-ask/chapter-048-draft.answers.json", "staging/novel-ask/novel-init.answers.json",
    "staging/novel-ask/answers.json", "staging\\novel-ask\\a.json", "./staging/a.json", "staging//a.json",
    "staging/...json", "staging/novel-ask/a b.json",
])
def test_answer_path_valid(path):
    assert validate_answer_path(path) == []


@pytest.mark.parametrize("path, message", [
    ("", "answer_path: must be a non-empty string"),
    ("   ", "answer_path: must be a non-empty string"),
    (None, "answer_path: must be a non-empty string"),
    (3, "answer_path: must be a non-empty string"),
    ("/etc/passwd", "answer_path: must be a project-relative path, not an absolute one"),
    ("C:\\answers.json", "answer_path: must be a project-relative path, not an absolute one"),
    ("c:answers.json", "answer_path: must be a project-relative path, not an absolute one"),
    ("\\\\server\\share\\a.json", "answer_path: must be a project-relative path, not an absolute one"),
    ("\\staging\\a.json", "answer_path: must be a project-relative path, not an absolute one"),
    ("staging/../../etc/passwd", "answer_path: must not contain '..' path traversal segments"),
    ("staging\\..\\a.json", "answer_path: must not contain '..' path traversal segments"),
    ("..", "answer_path: must not contain '..' path traversal segments"),
    ("staging/a\x00.json", "answer_path: must not contain NUL characters"),
])
def test_answer_path_invalid(path, message):
    assert validate_answer_path(path) == [message]


def test_answer_path_field_name_is_configurable():
    assert validate_answer_path("/x", field="--answer-path") == [
        "--answer-path: must be a project-relative path, not an absolute one"]


def test_answer_path_symlink_containment(tmp_path):
    root, outside = tmp_path / "project", tmp_path / "outside"
    (root / "staging").mkdir(parents=True)
    outside.mkdir()
    os.symlink(outside, root / "staging" / "escape")
    (root / "staging" / "novel-ask.json").write_text("{}")
    assert validate_answer_path("staging/novel-ask/deep/new.answers.json", root=root) == []  # nearest ancestor
    assert validate_answer_path("staging/novel-ask.json", root=str(root)) == []  # existing target
    assert validate_answer_path("staging/escape/a.json", root=root) == [
        "answer_path: resolves outside the project root"]
    assert validate_answer_path("staging/escape", root=root) == ["answer_path: resolves outside the project root"]


# --- Gate wiring (facts §14.5) ---------------------------------------------------------------------


def test_gate_wiring_valid():
    assert validate_gate_wiring("chapter:048:draft", None, None) == []
    assert validate_gate_wiring("review:collect", None, None) == []
    assert validate_gate_wiring("chapter:048:draft", question_spec(), "staging/novel-ask/a.json") == []
    assert validate_gate_wiring("quickstart:world", question_spec(), "staging/novel-ask/novel-init.answers.json") == []


@pytest.mark.parametrize("step, spec, path, message", [
    ("chapter:048:draft", question_spec(), None, "answer_path: is required when novel_ask is present"),
    ("chapter:048:draft", None, "staging/a.json", "novel_ask: is required when answer_path is present"),
    ("review:collect", question_spec(), "staging/a.json",
     "step: NOVEL_ASK gates are not allowed on review:* steps ('review:collect')"),
    ("chapter:048:draft", question_spec(), "../a.json", "answer_path: must not contain '..' path traversal segments"),
    ("chapter:048:draft", question_spec(), "", "answer_path: must be a non-empty string"),
    ("chapter:048:draft", mutate(question_spec(), (("questions", 0, "id"), "Platform")), "staging/a.json",
     f"novel_ask.questions[0].id: {SNAKE}"),
    ("chapter:048:draft", [], "staging/a.json", "novel_ask: must be a plain object"),
    ("chapter:048:dance", question_spec(), "staging/a.json",
     "step: invalid step id 'chapter:048:dance': stage must be one of draft, summarize, refine, judge, title-fix, "
     "hook-fix, review, commit"),
])
def test_gate_wiring_invalid(step, spec, path, message):
    assert message in validate_gate_wiring(step, spec, path)


# --- Step ids (facts §1) ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, parsed, formatted", [
    ("chapter:7:draft", StepId("chapter", 7, "draft"), "chapter:007:draft"),
    ("chapter:048:title-fix", StepId("chapter", 48, "title-fix"), "chapter:048:title-fix"),
    ("chapter:0048:hook-fix", StepId("chapter", 48, "hook-fix"), "chapter:048:hook-fix"),
    ("chapter:1234:commit", StepId("chapter", 1234, "commit"), "chapter:1234:commit"),
    (" chapter:1:judge ", StepId("chapter", 1, "judge"), "chapter:001:judge"),
    ("volume:outline", StepId("volume", None, "outline"), "volume:outline"),
    ("quickstart:f0", StepId("quickstart", None, "f0"), "quickstart:f0"),
    ("review:transition", StepId("review", None, "transition"), "review:transition"),
])
def test_step_id_round_trip(text, parsed, formatted):
    assert parse_step_id(text) == parsed
    assert format_step_id(*parse_step_id(text)) == formatted
    assert parse_step_id(formatted) == parsed


@pytest.mark.parametrize("text, match", [
    ("chapter:0:draft", "chapter must be >= 1"),
    ("chapter:000:draft", "chapter must be >= 1"),
    ("chapter:abc:draft", "chapter must be all digits"),
    ("chapter:-1:draft", "chapter must be all digits"),
    ("chapter:\u0663:draft", "chapter must be all digits"),
    ("chapter::draft", "chapter must be all digits"),
    ("chapter:001:dance", "stage must be one of draft, summarize"),
    ("volume:plan", "volume phase must be one of outline, validate, commit"),
    ("quickstart:intro", "quickstart phase must be one of world"),
    ("review:done", "review phase must be one of collect"),
    ("chapter:7", "expected chapter:NNN:<stage>"),
    ("novel:next", "expected chapter:NNN:<stage>"),
    ("volume:outline:x", "expected chapter:NNN:<stage>"),
    ("", "expected chapter:NNN:<stage>"),
    (7, "must be a string"),
])
def test_step_id_rejected(text, match):
    with pytest.raises(ValueError, match=match):
        parse_step_id(text)


@pytest.mark.parametrize("args, match", [
    (("chapter", 0, "draft"), "must be an integer >= 1"),
    (("chapter", True, "draft"), "must be an integer >= 1"),
    (("chapter", None, "draft"), "must be an integer >= 1"),
    (("chapter", 3, "dance"), "stage must be one of"),
    (("volume", 1, "outline"), "a volume step has no chapter"),
    (("volume", None, "plan"), "volume phase must be one of"),
    ((" volume", None, "outline"), "invalid step id"),
    (("epilogue", None, "x"), "expected chapter:NNN:<stage>"),
])
def test_format_step_id_rejected(args, match):
    with pytest.raises(ValueError, match=match):
        format_step_id(*args)


# --- AnswerSpec builder ----------------------------------------------------------------------------


def test_answer_spec_builds_the_facts_example():
    record = answer_spec(question_spec=question_spec(), answers={"platform": "jjwxc", "pen_name": "北冥"},
                         answered_by="human", answered_at=datetime(2026, 11, 22, 10, 0, tzinfo=CST))
    assert record == {"version": 1, "topic": "init.platform_binding",
                      "answers": {"platform": "jjwxc", "pen_name": "北冥"},
                      "answered_at": "2026-11-22T10:00:00+08:00", "answered_by": "human"}
    assert validate_answer_spec(record) == [] and check_answer(record, question_spec()) == []


def test_answer_spec_timestamp_precision_and_utc():
    at = datetime(2026, 2, 27, 10, 12, 34, 123000, tzinfo=timezone.utc)
    record = answer_spec(question_spec=SEED_PACKET["novel_ask"], answers={"platform": "qidian"},
                         answered_by="claude_code", answered_at=at)
    assert record["answered_at"] == "2026-02-27T10:12:34.123+00:00"
    assert record == {**SEED_ANSWER, "answered_at": record["answered_at"]}


def test_answer_spec_leaves_out_an_empty_optional_multi_choice():
    record = answer_spec(question_spec=question_spec(), answers={"platform": "web", "genres": [], "pen_name": "x"},
                         answered_by="codex", answered_at=datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert record["answers"] == {"platform": "web", "pen_name": "x"}


@pytest.mark.parametrize("kwargs, match", [
    ({"answers": {"platform": "tencent", "pen_name": "x"}}, r"answers\.platform: must be one of the option labels"),
    ({"answers": {"pen_name": "x"}}, "answers.platform: required question is not answered"),
    ({"answered_by": " "}, "answered_by: must be a non-empty string"),
    ({"answered_at": datetime(2026, 1, 1)}, "answered_at: must be a timezone-aware datetime"),
    ({"answered_at": datetime(2026, 1, 1, tzinfo=timezone(timedelta(seconds=30)))}, "whole minutes"),
    ({"question_spec": {"version": 1, "topic": "t", "questions": []}}, "invalid question spec: questions:"),
])
def test_answer_spec_rejects(kwargs, match):
    args = {"question_spec": question_spec(), "answers": {"platform": "qidian", "pen_name": "x"},
            "answered_by": "human", "answered_at": datetime(2026, 1, 1, tzinfo=CST), **kwargs}
    with pytest.raises(ValueError, match=match):
        answer_spec(**args)


TEXT = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "")
QUESTION_ID = st.from_regex(r"[a-z][a-z0-9]{0,5}(_[a-z0-9]{1,3}){0,2}", fullmatch=True)
OFFSETS = st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))


@st.composite
def specs_with_answers(draw):
    ids = draw(st.lists(QUESTION_ID, min_size=1, max_size=4, unique=True))
    questions, answers = [], {}
    for qid in ids:
        kind, required = draw(st.sampled_from(["single_choice", "multi_choice", "free_text"])), draw(st.booleans())
        question = {"id": qid, "header": draw(TEXT), "question": draw(TEXT), "kind": kind, "required": required}
        if kind == "free_text":
            value = draw(TEXT)
        else:
            labels = draw(st.lists(TEXT, min_size=1, max_size=4, unique=True))
            allow_other = draw(st.booleans())
            question["options"] = [{"label": label, "description": draw(TEXT)} for label in labels]
            if draw(st.booleans()):
                question["allow_other"] = allow_other
            choice = TEXT if question.get("allow_other") else st.sampled_from(labels)
            value = draw(choice) if kind == "single_choice" else draw(st.lists(choice, min_size=1, max_size=4,
                                                                                unique=True))
        questions.append(question)
        if required or draw(st.booleans()):
            answers[qid] = value
        elif kind == "multi_choice" and draw(st.booleans()):
            answers[qid] = []  # "no selection" on an optional multi_choice: left out by the builder
    spec = {"version": draw(st.integers(1, 5)), "topic": draw(TEXT), "questions": questions}
    return spec, answers


@settings(max_examples=200, deadline=None)
@given(specs_with_answers(), TEXT, st.datetimes(timezones=OFFSETS))
def test_property_answer_spec_output_always_validates(spec_and_answers, answered_by, answered_at):
    spec, answers = spec_and_answers
    assert validate_question_spec(spec) == []
    record = answer_spec(question_spec=spec, answers=answers, answered_by=answered_by, answered_at=answered_at)
    assert validate_answer_spec(record) == []
    assert check_answer(record, spec) == []


# --- InstructionPacket (facts §14.1) ---------------------------------------------------------------


def without_gate(packet: dict) -> dict:
    return mutate(packet, (("novel_ask",), DELETE), (("answer_path",), DELETE), (("expected_outputs", 0), DELETE))


def test_seed_packet_is_valid():
    assert validate_instruction_packet(SEED_PACKET) == []


@pytest.mark.parametrize("packet", [
    pytest.param(without_gate(SEED_PACKET), id="no-gate"),
    pytest.param(mutate(SEED_PACKET, (("novel_ask",), question_spec())), id="facts-topic"),
    pytest.param(mutate(SEED_PACKET, (("_debug",), True)), id="underscore-key"),
    pytest.param(mutate(SEED_PACKET, (("step",), "chapter:48:draft")), id="unpadded-step"),
    pytest.param(mutate(without_gate(SEED_PACKET), (("step",), "review:audit"),
                        (("agent",), {"kind": "subagent", "name": "consistency-auditor"})), id="review-no-gate"),
    pytest.param(mutate(SEED_PACKET, (("agent",), {"kind": "cli", "name": "novel"})), id="cli-agent"),
    pytest.param(mutate(SEED_PACKET, (("manifest", "mode"), "paths+embed"),
                        (("manifest", "embed"), {"brief_preview": None})), id="embed-null-preview"),
    pytest.param(mutate(SEED_PACKET, (("manifest", "mode"), "paths+embed"),
                        (("manifest", "embed"), {"brief_preview": "简" * 2000})), id="embed-2000"),
    pytest.param(mutate(SEED_PACKET, (("manifest", "paths"), {"chapter_draft": None}),
                        (("manifest", "inline"), {"chapter": 48, "volume": 2})), id="manifest-content"),
    pytest.param(mutate(without_gate(SEED_PACKET), (("expected_outputs",), [])), id="no-outputs"),
    pytest.param(mutate(SEED_PACKET, (("next_actions", 0, "note"), "then advance")), id="action-note"),
])
def test_instruction_packet_valid_variants(packet):
    assert validate_instruction_packet(packet) == []


@pytest.mark.parametrize("edits, message", [
    ([(("extra",), 1)], "extra: unknown field"),
    ([(("version",), 2)], "version: must be 1"),
    ([(("version",), True)], "version: must be 1"),
    ([(("step",), DELETE)], "step: is required"),
    ([(("step",), "chapter:048:dance")], "step: invalid step id 'chapter:048:dance': stage must be one of draft, "
                                        "summarize, refine, judge, title-fix, hook-fix, review, commit"),
    ([(("agent",), DELETE)], "agent: is required"),
    ([(("agent",), "chapter-writer")], "agent: must be a plain object"),
    ([(("agent", "kind"), "human")], "agent.kind: must be one of subagent, cli"),
    ([(("agent", "name"), "ghost-writer")],
     "agent.name: must be one of world-builder, character-weaver, style-analyzer, plot-architect, chapter-writer, "
     "summarizer, style-refiner, quality-judge, consistency-auditor for kind 'subagent'"),
    ([(("agent", "name"), "novel")], "agent.name: must be one of world-builder, character-weaver, style-analyzer, "
     "plot-architect, chapter-writer, summarizer, style-refiner, quality-judge, consistency-auditor for kind "
     "'subagent'"),
    ([(("agent", "kind"), "cli")], "agent.name: must be one of volume-review, manual-review, novel for kind 'cli'"),
    ([(("agent", "model"), "opus")], "agent.model: unknown field"),
    ([(("manifest",), DELETE)], "manifest: is required"),
    ([(("manifest", "mode"), "inline")], "manifest.mode: must be one of paths, paths+embed"),
    ([(("manifest", "inline"), DELETE)], "manifest.inline: is required"),
    ([(("manifest", "paths"), [])], "manifest.paths: must be a plain object"),
    ([(("manifest", "files"), {})], "manifest.files: unknown field"),
    ([(("manifest", "embed"), {})], "manifest.embed: must be absent when manifest.mode is 'paths'"),
    ([(("manifest", "mode"), "paths+embed")], "manifest.embed: is required when manifest.mode is 'paths+embed'"),
    ([(("manifest", "mode"), "paths+embed"), (("manifest", "embed"), "brief")],
     "manifest.embed: must be a plain object"),
    ([(("manifest", "mode"), "paths+embed"), (("manifest", "embed"), {"brief_preview": 123})],
     "manifest.embed.brief_preview: must be null or a string of at most 2000 characters"),
    ([(("manifest", "mode"), "paths+embed"), (("manifest", "embed"), {"brief_preview": "x" * 2001})],
     "manifest.embed.brief_preview: must be null or a string of at most 2000 characters"),
    ([(("expected_outputs",), DELETE)], "expected_outputs: is required"),
    ([(("expected_outputs",), {})], "expected_outputs: must be an array"),
    ([(("expected_outputs", 1), "staging/chapters/chapter-048.md")], "expected_outputs[1]: must be a plain object"),
    ([(("expected_outputs", 1, "path"), "")], "expected_outputs[1].path: must be a non-empty string"),
    ([(("expected_outputs", 1, "required"), "yes")], "expected_outputs[1].required: must be a boolean"),
    ([(("expected_outputs", 1, "required"), DELETE)], "expected_outputs[1].required: is required"),
    ([(("expected_outputs", 1, "note"), 3)], "expected_outputs[1].note: must be a string"),
    ([(("expected_outputs", 1, "optional"), True)], "expected_outputs[1].optional: unknown field"),
    ([(("next_actions",), DELETE)], "next_actions: is required"),
    ([(("next_actions", 0, "kind"), "shell")], "next_actions[0].kind: must be 'command'"),
    ([(("next_actions", 1, "command"), " ")], "next_actions[1].command: must be a non-empty string"),
    ([(("next_actions", 1, "note"), None)], "next_actions[1].note: must be a string"),
    ([(("next_actions", 1, "args"), [])], "next_actions[1].args: unknown field"),
    ([(("answer_path",), DELETE)], "answer_path: is required when novel_ask is present"),
    ([(("novel_ask",), DELETE)], "novel_ask: is required when answer_path is present"),
    ([(("answer_path",), None)], "answer_path: must be a non-empty string"),
    ([(("answer_path",), "/tmp/a.json"), (("expected_outputs", 0, "path"), "/tmp/a.json")],
     "answer_path: must be a project-relative path, not an absolute one"),
    ([(("novel_ask", "questions", 0, "options", 0, "label"), "")],
     "novel_ask.questions[0].options[0].label: must be a non-empty string"),
    ([(("step",), "review:collect"), (("agent",), {"kind": "cli", "name": "volume-review"})],
     "step: NOVEL_ASK gates are not allowed on review:* steps ('review:collect')"),
    ([(("expected_outputs", 0), DELETE)],
     "expected_outputs[0]: must be {path: answer_path, required: true} when a NOVEL_ASK gate is present"),
    ([(("expected_outputs", 0, "required"), False)],
     "expected_outputs[0]: must be {path: answer_path, required: true} when a NOVEL_ASK gate is present"),
])
def test_instruction_packet_invalid(edits, message):
    assert message in validate_instruction_packet(mutate(SEED_PACKET, *edits))


def test_instruction_packet_root_must_be_object():
    assert validate_instruction_packet([SEED_PACKET]) == ["packet: must be a plain object"]


def test_instruction_packet_gate_path_checked_against_root(tmp_path):
    (tmp_path / "staging").mkdir()
    os.symlink("/", tmp_path / "staging" / "novel-ask")
    assert validate_instruction_packet(SEED_PACKET, root=tmp_path) == [
        "answer_path: resolves outside the project root"]
