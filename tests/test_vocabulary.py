"""The shared vocabulary (``projects.vocabulary``) against the spec, and everything that takes its
lists from it: the model fields' choices, the JSON schemas, the step-id grammar, the tree tools and
the labels. Also the schema registry: every ``SchemaJSONField`` names a registered schema."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps

from pipeline.questions import spec as ask
from pipeline.steps import tree_next
from pipeline.steps import tree_validate as tree_steps
from pipeline.web import labels as pipeline_labels
from projects import schemas
from projects.json_fields import SchemaJSONField
from projects.labels import label_is_known
from projects.models import Project
from projects.vocabulary import (
    CHAPTER_AGENT_STEPS, CHAPTER_RUN_STEPS, CHAPTER_STEP_STAGES, IDLE_PIPELINE_STAGES, ORCHESTRATOR_STATES,
    PIPELINE_STAGES, QUICKSTART_PHASES, REVIEW_PHASES, STAGE_AFTER, STEP_PHASES, STYLE_SOURCE_TYPES,
    VOLUME_PIPELINE_STAGES, OrchestratorState, PipelineStage, QuickstartPhase, VolumePipelineStage, checkpoint_state,
    inflight_mismatch, legacy_state,
)

# facts §3's table and facts §1's step grammar, as written there
FACTS_STATES = ["INIT", "QUICK_START", "VOL_PLANNING", "WRITING", "CHAPTER_REWRITE", "VOL_REVIEW", "ERROR_RETRY"]
FACTS_STAGES = ["drafting", "drafted", "refined", "judged", "revising", "committed"]
FACTS_VOLUME_STAGES = ["outline", "validate", "commit"]
FACTS_QUICKSTART = ["world", "characters", "style", "f0", "trial", "results"]  # facts §5: in this order
FACTS_CHAPTER_STAGES = ("draft", "summarize", "refine", "judge", "title-fix", "hook-fix", "review", "commit")
FACTS_REVIEW = ("collect", "audit", "report", "cleanup", "transition")


def test_the_checkpoint_vocabulary_is_the_specs():
    assert list(ORCHESTRATOR_STATES) == list(OrchestratorState) == FACTS_STATES
    assert list(PIPELINE_STAGES) == list(PipelineStage) == FACTS_STAGES
    assert list(VOLUME_PIPELINE_STAGES) == list(VolumePipelineStage) == FACTS_VOLUME_STAGES
    assert list(QUICKSTART_PHASES) == list(QuickstartPhase) == FACTS_QUICKSTART
    assert all(type(word) is str for word in (*ORCHESTRATOR_STATES, *PIPELINE_STAGES, *QUICKSTART_PHASES))
    assert STYLE_SOURCE_TYPES == ("original", "reference", "template", "write_then_extract")  # facts §10.12


def test_the_step_grammar_is_the_specs():
    assert CHAPTER_STEP_STAGES == FACTS_CHAPTER_STAGES
    assert STEP_PHASES == {"volume": tuple(FACTS_VOLUME_STAGES), "quickstart": tuple(FACTS_QUICKSTART),
                           "review": FACTS_REVIEW}
    assert REVIEW_PHASES == FACTS_REVIEW
    assert STAGE_AFTER == {"draft": "drafting", "summarize": "drafted", "refine": "refined", "judge": "judged"}
    assert set(CHAPTER_AGENT_STEPS) < set(CHAPTER_STEP_STAGES)
    assert CHAPTER_RUN_STEPS[:-1] == (*CHAPTER_AGENT_STEPS, "commit")
    for kind, phases in STEP_PHASES.items():  # the parser accepts exactly these
        for phase in phases:
            assert ask.format_step_id(*ask.parse_step_id(f"{kind}:{phase}")) == f"{kind}:{phase}"
        with pytest.raises(ValueError, match="phase must be one of " + ", ".join(phases)):
            ask.parse_step_id(f"{kind}:nope")


def test_the_model_fields_and_the_checkpoint_schema_take_their_lists_from_the_vocabulary():
    fields = {name: Project._meta.get_field(name) for name in
              ("orchestrator_state", "pipeline_stage", "volume_pipeline_stage", "quickstart_phase")}
    properties = schemas.CHECKPOINT_FILE["properties"]
    for name, values in (("orchestrator_state", ORCHESTRATOR_STATES), ("pipeline_stage", PIPELINE_STAGES),
                         ("volume_pipeline_stage", VOLUME_PIPELINE_STAGES), ("quickstart_phase", QUICKSTART_PHASES)):
        assert tuple(value for value, _label in fields[name].choices) == values
        nullable = name != "orchestrator_state"
        assert properties[name]["enum"] == [*values, *([None] if nullable else [])]
    assert fields["orchestrator_state"].default == OrchestratorState.INIT  # facts §3: no checkpoint means INIT
    assert schemas.STYLE_PROFILE["properties"]["source_type"]["enum"] == list(STYLE_SOURCE_TYPES)


@pytest.mark.parametrize(("stage", "inflight", "state"), [  # facts §3: legacy inference
    (None, None, "WRITING"),
    ("committed", None, "WRITING"),
    (None, 4, "ERROR_RETRY"),  # idle, but a chapter in flight
    ("committed", 4, "ERROR_RETRY"),
    ("drafted", None, "ERROR_RETRY"),  # a stage in flight, but no chapter
    ("drafted", 4, "WRITING"),
    ("revising", 4, "CHAPTER_REWRITE"),
])
def test_the_legacy_rule(stage, inflight, state):
    checkpoint = {"pipeline_stage": stage, "inflight_chapter": inflight}
    assert legacy_state(checkpoint) == state
    assert checkpoint_state(checkpoint) == state
    assert checkpoint_state({**checkpoint, "orchestrator_state": "VOL_REVIEW"}) == "VOL_REVIEW"  # recorded wins
    assert checkpoint_state({**checkpoint, "orchestrator_state": "PAUSED"}) == state  # not a state: inferred
    mismatch = inflight_mismatch(stage, inflight)
    assert (mismatch is not None) == (state == "ERROR_RETRY")
    assert mismatch in (None, "drop_inflight" if stage in IDLE_PIPELINE_STAGES else "infer_inflight")


def test_the_tree_tools_walk_the_vocabularys_phases():
    assert [phase for phase, _artifact in tree_next.REVIEW_ORDER] == list(REVIEW_PHASES[:-1])
    assert set(tree_steps.REVIEW_NEEDS) == set(REVIEW_PHASES)
    assert set(tree_next._QUICKSTART_OUTPUT) == set(QUICKSTART_PHASES) - {QuickstartPhase.F0}


def test_every_word_of_the_vocabulary_has_a_label():
    for state in ORCHESTRATOR_STATES:
        assert label_is_known("state", state), state
    for stage in PIPELINE_STAGES:
        assert label_is_known("stage", stage), stage
    assert set(CHAPTER_STEP_STAGES) | set(CHAPTER_RUN_STEPS) <= set(pipeline_labels.CHAPTER_STAGES)
    for kind, phases in STEP_PHASES.items():
        assert set(phases) <= set(pipeline_labels.BOOK_STEPS[kind][1]), kind


def test_the_schema_registry_is_explicit():
    for name, schema in schemas.SCHEMAS.items():
        assert getattr(schemas, name) is schema, f"SCHEMAS[{name!r}] is not the schema named {name}"


def test_every_schema_json_field_names_a_registered_schema():
    found = []
    for model in apps.get_models(include_auto_created=True):
        for field in model._meta.get_fields():
            if isinstance(field, SchemaJSONField):
                found.append(field)
                assert field.schema_name in schemas.SCHEMAS, f"{model.__name__}.{field.name}: {field.schema_name}"
    assert len(found) > 10  # the walk did reach the models


def test_the_vocabulary_and_the_schemas_load_without_django():
    """``pipeline.jacquard`` reaches the schemas through ``projects.state_ops`` and stays free of Django."""
    code = ("import sys, projects.vocabulary, projects.schemas; "
            "print([m for m in sys.modules if m.startswith('django')])")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
