"""What the writer is told about the story far behind it (#18): foreshadowing tasks with what
the item is, its scope and its history; character profiles by section (a secret whole, never cut
in the middle); the last real appearance of a returning character, not the last mention of her
name; memory levels sized to the chapters they cover, each listed in the prompt receipt.
The 200-chapter book is in tests/test_long_book_memory.py."""
from __future__ import annotations

import pytest

from pipeline.context import chapter_context
from projects.models import ChangeSource, ChapterContract
from projects.services.story_state import story_state_apply_patch

pytestmark = pytest.mark.django_db


def _delta(project, chapter: int, ops: list[dict]) -> None:
    version = project.story_state.__class__.objects.get(project=project).state_version
    story_state_apply_patch(project=project, delta={"chapter": chapter, "base_state_version": version,
                                                    "storyline_id": "main-arc", "ops": ops},
                            source=ChangeSource.IMPORT)


def _contract_set(project, chapter: int, **changes) -> None:
    row = ChapterContract.objects.get(project=project, chapter=chapter)
    data = dict(row.data)
    for key, value in changes.items():
        if key == "foreshadowing_updates":
            data["postconditions"] = {**data["postconditions"], "foreshadowing_updates": value}
        else:
            data[key] = value
    ChapterContract.objects.filter(pk=row.pk).update(data=data)


# --- Foreshadowing tasks -------------------------------------------------------------------------


def test_a_named_foreshadowing_task_carries_description_scope_and_history(sample_project):
    _delta(sample_project, 1, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "planted",
                                "detail": "陈老临终前念出预言的前半句"}])
    _delta(sample_project, 2, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced",
                                "detail": "密信上出现同样的星纹"}])
    _contract_set(sample_project, 3, foreshadowing_updates={"ancient_prophecy": "advanced"})

    tasks = chapter_context(sample_project, 3).foreshadowing_tasks

    task = next(t for t in tasks if t["id"] == "ancient_prophecy")
    assert task["description"] == "远古预言暗示主角命运"
    assert task["scope"] == "long" and task["planted_chapter"] == 1
    assert task["target_resolve_range"] == [10, 20]
    assert task["history"] == [{"chapter": 1, "action": "planted", "detail": "陈老临终前念出预言的前半句"},
                               {"chapter": 2, "action": "advanced", "detail": "密信上出现同样的星纹"}]
    assert "推进" in task["instruction"]
    assert [t["id"] for t in tasks].count("ancient_prophecy") == 1  # not repeated as dormant


def test_an_item_not_yet_in_the_ledger_is_described_from_the_volume_plan(sample_project):
    _contract_set(sample_project, 1, foreshadowing_updates={"ancient_prophecy": "planted", "no-such-item": "planted"})

    tasks = {t["id"]: t for t in chapter_context(sample_project, 1).foreshadowing_tasks}

    assert tasks["ancient_prophecy"]["description"] == "远古预言暗示主角命运"
    assert tasks["ancient_prophecy"]["target_resolve_range"] == [10, 20]
    assert tasks["no-such-item"] == {"id": "no-such-item", "instruction": "本章需要埋设此伏笔"}


def test_a_long_history_keeps_the_planting_and_the_latest_events(sample_project):
    _delta(sample_project, 1, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "planted"}])
    for chapter in range(2, 12):
        _delta(sample_project, chapter, [{"op": "foreshadow", "path": "ancient_prophecy", "value": "advanced",
                                          "detail": "星纹" * 100}])
    _contract_set(sample_project, 3, foreshadowing_updates={"ancient_prophecy": "resolved"})

    task = chapter_context(sample_project, 3).foreshadowing_tasks[0]

    assert [e["chapter"] for e in task["history"]] == [1, 7, 8, 9, 10, 11]
    assert all(len(e.get("detail", "")) <= 80 for e in task["history"])
