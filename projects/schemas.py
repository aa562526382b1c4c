"""JSON schemas of every JSON field, in one place.

The same schema renders the admin editor (django-jsonform) and is enforced on every write path:
``SchemaJSONField.validate`` (model ``full_clean``), the services, the API serializers and the
importer all call ``projects.json_validation.validate_json``. Shapes follow seed 000 §9.2 and the
facts file (§3, §10); where the original tool accepts two shapes (facts §15), both validate.

Schemas are plain draft 2020-12 JSON Schema. django-jsonform reads the same dicts to draw its
editor; it draws the first non-null type of a ``type`` list, which is why nullable values are
written as ``["integer", "null"]`` rather than with ``anyOf``.
"""
from __future__ import annotations

from typing import Any

from projects.vocabulary import (
    ORCHESTRATOR_STATES, PIPELINE_STAGES, QUICKSTART_PHASES, STYLE_SOURCE_TYPES, VOLUME_PIPELINE_STAGES,
)

SLUG_PATTERN = r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$(?!\n)"  # the lookahead refuses a trailing newline, which $ allows

Schema = dict[str, Any]


def _nullable(type_name: str, **extra: Any) -> Schema:
    return {"type": [type_name, "null"], **extra}


STRING_LIST: Schema = {"type": "array", "items": {"type": "string"}}
CHAPTER_NUMBER: Schema = {"type": "integer", "minimum": 1}
CHAPTER_RANGE: Schema = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0},
    "minItems": 2,
    "maxItems": 2,
}

# --- Project-level files -----------------------------------------------------------------------

STYLE_PROFILE: Schema = {  # style-profile.json, facts §10.12 (keys starting with "_" are comments)
    "type": "object",
    "title": "Style profile",
    "properties": {
        "source_type": {"type": "string", "enum": list(STYLE_SOURCE_TYPES)},
        "reference_author": _nullable("string"),
        "platform": _nullable("string"),
        "avg_sentence_length": _nullable("number", minimum=0),
        "sentence_length_range": {"type": "array", "items": {"type": "number", "minimum": 0}, "maxItems": 2},
        "sentence_length_std_dev": _nullable("number", minimum=0),
        "paragraph_length_cv": _nullable("number", minimum=0),
        "emotional_volatility": _nullable("string", enum=["high", "medium", "low", None]),
        "register_mixing": _nullable("string", enum=["high", "medium", "low", None]),
        "vocabulary_richness": _nullable("string", enum=["high", "medium", "low", None]),
        "dialogue_ratio": _nullable("number", minimum=0, maximum=1),
        "description_ratio": _nullable("number", minimum=0, maximum=1),
        "action_ratio": _nullable("number", minimum=0, maximum=1),
        "rhetoric_preferences": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"type": "string"},
                    {"type": "object", "properties": {"type": {"type": "string"}, "frequency": {}}},
                ]
            },
        },
        "forbidden_words": STRING_LIST,
        "preferred_expressions": STRING_LIST,
        "character_speech_patterns": {"type": "object", "additionalProperties": {"type": "string"}},
        "paragraph_style": {"type": "object"},
        "narrative_voice": {},
        "style_exemplars": STRING_LIST,
        "writing_directives": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "properties": {"directive": {"type": "string"}, "do": {}, "dont": {}},
                        "required": ["directive"],
                    },
                ]
            },
        },
        "override_constraints": {"type": "object"},
        "analysis_notes": {},
    },
    "additionalProperties": True,
}

_BLACKLIST_ENTRY: Schema = {
    "type": "object",
    "properties": {
        "word": {"type": "string", "minLength": 1},
        "replacement_hint": {"type": "string"},
        "per_chapter_max": {"type": "integer", "minimum": 0},
        "context": {"type": "string"},
    },
    "required": ["word"],
}

AI_BLACKLIST: Schema = {  # ai-blacklist.json, facts §10.16
    "type": "object",
    "title": "AI blacklist",
    "properties": {
        "version": {"type": "string"},
        "description": {"type": "string"},
        "last_updated": {"type": "string"},
        "max_words": {"type": "integer", "minimum": 1},
        "words": STRING_LIST,
        "categories": {"type": "object", "additionalProperties": {"type": "array", "items": _BLACKLIST_ENTRY}},
        "category_metadata": {"type": "object"},
        # facts §15.8: the whitelist is an array or {"words": [...]}
        "whitelist": {
            "anyOf": [STRING_LIST, {"type": "object", "properties": {"words": STRING_LIST}, "required": ["words"]}]
        },
        "update_log": {"type": "array", "items": {"type": "object"}},
    },
    "additionalProperties": True,
}

_DRIFT_ENTRY: Schema = {  # facts §15.8: {metric, baseline, current, directive} or {metric, direction, delta, directive}
    "type": "object",
    "properties": {
        "metric": {"type": "string", "minLength": 1},
        "baseline": _nullable("number"),
        "current": _nullable("number"),
        "direction": {"type": "string"},
        "delta": _nullable("number"),
        "directive": {"type": "string", "minLength": 1},
    },
    "required": ["metric", "directive"],
}

STYLE_DRIFT: Schema = {  # style-drift.json, facts §10.16 and §13
    "type": "object",
    "title": "Style drift",
    "properties": {
        "active": {"type": "boolean"},
        "detected_chapter": _nullable("integer", minimum=0),
        "window": CHAPTER_RANGE,
        "drifts": {"type": "array", "items": _DRIFT_ENTRY, "maxItems": 3},
        "injected_to": STRING_LIST,
        "created_at": _nullable("string"),
        "cleared_at": _nullable("string"),
        "cleared_reason": _nullable("string", enum=["metrics_recovered", "stale_timeout", None]),
    },
    "required": ["active"],
    "additionalProperties": True,
}

SCORE_DIMENSIONS = (
    "plot_logic",
    "character",
    "immersion",
    "foreshadowing",
    "pacing",
    "style_naturalness",
    "emotional_impact",
    "storyline_coherence",
)
DEFAULT_SCORE_WEIGHTS = {  # facts §10.11
    "plot_logic": 0.18,
    "character": 0.18,
    "immersion": 0.15,
    "foreshadowing": 0.10,
    "pacing": 0.08,
    "style_naturalness": 0.15,
    "emotional_impact": 0.08,
    "storyline_coherence": 0.08,
}

GATE_SETTINGS: Schema = {  # facts §11 thresholds, overridable per project
    "type": "object",
    "title": "Gate settings",
    "properties": {
        "pass_threshold": {"type": "number", "minimum": 0, "maximum": 5},
        "polish_threshold": {"type": "number", "minimum": 0, "maximum": 5},
        "revise_threshold": {"type": "number", "minimum": 0, "maximum": 5},
        "pause_threshold": {"type": "number", "minimum": 0, "maximum": 5},
        "max_revisions": {"type": "integer", "minimum": 0, "maximum": 10},
        "scoring_weights": {
            "type": "object",
            "propertyNames": {"enum": [*SCORE_DIMENSIONS, "hook_strength"]},
            "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1},
        },
    },
    "additionalProperties": False,
}

# The craft lints' thresholds (pipeline/chapter/craft/catalogue.py DEFAULT_THRESHOLDS holds their defaults;
# a test keeps the two lists equal: projects never imports pipeline).
LINT_THRESHOLD_NAMES = (
    "em_dash_max", "narration_connector_max", "blacklist_max_hits", "simile_max_per_kchars",
    "ellipsis_max_per_kchars", "exclamation_max_per_kchars", "density_min_count", "sentence_length_std_dev_min",
    "sentence_length_min_sentences", "sentence_length_run_tolerance", "sentence_length_run_min",
    "paragraph_length_cv_min", "paragraph_min_paragraphs", "paragraph_max_chars", "repetition_similarity",
    "repetition_min_chars", "repetition_window", "idiom_max_per_kchars", "vocabulary_diversity_min",
    "vocabulary_window",
)

LINT_SETTINGS: Schema = {  # issue #17 §2: a project's own lint settings, over its platform's
    "type": "object",
    "title": "Lint settings",
    "properties": {
        "lints": {"type": "object", "propertyNames": {"enum": list(LINT_THRESHOLD_NAMES)},
                  "additionalProperties": {"type": "number", "minimum": 0}},
        "word_count": {"type": "object", "properties": {"min": {"type": "integer", "minimum": 0},
                                                        "max": {"type": "integer", "minimum": 0}},
                       "additionalProperties": False},
        "title_policy": {"type": "object", "properties": {
            "enabled": {"type": "boolean"}, "min_chars": {"type": "integer", "minimum": 0},
            "max_chars": {"type": "integer", "minimum": 0},
            "banned_words": {"type": "array", "items": {"type": "string"}},
            "forbidden_chars": {"type": "string"}}},
    },
    "additionalProperties": False,
}

PIPELINE_STAGE_NAMES = (
    "default",
    "quickstart",
    "plan",
    "draft",
    "summarize",
    "refine",
    "judge",
    "consolidate",
    "review",
    "promote",
)

STAGE_MODELS: Schema = {
    "type": "object",
    "title": "Model per stage",
    "propertyNames": {"enum": list(PIPELINE_STAGE_NAMES)},
    "additionalProperties": {"type": "string", "minLength": 1, "maxLength": 100},
}

PENDING_ACTIONS: Schema = {  # .checkpoint.json pending_actions, facts §3
    "type": "array",
    "items": {"type": "object", "properties": {"type": {"type": "string", "minLength": 1}}, "required": ["type"]},
}

CHECKPOINT_EXTRA: Schema = {  # unknown .checkpoint.json keys, preserved (facts §3)
    "type": "object",
    "title": "Other checkpoint keys",
    "additionalProperties": True,
}

OPAQUE_JSON: Schema = {  # characters/relationships.json has no schema anywhere (facts §10.3)
    "type": ["object", "array"],
}

# --- World, characters, storylines --------------------------------------------------------------

RULE_EXCEPTIONS: Schema = {"type": "array", "items": {}}

CHARACTER_CONTRACTS: Schema = {  # the contracts[] of characters/<status>/<slug>.json, facts §10.2
    "type": "array",
    "title": "L2 contracts",
    "items": {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": r"^C-[A-Z0-9]+(?:-[A-Z0-9]+)*$"},
            "type": {"type": "string", "enum": ["capability", "personality", "relationship", "speech"]},
            "rule": {"type": "string", "minLength": 1},
            "valid_from_chapter": _nullable("integer", minimum=0),
            "valid_until": _nullable("integer", minimum=0),
            "exceptions": {"type": "array"},
            "update_requires": {},
        },
        "required": ["id", "type", "rule"],
    },
}

CHARACTER_ALIASES: Schema = {  # other names and titles the text may call a character by (#18; an extra key in the tree)
    "type": "array",
    "title": "Aliases and titles",
    "items": {"type": "string", "minLength": 1, "maxLength": 40},
    "maxItems": 50,
}

EXTRA_KEYS: Schema = {  # keys of an imported file that Novelsite does not model, kept for export
    "type": "object",
    "title": "Other keys",
    "additionalProperties": True,
}

STORYLINE_SPEC: Schema = {  # storylines/storyline-spec.json, facts §10.5
    "type": "object",
    "title": "LS storyline spec",
    "properties": {
        "spec_version": {"type": "integer", "minimum": 1},
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": r"^LS-\d{3}$"},
                    "category": {"type": "string"},
                    "rule": {"type": "string", "minLength": 1},
                    "constraint_type": {"type": "string", "enum": ["hard", "soft"]},
                },
                "required": ["id", "rule", "constraint_type"],
            },
        },
    },
    "additionalProperties": True,
}

STORYLINES_META: Schema = {  # the parts of storylines.json besides the lines themselves, facts §10.4
    "type": "object",
    "title": "Storyline relationships and types",
    "properties": {
        "relationships": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"from": {"type": "string"}, "to": {"type": "string"}, "type": {"type": "string"}},
                "required": ["from", "to"],
                "x-editor": {"properties": {  # facts §10.4
                    "bridges": {"type": "object", "properties": {
                        "shared_characters": STRING_LIST, "shared_foreshadowing": STRING_LIST,
                        "shared_events": STRING_LIST}},
                    "convergence_condition": {"type": "string"}, "narrative_function": {"type": "string"}}},
            },
        },
        "storyline_types": {"type": "array"},
    },
    "additionalProperties": True,
}

# --- Volumes and contracts ----------------------------------------------------------------------

STORYLINE_SCHEDULE: Schema = {  # volumes/vol-VV/storyline-schedule.json, facts §10.6 and §15.1
    "type": "object",
    "title": "Storyline schedule",
    "properties": {
        "volume": {"type": "integer", "minimum": 1},
        "volume_theme": {"type": "string"},
        "active_storylines": {
            "type": "array",
            "minItems": 1,
            "maxItems": 4,
            "items": {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {
                        "type": "object",
                        "properties": {
                            "storyline_id": {"type": "string", "minLength": 1},
                            "volume_role": {"type": "string"},
                            "target_chapters": {},
                            "arc_goal": {"type": "string"},
                        },
                        "required": ["storyline_id"],
                    },
                ]
            },
        },
        "interleaving_pattern": {"type": "object", "x-editor": {"properties": {
            "strategy": {"type": "string"}, "primary_max_consecutive": {"type": "number"},
            "secondary_min_appearance": {"type": "string"}, "seasoning_placement": {"type": "string"}}}},
        "convergence_events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"chapter_range": CHAPTER_RANGE, "involved_storylines": STRING_LIST},
                "x-editor": {"properties": {"trigger": {"type": "string"}, "aftermath": {"type": "string"}}},
            },
        },
        "dormant_storylines": {"type": "array"},
        "newly_activated": {"type": "array"},
    },
    "additionalProperties": True,
}

FORESHADOW_SCOPES = ("short", "medium", "long")
FORESHADOW_STATUSES = ("planted", "advanced", "resolved")

_FORESHADOW_PLAN_ITEM: Schema = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": {"type": "string"},
        "scope": {"type": "string", "enum": list(FORESHADOW_SCOPES)},
        "status": {"type": "string", "enum": list(FORESHADOW_STATUSES)},
        "target_resolve_range": {"anyOf": [CHAPTER_RANGE, {"type": "null"}]},
    },
    "required": ["id"],
}

FORESHADOWING_PLAN: Schema = {  # facts §10.9 and §15.2: {items}, {foreshadowing} or a bare list
    "title": "Foreshadowing plan",
    "anyOf": [
        {
            "type": "object",
            "properties": {
                "schema_version": {"type": "integer"},
                "volume": {"type": "integer"},
                "items": {"type": "array", "items": _FORESHADOW_PLAN_ITEM},
                "foreshadowing": {"type": "array", "items": _FORESHADOW_PLAN_ITEM},
            },
            "additionalProperties": True,
        },
        {"type": "array", "items": _FORESHADOW_PLAN_ITEM},
    ],
}

NEW_CHARACTERS: Schema = {  # volumes/vol-VV/new-characters.json, facts §6
    "type": "array",
    "title": "New characters",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "role": {"type": "string", "enum": ["antagonist", "supporting", "minor"]},
            "brief": {"type": "string"},
            "first_chapter": CHAPTER_NUMBER,
        },
        "required": ["name", "role", "first_chapter"],
    },
}

_CHECK_ITEM: Schema = {"type": "object", "properties": {"status": {"type": "string"}, "confidence": {"type": "string"}}}

CHAPTER_CONTRACT: Schema = {  # volumes/vol-VV/chapter-contracts/chapter-NNN.json, facts §10.7
    "type": "object",
    "title": "L3 chapter contract",
    "properties": {
        "chapter": CHAPTER_NUMBER,
        "storyline_id": {"type": "string", "pattern": SLUG_PATTERN},
        "storyline_context": {"type": "object", "x-editor": {"properties": {  # facts §10.7
            "last_chapter_on_this_line": {"type": "integer"}, "last_chapter_summary": {"type": "string"},
            "chapters_since_last": {"type": "number"}, "line_arc_progress": {"type": "string"},
            "concurrent_state": {"type": "object", "additionalProperties": {"type": "string"}}}}},
        "transition_hint": {"type": ["object", "null"], "x-editor": {"properties": {
            "next_storyline": {"type": "string"}, "bridge": {"type": "string"}}}},
        "excitement_type": {"type": ["string", "null"]},
        "preconditions": {
            "type": "object",
            "properties": {
                "character_states": {"type": "object", "additionalProperties": {"type": "object"}},
                "required_world_rules": STRING_LIST,
            },
        },
        "objectives": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "type": {"type": "string", "enum": ["plot", "foreshadowing", "character_development"]},
                    "required": {"type": "boolean"},
                    "description": {"type": "string", "minLength": 1},
                },
                "required": ["id", "type", "required", "description"],
            },
            # facts §6: at least one objective must be required
            "contains": {"type": "object", "properties": {"required": {"const": True}}, "required": ["required"]},
        },
        "postconditions": {
            "type": "object",
            "properties": {
                # facts §10.7: {character: {key: value}}; validation stays as open as the original tool
                "state_changes": {"type": "object", "x-editor": {"additionalProperties": {"type": "object"}}},
                "foreshadowing_updates": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "enum": list(FORESHADOW_STATUSES)},
                },
            },
        },
        "acceptance_criteria": STRING_LIST,
    },
    "required": ["chapter", "storyline_id", "objectives"],
    "additionalProperties": True,
}

# --- State ---------------------------------------------------------------------------------------

STATE_TOP_LEVEL_OP_KEYS = ("characters", "items", "locations", "factions", "world_state", "active_foreshadowing")

STORY_STATE: Schema = {  # state/current-state.json, seed 000 §9.2, facts §10.8
    "type": "object",
    "title": "Story state",
    "properties": {
        "schema_version": {"type": "integer", "minimum": 1},
        "state_version": {"type": "integer", "minimum": 0},
        "last_updated_chapter": {"type": "integer", "minimum": 0},
        "characters": {
            "type": "object",
            "propertyNames": {"pattern": SLUG_PATTERN},
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "display_name": {"type": "string"},
                    "relationships": {
                        "type": "object",
                        "propertyNames": {"pattern": SLUG_PATTERN},
                        "additionalProperties": {"type": "number"},
                    },
                    "inventory": {"type": "array"},
                },
            },
        },
        "items": {"type": "object"},
        "locations": {"type": "object"},
        "factions": {"type": "object"},
        "world_state": {"type": "object"},
        "active_foreshadowing": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["schema_version", "state_version", "last_updated_chapter", "characters", "world_state",
                 "active_foreshadowing"],
    "additionalProperties": True,
}

STATE_OP: Schema = {
    "type": "object",
    "properties": {
        "op": {"type": "string", "enum": ["set", "add", "remove", "inc", "foreshadow"]},
        "path": {"type": "string", "minLength": 1, "maxLength": 300},
        "value": {},
        "detail": {"type": "string"},
    },
    "required": ["op", "path"],
}

STATE_DELTA: Schema = {  # staging/state/chapter-NNN-delta.json and each changelog.jsonl line
    "type": "object",
    "title": "State delta",
    "properties": {
        "chapter": {"type": "integer", "minimum": 0},
        "base_state_version": {"type": "integer", "minimum": 0},
        "storyline_id": {"type": "string", "pattern": SLUG_PATTERN},
        "ops": {"type": "array", "items": STATE_OP},
    },
    "required": ["chapter", "base_state_version", "storyline_id", "ops"],
    "additionalProperties": True,
}

# --- Evaluations and logs -----------------------------------------------------------------------

_SCORE: Schema = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 1, "maximum": 5},
        "weight": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string"},
        "evidence": {},
    },
    "required": ["score"],
}

_FLAT_EVALUATION: Schema = {  # facts §10.11
    "type": "object",
    "properties": {
        "chapter": CHAPTER_NUMBER,
        "contract_verification": {
            "type": "object",
            "properties": {
                "l1_checks": {"type": "array", "items": _CHECK_ITEM},
                "l2_checks": {"type": "array", "items": _CHECK_ITEM},
                "l3_checks": {"type": "array", "items": _CHECK_ITEM},
                "ls_checks": {"type": "array", "items": _CHECK_ITEM},
                "has_violations": {"type": "boolean"},
            },
        },
        "scores": {
            "type": "object",
            "propertyNames": {"enum": [*SCORE_DIMENSIONS, "hook_strength"]},
            "additionalProperties": _SCORE,
        },
        "overall": {"type": "number", "minimum": 0, "maximum": 5},
        "overall_final": {"type": "number", "minimum": 0, "maximum": 5},
        "recommendation": {"type": "string", "enum": ["pass", "polish", "revise", "review", "rewrite"]},
        "risk_flags": {"type": "array"},
        "required_fixes": {
            "type": "array",
            "items": {"anyOf": [{"type": "string"},
                                {"type": "object", "properties": {"instruction": {"type": "string"}}}]},
        },
        "issues": {"type": "array"},
        "strengths": {"type": "array"},
    },
    "required": ["overall", "recommendation"],
    "additionalProperties": True,
}

EVALUATION: Schema = {  # facts §15.7: flat judge output or wrapped {eval_used, metadata}
    "title": "Evaluation",
    "anyOf": [
        _FLAT_EVALUATION,
        {
            "type": "object",
            "properties": {"chapter": CHAPTER_NUMBER, "eval_used": _FLAT_EVALUATION, "metadata": {"type": "object"}},
            "required": ["eval_used"],
            "additionalProperties": True,
        },
    ],
}

GATE_DECISIONS = ("pass", "polish", "revise", "pause_for_user", "pause_for_user_force_rewrite", "force_passed")

CHAPTER_LOG: Schema = {  # logs/chapter-NNN-log.json, seed 000 §9.2 and facts §10.13, plus cache and cost
    "type": "object",
    "title": "Pipeline log",
    "properties": {
        "chapter": CHAPTER_NUMBER,
        "storyline_id": {"type": "string"},
        "started_at": {"type": "string"},
        "stages": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "model": {"type": "string"},
                    "duration_ms": {"type": "integer", "minimum": 0},
                    "input_tokens": _nullable("integer", minimum=0),
                    "output_tokens": _nullable("integer", minimum=0),
                    "cache_creation_input_tokens": _nullable("integer", minimum=0),
                    "cache_read_input_tokens": _nullable("integer", minimum=0),
                    "cost_usd": _nullable("number", minimum=0),
                },
                "required": ["name"],
            },
        },
        "gate_decision": _nullable("string"),
        "revisions": {"type": "integer", "minimum": 0},
        "force_passed": {"type": "boolean"},
        "judges": {"type": "object"},
        "total_duration_ms": _nullable("integer", minimum=0),
        "total_cost_usd": _nullable("number", minimum=0),
    },
    "required": ["chapter", "stages"],
    "additionalProperties": True,
}

# --- Pipeline runtime records (pipeline app) ----------------------------------------------------

BLACKBOARD: Schema = {  # seed 001: three zones
    "type": "object",
    "title": "Blackboard",
    "properties": {"meta": {"type": "object"}, "content": {"type": "object"}, "control": {"type": "object"},
                   "history": {"type": "object"}},  # earlier versions of content keys
    "required": ["meta", "content", "control"],
    "additionalProperties": False,
}

PROMPT_RECEIPT: Schema = {
    "type": "object",
    "title": "Prompt receipt",
    "properties": {
        "blocks": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "role": {"type": "string", "enum": ["system", "user", "assistant"]},
                    "tokens": {"type": "integer", "minimum": 0},
                    "cacheable": {"type": "boolean"},
                },
                "required": ["name", "role", "tokens"],
            },
        },
        "trimmed": {"type": "array"},
        "prompt_sha256": {"type": "string"},
        "token_counter": {"type": "string"},
    },
    "additionalProperties": True,
}

LLM_USAGE: Schema = {
    "type": "object",
    "title": "Usage",
    "properties": {
        "input_tokens": {"type": "integer", "minimum": 0},
        "output_tokens": {"type": "integer", "minimum": 0},
        "cache_creation_input_tokens": {"type": "integer", "minimum": 0},
        "cache_read_input_tokens": {"type": "integer", "minimum": 0},
    },
    "additionalProperties": True,
}

QUESTION_SPEC: Schema = {  # seed 003; the full rule set lives in pipeline/questions/spec.py
    "type": "object",
    "title": "NOVEL_ASK question",
    "properties": {
        "version": {"type": "integer", "minimum": 1},
        "topic": {"type": "string", "minLength": 1},
        "questions": {"type": "array", "minItems": 1, "items": {"type": "object"}},
    },
    "required": ["version", "topic", "questions"],
}

ANSWER_SPEC: Schema = {
    "type": "object",
    "title": "NOVEL_ASK answer",
    "properties": {
        "version": {"type": "integer", "minimum": 1},
        "topic": {"type": "string", "minLength": 1},
        "answers": {"type": "object"},
        "answered_at": {"type": "string"},
        "answered_by": {"type": "string", "minLength": 1},
    },
    "required": ["version", "topic", "answers", "answered_at", "answered_by"],
}

# --- Whole files of the tree, as the importer reads them -------------------------------------------

_COUNTER: Schema = {"type": "integer", "minimum": 0}

CHECKPOINT_FILE: Schema = {  # .checkpoint.json, facts §3 (unknown keys are kept)
    "type": "object",
    "properties": {
        "last_completed_chapter": _COUNTER,
        "current_volume": {"type": "integer", "minimum": 1},
        "orchestrator_state": {"type": "string", "enum": list(ORCHESTRATOR_STATES)},
        "pipeline_stage": _nullable("string", enum=[*PIPELINE_STAGES, None]),
        "volume_pipeline_stage": _nullable("string", enum=[*VOLUME_PIPELINE_STAGES, None]),
        "quickstart_phase": _nullable("string", enum=[*QUICKSTART_PHASES, None]),
        "inflight_chapter": _nullable("integer", minimum=1),
        "revision_count": _COUNTER,
        "hook_fix_count": _COUNTER,
        "title_fix_count": _COUNTER,
        "last_committed_volume": _COUNTER,
        "pending_actions": PENDING_ACTIONS,
        "last_checkpoint_time": _nullable("string", format="date-time"),
    },
    "required": ["last_completed_chapter", "current_volume"],
    "additionalProperties": True,
}

WORLD_RULES_FILE: Schema = {  # world/rules.json, facts §10.1
    "type": "object",
    "properties": {
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": r"^W-\d{3,}$"},
                    "category": {"type": "string"},
                    "rule": {"type": "string", "minLength": 1},
                    "constraint_type": {"type": "string", "enum": ["hard", "soft"]},
                    "canon_status": {"type": "string", "enum": ["established", "planned", "deprecated"]},
                    "exceptions": RULE_EXCEPTIONS,
                    "introduced_chapter": _nullable("integer", minimum=0),
                    "last_verified": _nullable("integer", minimum=0),
                    "keywords": STRING_LIST,
                },
                "required": ["id", "rule", "constraint_type"],
            },
        }
    },
    "required": ["rules"],
}

CHARACTER_FILE: Schema = {  # characters/<status>/<slug>.json, facts §10.2
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": SLUG_PATTERN},
        "display_name": {"type": "string", "minLength": 1, "maxLength": 100},
        "canon_status": {"type": "string", "enum": ["established", "planned", "deprecated"]},
        "contracts": CHARACTER_CONTRACTS,
        "aliases": CHARACTER_ALIASES,
    },
    "required": ["display_name", "contracts"],
    "additionalProperties": True,
}

STORYLINES_FILE: Schema = {  # storylines/storylines.json, facts §10.4
    "type": "object",
    "properties": {
        "storylines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "pattern": SLUG_PATTERN},
                    "name": {"type": "string", "minLength": 1, "maxLength": 100},
                    "type": {"type": "string"},
                    "scope": {"type": "string", "enum": ["novel", "multi_volume", "single_volume"]},
                    "pov_characters": STRING_LIST,
                    "affiliated_factions": STRING_LIST,
                    "timeline": {"type": "string", "maxLength": 40},
                    "status": {"type": "string", "enum": ["active", "dormant", "planned"]},
                    "description": {"type": "string"},
                    "introduced_volume": _nullable("integer", minimum=1),
                },
                "required": ["id", "name"],
            },
        },
        "relationships": STORYLINES_META["properties"]["relationships"],
    },
    "required": ["storylines"],
    "additionalProperties": True,
}

_GLOBAL_ITEM: Schema = {  # foreshadowing/global.json item, facts §10.9
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": {"type": "string"},
        "scope": {"type": "string", "enum": list(FORESHADOW_SCOPES)},
        "status": {"type": "string", "enum": list(FORESHADOW_STATUSES)},
        "planted_chapter": _nullable("integer", minimum=0),
        "planted_storyline": _nullable("string"),
        "target_resolve_range": {"anyOf": [CHAPTER_RANGE, {"type": "null"}]},
        "last_updated_chapter": _nullable("integer", minimum=0),
        "history": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "chapter": {"type": "integer", "minimum": 0},
                    "action": {"type": "string", "enum": list(FORESHADOW_STATUSES)},
                    "detail": {"type": "string"},
                },
                "required": ["chapter", "action"],
            },
        },
    },
    "required": ["id", "status"],
}

GLOBAL_FORESHADOWING: Schema = {  # a bare array is accepted on read (facts §10.9)
    "anyOf": [
        {"type": "object", "properties": {"foreshadowing": {"type": "array", "items": _GLOBAL_ITEM}},
         "required": ["foreshadowing"]},
        {"type": "array", "items": _GLOBAL_ITEM},
    ]
}

NOVELSITE_PROJECT: Schema = {  # novelsite/project.json: Novelsite's extension of the tree
    "type": "object",
    "properties": {
        "format": {"type": "string", "const": "novelsite-tree/1"},
        "slug": {"type": "string"},
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "genre": {"type": "string", "maxLength": 40},
        "target_platform": {"type": "string", "maxLength": 40},
        "genre_drive_type": {"type": "string", "enum": ["", "plot", "character", "suspense", "slice_of_life"]},
        "autopilot": {
            "type": "object",
            "properties": {"enabled": {"type": "boolean"},
                           "chapters_per_night": {"type": "integer", "minimum": 0, "maximum": 1000},
                           "cost_cap_usd": {"type": "string", "pattern": r"^\d{1,6}(\.\d{1,2})?$"}},
        },
        "manual_cost_cap_usd": {"type": "string", "pattern": r"^\d{1,6}(\.\d{1,2})?$"},
        "gate_settings": GATE_SETTINGS,
        "lint_settings": LINT_SETTINGS,
        "stage_models": STAGE_MODELS,
        "volumes": {
            "type": "object",
            "propertyNames": {"pattern": r"^[1-9]\d*$"},
            "additionalProperties": {
                "type": "object",
                "properties": {"title": {"type": "string", "maxLength": 200},
                               "status": {"type": "string", "enum": ["writing", "reviewing", "closed"]}},
            },
        },
        "chapter_volumes": {"type": "object", "propertyNames": {"pattern": r"^[1-9]\d*$"},
                            "additionalProperties": {"type": "integer", "minimum": 1}},
        "chapter_storylines": {"type": "object", "propertyNames": {"pattern": r"^[1-9]\d*$"},
                               "additionalProperties": {"type": ["string", "null"]}},
        "inactive_style_drift": {"anyOf": [STYLE_DRIFT, {"type": "null"}]},
        "platform_profile": {"type": ["object", "null"]},  # checked in full by projects.platforms.profiles
    },
    "required": ["format"],
}

ARCHIVED_SUMMARIES: Schema = {  # novelsite/archived-summaries.json: memory levels (seed 002 and beyond)
    "type": "object",
    "properties": {
        "archived_summaries": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "level": {"type": "string", "enum": ["archive", "volume", "synopsis"]},
                    "chapter_start": {"type": "integer", "minimum": 1},
                    "chapter_end": {"type": "integer", "minimum": 1},
                    "volume_number": _nullable("integer", minimum=1),
                    "superseded": {"type": "boolean"},
                    "text": {"type": "string", "minLength": 1},
                },
                "required": ["level", "chapter_start", "chapter_end", "text"],
            },
        }
    },
    "required": ["archived_summaries"],
}

# --- the facts ledger (issue #18): lasting facts of the story, novelsite/facts.json --------------
STORY_FACT_KINDS = ("promise", "debt", "injury", "death", "departure", "identity", "secret", "other")
STORY_FACT_STATUSES = ("open", "fulfilled", "cancelled")
STORY_FACT_TEXT_MAX = 300
STORY_FACT_ID_PATTERN = SLUG_PATTERN

STORY_FACT_CHARACTERS: Schema = {"type": "array", "items": {"type": "string", "pattern": SLUG_PATTERN},
                                 "maxItems": 20, "uniqueItems": True}

_STORY_FACT: Schema = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": STORY_FACT_ID_PATTERN, "maxLength": 60},
        "kind": {"type": "string", "enum": list(STORY_FACT_KINDS)},
        "text": {"type": "string", "minLength": 1, "maxLength": STORY_FACT_TEXT_MAX},
        "chapter": CHAPTER_NUMBER,
        "characters": STORY_FACT_CHARACTERS,
        "storyline": {"type": "string", "maxLength": 60},
        "foreshadowing": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200},
                          "maxItems": 20},
        "status": {"type": "string", "enum": list(STORY_FACT_STATUSES)},
        "closed_chapter": _nullable("integer", minimum=1),
        "closing_note": {"type": "string", "maxLength": STORY_FACT_TEXT_MAX},
        "origin": {"type": "string", "enum": ["pipeline", "person"]},
    },
    "required": ["id", "kind", "text", "chapter", "status"],
    "additionalProperties": False,
}

STORY_FACTS_FILE: Schema = {  # novelsite/facts.json
    "type": "object",
    "properties": {"facts": {"type": "array", "items": _STORY_FACT}},
    "required": ["facts"],
}
# --- platform profiles (facts §2, §7.3, §10.11, §11; projects/platforms) ------------------------------

PLATFORM_IDS = ("qidian", "fanqie", "jinjiang", "general")  # what a novel is written for
PLATFORM_FILE_IDS = ("qidian", "tomato", "fanqie", "jinjiang", "general")  # tomato: the CLI's old name of fanqie
WEIGHT_DIMENSIONS = (*SCORE_DIMENSIONS, "hook_strength")
_COUNT: Schema = {"type": "integer", "minimum": 0, "maximum": 1_000_000}
_POSITIVE: Schema = {"type": "integer", "minimum": 1, "maximum": 1_000_000}
_SEVERITY: Schema = {"type": "string", "enum": ["warn", "soft", "hard"]}
_WORDS: Schema = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 200}, "maxItems": 500}


def _strict_object(properties: dict[str, Schema], required: list[str] | None = None) -> Schema:
    """An object with the given keys required (all by default); other keys are kept (the tool's own
    ``_comment`` keys, future fields)."""
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else required, "additionalProperties": True}


PLATFORM_PROFILE: Schema = _strict_object({  # platform-profile.json, as novel-writer-cli validates it
    "schema_version": {"type": "integer", "minimum": 1},
    "platform": {"type": "string", "enum": list(PLATFORM_FILE_IDS)},
    "created_at": {"type": "string", "maxLength": 40},
    "word_count": _strict_object({"target_min": _COUNT, "target_max": _COUNT, "hard_min": _COUNT, "hard_max": _COUNT}),
    "hook_policy": _strict_object({
        "required": {"type": "boolean"},
        "min_strength": {"type": "integer", "minimum": 1, "maximum": 5},
        "allowed_types": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 40},
                          "minItems": 1, "maxItems": 20},
        "fix_strategy": {"type": "string", "enum": ["hook-fix"]},
    }),
    "info_load": _strict_object({"max_new_entities_per_chapter": _COUNT, "max_unknown_entities_per_chapter": _COUNT,
                                 "max_new_terms_per_1k_words": {"type": "number", "minimum": 0, "maximum": 1000}}),
    "compliance": _strict_object({"banned_words": _WORDS, "duplicate_name_policy": _SEVERITY,
                                  "script_paths": {"type": "object", "additionalProperties": {"type": "string"}}},
                                 required=["banned_words", "duplicate_name_policy"]),
    "scoring": _strict_object({
        "genre_drive_type": {"type": "string", "minLength": 1, "maxLength": 40},
        "weight_profile_id": {"type": "string", "minLength": 1, "maxLength": 60},
        "weight_overrides": {"type": "object", "propertyNames": {"enum": list(WEIGHT_DIMENSIONS)},
                             "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100}},
        "max_revisions": {"type": "integer", "minimum": 0, "maximum": 10},
    }, required=["genre_drive_type", "weight_profile_id"]),
    "retention": {"type": ["object", "null"], "properties": {
        "title_policy": _strict_object({
            "enabled": {"type": "boolean"}, "min_chars": _COUNT, "max_chars": _COUNT,
            "forbidden_patterns": {"type": "array", "items": {"type": "string", "maxLength": 500}, "maxItems": 50},
            "auto_fix": {"type": "boolean"}}),
        "hook_ledger": _strict_object({
            "enabled": {"type": "boolean"}, "fulfillment_window_chapters": _POSITIVE,
            "diversity_window_chapters": _POSITIVE, "max_same_type_streak": _POSITIVE,
            "min_distinct_types_in_window": _POSITIVE, "overdue_policy": _SEVERITY}),
    }, "required": ["title_policy", "hook_ledger"]},
    "readability": {"type": ["object", "null"], "properties": {"mobile": _strict_object({
        "enabled": {"type": "boolean"}, "max_paragraph_chars": _POSITIVE,
        "max_consecutive_exposition_paragraphs": _POSITIVE,
        "blocking_severity": {"type": "string", "enum": ["hard_only", "soft_and_hard"]}})}, "required": ["mobile"]},
    "naming": {"type": ["object", "null"], "properties": {
        "enabled": {"type": "boolean"}, "near_duplicate_threshold": {"type": "number", "minimum": 0, "maximum": 1},
        "blocking_conflict_types": {"type": "array", "items": {
            "type": "string", "enum": ["duplicate", "near_duplicate", "alias_collision"]}},
        "exemptions": {"type": "object"}}, "required": ["enabled", "near_duplicate_threshold",
                                                       "blocking_conflict_types"]},
}, required=["schema_version", "platform", "word_count", "info_load", "compliance"])

_WEIGHTS: Schema = {"type": "object", "propertyNames": {"enum": list(WEIGHT_DIMENSIONS)},
                    "additionalProperties": {"type": "number", "minimum": 0, "maximum": 100}, "minProperties": 1}

GENRE_WEIGHT_PROFILES: Schema = _strict_object({  # genre-weight-profiles.json (facts §10.11)
    "schema_version": {"type": "integer", "minimum": 1},
    "normalization": {"type": "object", "properties": {
        "method": {"type": "string", "enum": ["scale_to_sum"]}, "sum_to": {"type": "number", "exclusiveMinimum": 0},
        "tolerance": {"type": "number", "minimum": 0}}},
    "default_profile_by_drive_type": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 60}},
    "platform_multipliers": {"type": "object", "propertyNames": {"enum": list(PLATFORM_FILE_IDS)},
                             "additionalProperties": _WEIGHTS},
    "profiles": {"type": "object", "minProperties": 1, "additionalProperties": _strict_object(
        {"drive_type": {"type": "string"}, "weights": _WEIGHTS}, required=["weights"])},
}, required=["profiles"])

_GOLDEN_GATE: Schema = _strict_object({
    "id": {"type": "string", "minLength": 1, "maxLength": 80},
    "requirement": {"type": "string", "minLength": 1, "maxLength": 1000},
    "evaluation_hint": {"type": "string", "maxLength": 1000},
    "threshold": _strict_object({"metric": {"type": "string", "minLength": 1, "maxLength": 120},
                                 "operator": {"type": "string", "enum": [">=", "<=", ">", "<", "=="]},
                                 "value": {"type": "number"}}),
    "allowed_values": {"type": "array", "items": {"type": "string"}},
}, required=["id", "requirement"])

GOLDEN_CHAPTER_GATES: Schema = _strict_object({  # golden-chapter-gates.json: chapters 1-3 per platform
    "schema_version": {"type": "integer", "minimum": 1},
    "platforms": {"type": "object", "propertyNames": {"enum": list(PLATFORM_FILE_IDS)}, "additionalProperties": {
        "type": "object", "properties": {"chapters": {
            "type": "object", "propertyNames": {"enum": ["1", "2", "3"]}, "additionalProperties": _strict_object({
                "gates": {"type": "array", "items": _GOLDEN_GATE, "maxItems": 20},
                "notes": {"type": "array", "items": {"type": "string"}}}, required=["gates"])}},
        "required": ["chapters"]}},
    "invalid_combinations": {"type": "array", "items": {"type": "object"}},
}, required=["platforms"])


# Every schema a field, a serializer or a service may name (``SchemaJSONField(schema_name=...)``,
# ``json_issues(name, value)``), listed by hand: a new upper-case constant is not a schema by accident,
# and a schema is not one until it is entered here under its own name.
SCHEMAS: dict[str, Schema] = {
    "STRING_LIST": STRING_LIST, "CHAPTER_NUMBER": CHAPTER_NUMBER, "CHAPTER_RANGE": CHAPTER_RANGE,
    "STYLE_PROFILE": STYLE_PROFILE, "AI_BLACKLIST": AI_BLACKLIST, "STYLE_DRIFT": STYLE_DRIFT,
    "GATE_SETTINGS": GATE_SETTINGS, "LINT_SETTINGS": LINT_SETTINGS, "STAGE_MODELS": STAGE_MODELS,
    "PENDING_ACTIONS": PENDING_ACTIONS, "CHECKPOINT_EXTRA": CHECKPOINT_EXTRA, "OPAQUE_JSON": OPAQUE_JSON,
    "RULE_EXCEPTIONS": RULE_EXCEPTIONS, "CHARACTER_CONTRACTS": CHARACTER_CONTRACTS,
    "CHARACTER_ALIASES": CHARACTER_ALIASES, "EXTRA_KEYS": EXTRA_KEYS, "STORYLINE_SPEC": STORYLINE_SPEC,
    "STORYLINES_META": STORYLINES_META, "STORYLINE_SCHEDULE": STORYLINE_SCHEDULE,
    "FORESHADOWING_PLAN": FORESHADOWING_PLAN, "NEW_CHARACTERS": NEW_CHARACTERS, "CHAPTER_CONTRACT": CHAPTER_CONTRACT,
    "STORY_STATE": STORY_STATE, "STATE_OP": STATE_OP, "STATE_DELTA": STATE_DELTA, "EVALUATION": EVALUATION,
    "CHAPTER_LOG": CHAPTER_LOG, "BLACKBOARD": BLACKBOARD, "PROMPT_RECEIPT": PROMPT_RECEIPT, "LLM_USAGE": LLM_USAGE,
    "QUESTION_SPEC": QUESTION_SPEC, "ANSWER_SPEC": ANSWER_SPEC, "CHECKPOINT_FILE": CHECKPOINT_FILE,
    "WORLD_RULES_FILE": WORLD_RULES_FILE, "CHARACTER_FILE": CHARACTER_FILE, "STORYLINES_FILE": STORYLINES_FILE,
    "GLOBAL_FORESHADOWING": GLOBAL_FORESHADOWING, "NOVELSITE_PROJECT": NOVELSITE_PROJECT,
    "ARCHIVED_SUMMARIES": ARCHIVED_SUMMARIES, "STORY_FACT_CHARACTERS": STORY_FACT_CHARACTERS,
    "STORY_FACTS_FILE": STORY_FACTS_FILE, "PLATFORM_PROFILE": PLATFORM_PROFILE,
    "GENRE_WEIGHT_PROFILES": GENRE_WEIGHT_PROFILES, "GOLDEN_CHAPTER_GATES": GOLDEN_CHAPTER_GATES,
}
