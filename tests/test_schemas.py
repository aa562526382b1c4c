"""Every JSON schema accepts the seed's shapes and rejects bad JSON with a message that names the
field and the JSON path, on every write path: the validator, the model (full_clean), the services
and the API serializer field. (The admin form path is in test_admin.py.)"""
from __future__ import annotations

import pytest
from rest_framework import serializers

from projects import schemas
from projects.errors import InvalidData
from projects.json_validation import json_issues, validate_json
from projects.models import Character, Project
from projects.platforms.profiles import (
    default_genre_weight_profiles,
    default_golden_chapter_gates,
    default_platform_profile,
)
from projects.serializer_fields import SchemaJSONSerializerField
from projects.services.editing import story_object_update
from projects.services.projects import project_create, project_update
from tests.test_state_ops import SEED_STATE  # seed 000 §9.2 example, kept in one place

SEED_EVAL = {
    "chapter": 47,
    "contract_verification": {"l1_checks": [], "l2_checks": [], "l3_checks": [], "ls_checks": [],
                              "has_violations": False},
    "scores": {"plot_logic": {"score": 4, "weight": 0.18, "reason": "...", "evidence": "原文引用"}},
    "overall": 3.78,
    "recommendation": "pass",
    "risk_flags": [],
    "required_fixes": [],
    "issues": [],
    "strengths": ["情节节奏张弛得当"],
}
CONTRACT = {
    "chapter": 48,
    "storyline_id": "main-arc",
    "objectives": [{"id": "OBJ-48-1", "type": "plot", "required": True, "description": "林枫进入幽暗森林"}],
}

# schema name -> (a valid value in the seed's shape, an invalid value, a fragment the message must contain)
CASES: dict[str, tuple[object, object, str]] = {
    "STRING_LIST": (["a"], ["a", 1], "$[1]"),
    "CHAPTER_NUMBER": (1, 0, "less than the minimum"),
    "CHAPTER_RANGE": ([10, 20], [10], "$"),
    "STYLE_PROFILE": ({"avg_sentence_length": 18, "dialogue_ratio": 0.4, "forbidden_words": ["不禁"]},
                      {"dialogue_ratio": 3}, "$.dialogue_ratio"),
    "AI_BLACKLIST": ({"words": ["不禁"], "whitelist": {"words": ["微笑"]}},
                     {"categories": {"summary_word": [{"replacement_hint": "x"}]}}, "$.categories.summary_word[0]"),
    "STYLE_DRIFT": ({"active": True, "drifts": [{"metric": "dialogue_ratio", "direction": "up", "delta": 0.2,
                                                  "directive": "减少对话"}]},
                    {"active": True, "drifts": [{"metric": "m", "directive": "d"}] * 4}, "$.drifts"),
    "GATE_SETTINGS": ({"pass_threshold": 4.0, "max_revisions": 2}, {"max_revisions": -1}, "$.max_revisions"),
    "LINT_SETTINGS": ({"lints": {"simile_max_per_kchars": 3}, "word_count": {"min": 2000, "max": 4000},
                       "title_policy": {"enabled": True, "max_chars": 20}},
                      {"lints": {"no_such_threshold": 1}}, "$.lints"),
    "STAGE_MODELS": ({"draft": "claude-sonnet-4-5"}, {"drafting": "x"}, "$"),
    "PENDING_ACTIONS": ([{"type": "spec_propagation"}], [{"kind": "x"}], "$[0]"),
    "CHECKPOINT_EXTRA": ({"unknown": 1}, [], "$"),
    "OPAQUE_JSON": ({"li-si": 50}, "text", "$"),
    "RULE_EXCEPTIONS": (["雪夜"], {"a": 1}, "$"),
    "CHARACTER_CONTRACTS": ([{"id": "C-LIN-FENG-001", "type": "personality", "rule": "执拗"}],
                            [{"id": "C-LIN-FENG-001", "type": "mood", "rule": "执拗"}], "$[0].type"),
    "CHARACTER_ALIASES": (["林师兄", "枫哥"], ["林师兄", ""], "$[1]"),
    "EXTRA_KEYS": ({"x": 1}, [1], "$"),
    "STORYLINE_SPEC": ({"spec_version": 1, "rules": [{"id": "LS-001", "rule": "r", "constraint_type": "hard"}]},
                       {"rules": [{"id": "LS-1", "rule": "r", "constraint_type": "hard"}]}, "$.rules[0].id"),
    "STORYLINES_META": ({"relationships": [{"from": "a", "to": "b"}]}, {"relationships": [{"from": "a"}]},
                        "$.relationships[0]"),
    "STORYLINE_SCHEDULE": ({"active_storylines": ["main-arc"]}, {"active_storylines": []}, "$.active_storylines"),
    "FORESHADOWING_PLAN": ([{"id": "p"}], {"items": [{"id": "p", "scope": "huge"}]}, "$.items[0].scope"),
    "NEW_CHARACTERS": ([{"name": "王五", "role": "minor", "first_chapter": 5}],
                       [{"name": "王五", "role": "hero", "first_chapter": 5}], "$[0].role"),
    "CHAPTER_CONTRACT": (CONTRACT, {**CONTRACT, "objectives": [{**CONTRACT["objectives"][0], "required": False}]},
                         "$.objectives"),
    "STORY_STATE": (SEED_STATE, {**SEED_STATE, "characters": {"林枫": {}}}, "$.characters"),
    "STATE_OP": ({"op": "set", "path": "characters.a.b", "value": 1}, {"op": "merge", "path": "x"}, "$.op"),
    "STATE_DELTA": ({"chapter": 48, "base_state_version": 47, "storyline_id": "main-arc", "ops": []},
                    {"chapter": 48, "base_state_version": 47, "storyline_id": "../etc", "ops": []},
                    "$.storyline_id"),
    "EVALUATION": (SEED_EVAL, {**SEED_EVAL, "scores": {"plot_logic": {"score": 9}}}, "$.scores.plot_logic.score"),
    "CHAPTER_LOG": ({"chapter": 47, "stages": [{"name": "draft", "model": "sonnet", "duration_ms": 45000,
                                                "input_tokens": None, "output_tokens": None}]},
                    {"chapter": 47, "stages": [{"name": "draft", "duration_ms": -1}]}, "$.stages[0].duration_ms"),
    "BLACKBOARD": ({"meta": {}, "content": {}, "control": {}}, {"meta": {}, "content": {}}, "$"),
    "PROMPT_RECEIPT": ({"blocks": [{"name": "contract", "role": "user", "tokens": 120, "cacheable": False}]},
                       {"blocks": [{"name": "contract", "role": "tool", "tokens": 1}]}, "$.blocks[0].role"),
    "LLM_USAGE": ({"input_tokens": 10, "output_tokens": 5}, {"input_tokens": -1}, "$.input_tokens"),
    "QUESTION_SPEC": ({"version": 1, "topic": "init.platform_binding", "questions": [{"id": "platform"}]},
                      {"version": 1, "topic": "t", "questions": []}, "$.questions"),
    "ANSWER_SPEC": ({"version": 1, "topic": "t", "answers": {}, "answered_at": "2026-01-01T00:00:00Z",
                     "answered_by": "human"}, {"version": 1, "topic": "t", "answers": {}}, "$"),
    "CHECKPOINT_FILE": ({"last_completed_chapter": 47, "current_volume": 2, "orchestrator_state": "WRITING",
                         "pipeline_stage": "committed", "inflight_chapter": None, "revision_count": 0,
                         "pending_actions": [], "last_checkpoint_time": "2026-02-21T15:30:00"},
                        {"last_completed_chapter": 1, "current_volume": 1, "orchestrator_state": "DANCING"},
                        "$.orchestrator_state"),
    "WORLD_RULES_FILE": ({"rules": [{"id": "W-001", "rule": "r", "constraint_type": "hard"}]},
                         {"rules": [{"id": "W-001", "rule": "r", "constraint_type": "firm"}]},
                         "$.rules[0].constraint_type"),
    "CHARACTER_FILE": ({"id": "lin-feng", "display_name": "林枫", "contracts": []}, {"display_name": "林枫"}, "$"),
    "STORYLINES_FILE": ({"storylines": [{"id": "main-arc", "name": "主线", "type": "type:main_arc"}]},
                        {"storylines": [{"id": "main-arc", "name": "主线", "scope": "galaxy"}]},
                        "$.storylines[0].scope"),
    "GLOBAL_FORESHADOWING": ({"foreshadowing": [{"id": "p", "status": "planted", "history": []}]},
                             {"foreshadowing": [{"id": "p", "status": "planted",
                                                 "history": [{"chapter": 1, "action": "hinted"}]}]},
                             "$.foreshadowing[0].history[0].action"),
    "NOVELSITE_PROJECT": ({"format": "novelsite-tree/1", "title": "书"}, {"format": "novelsite-tree/9"},
                          "$.format"),
    "ARCHIVED_SUMMARIES": ({"archived_summaries": [{"level": "archive", "chapter_start": 1, "chapter_end": 5,
                                                    "text": "往事"}]},
                           {"archived_summaries": [{"level": "epic", "chapter_start": 1, "chapter_end": 5,
                                                    "text": "往事"}]}, "$.archived_summaries[0].level"),
    "STORY_FACT_CHARACTERS": (["lin-feng", "chen-lao"], ["林枫"], "$[0]"),
    "STORY_FACTS_FILE": ({"facts": [{"id": "fact-001", "kind": "promise", "text": "誓言", "chapter": 3,
                                     "status": "open"}]},
                         {"facts": [{"id": "fact-001", "kind": "rumour", "text": "传言", "chapter": 3,
                                     "status": "open"}]}, "$.facts[0].kind"),
    "PLATFORM_PROFILE": (default_platform_profile("qidian"),
                         {**default_platform_profile("qidian"), "word_count": {"target_min": "3000"}},
                         "$.word_count"),
    "GENRE_WEIGHT_PROFILES": (default_genre_weight_profiles(),
                              {"profiles": {"plot:v1": {"weights": {"plot_logic": -1}}}},
                              "$.profiles.plot:v1.weights.plot_logic"),
    "GOLDEN_CHAPTER_GATES": (default_golden_chapter_gates(),
                             {"platforms": {"qidian": {"chapters": {"4": {"gates": []}}}}},
                             "$.platforms.qidian.chapters"),
}


def test_every_schema_has_a_case():
    assert set(CASES) == set(schemas.SCHEMAS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_schema_accepts_the_seed_shape(name):
    good, _bad, _where = CASES[name]
    assert json_issues(name, good) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_schema_rejects_bad_json_naming_field_and_path(name):
    _good, bad, where = CASES[name]
    with pytest.raises(InvalidData) as caught:
        validate_json(name, bad, label="the_field")
    assert caught.value.message.startswith("the_field: $")
    assert where in caught.value.message
    assert caught.value.extra["field"] == "the_field"
    assert caught.value.extra["errors"][0]["path"].startswith("$")


def test_foreshadowing_plan_accepts_all_three_shapes():
    item = {"id": "ancient_prophecy", "scope": "long"}
    for shape in ({"schema_version": 1, "items": [item]}, {"volume": 1, "foreshadowing": [item]}, [item]):
        assert json_issues("FORESHADOWING_PLAN", shape) == []


def test_schedule_accepts_strings_and_objects():
    assert json_issues("STORYLINE_SCHEDULE", {"active_storylines": ["main-arc"]}) == []
    assert json_issues("STORYLINE_SCHEDULE", {"active_storylines": [{"storyline_id": "main-arc",
                                                                      "volume_role": "primary"}]}) == []


def test_evaluation_accepts_the_wrapped_shape():
    assert json_issues("EVALUATION", {"chapter": 47, "eval_used": SEED_EVAL, "metadata": {"gate": {}}}) == []


def test_slug_pattern_refuses_trailing_newline_and_traversal():
    for bad in ("main-arc\n", "../x", "Main", "a--b", ""):
        assert json_issues("STATE_DELTA", {"chapter": 1, "base_state_version": 0, "storyline_id": bad, "ops": []})


# --- model full_clean ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_model_full_clean_names_field_and_path(sample_project):
    character = sample_project.characters.get(slug="lin-feng")
    character.contracts = [{"id": "C-LIN-FENG-001", "type": "mood", "rule": "x"}]
    with pytest.raises(Exception) as caught:
        character.full_clean()
    errors = caught.value.message_dict
    assert "contracts" in errors
    assert "contracts: $[0].type" in errors["contracts"][0]


@pytest.mark.django_db
def test_nullable_json_field_accepts_null(sample_project):
    sample_project.style_drift = None
    sample_project.full_clean()


# --- services -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_service_refuses_bad_json_and_writes_nothing(sample_project, make_user):
    editor = make_user("ed")
    character = sample_project.characters.get(slug="lin-feng")
    before = (character.version, character.contracts)
    with pytest.raises(InvalidData) as caught:
        story_object_update(obj=character, editor=editor, base_version=character.version,
                            contracts=[{"id": "nope", "type": "speech", "rule": "r"}])
    assert "contracts: $[0].id" in caught.value.message
    assert caught.value.extra["fields"]["contracts"]
    character.refresh_from_db()
    assert (character.version, character.contracts) == before
    assert character.history.count() == 1  # only the creation


@pytest.mark.django_db
def test_project_services_validate_json(make_user):
    owner = make_user("owner")
    with pytest.raises(InvalidData, match=r"gate_settings: \$\.max_revisions"):
        project_create(owner=owner, slug="bad", title="坏", gate_settings={"max_revisions": 99})
    assert not Project.objects.filter(slug="bad").exists()
    project = project_create(owner=owner, slug="good", title="好")
    project.style_profile = {"dialogue_ratio": "many"}
    with pytest.raises(InvalidData, match=r"style_profile: \$\.dialogue_ratio"):
        project_update(project=project, editor=owner)
    project.refresh_from_db()
    assert project.style_profile == {}


@pytest.mark.django_db
def test_brief_is_limited_to_1000_characters(make_user):
    with pytest.raises(InvalidData, match="brief"):
        project_create(owner=make_user("o"), slug="long", title="长", brief="字" * 1001)


@pytest.mark.django_db
def test_contract_chapter_must_match_its_row(sample_project, make_user):
    contract = sample_project.chapter_contracts.get(chapter=2)
    with pytest.raises(InvalidData, match=r"\$\.chapter is 3, expected 2"):
        story_object_update(obj=contract, editor=make_user("e"), base_version=contract.version,
                            data={**contract.data, "chapter": 3})


@pytest.mark.django_db
def test_slug_ids_are_validated_by_one_regex(sample_project, make_user):
    character = Character(project=sample_project, slug="Lin Feng", display_name="林枫二")
    with pytest.raises(InvalidData, match="slug"):
        from projects.services.editing import story_object_create

        story_object_create(instance=character, editor=make_user("e"))


# --- API serializer field -----------------------------------------------------------------------


class _StyleInput(serializers.Serializer):
    style_profile = SchemaJSONSerializerField(schema_name="STYLE_PROFILE")


def test_serializer_field_rejects_bad_json_with_path():
    incoming = _StyleInput(data={"style_profile": {"dialogue_ratio": 2}})
    assert not incoming.is_valid()
    assert "style_profile: $.dialogue_ratio" in str(incoming.errors["style_profile"][0])


def test_serializer_field_accepts_valid_json():
    incoming = _StyleInput(data={"style_profile": {"dialogue_ratio": 0.3}})
    assert incoming.is_valid(), incoming.errors
