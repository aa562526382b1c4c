"""The state patch service: the StoryState row, the changelog and the foreshadowing ledger move
together or not at all; stale deltas are refused; on PostgreSQL, concurrent writers never both
apply a patch to the same base."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from projects.models import ChangeSource, Foreshadowing, StateChange, StoryState
from projects.selectors import foreshadowing_attention, foreshadowing_dormant, foreshadowing_overdue
from projects.services.story_state import story_state_apply_patch
from projects.state_ops import PatchError, StalePatch, replay
from tests.factories import ProjectFactory, VolumeFactory

pytestmark = pytest.mark.django_db


def delta(base: int, chapter: int, *ops: dict, storyline: str = "main-arc") -> dict:
    return {"chapter": chapter, "base_state_version": base, "storyline_id": storyline, "ops": list(ops)}


def set_op(path: str, value) -> dict:
    return {"op": "set", "path": path, "value": value}


def foreshadow(fid: str, status: str, detail: str = "") -> dict:
    return {"op": "foreshadow", "path": fid, "value": status, "detail": detail}


def test_patch_moves_state_version_and_writes_one_changelog_row(sample_project):
    state = sample_project.story_state
    change = story_state_apply_patch(
        project=sample_project, delta=delta(state.state_version, 1, set_op("characters.lin-feng.location", "幽暗森林"))
    )
    state.refresh_from_db()
    assert state.state_version == change.state_version == 2
    assert state.data["characters"]["lin-feng"]["location"] == "幽暗森林"
    assert state.data["last_updated_chapter"] == 1
    assert change.base_state_version == 1 and change.chapter == 1 and change.storyline_slug == "main-arc"
    assert sample_project.state_changes.count() == 2  # the sample's initial delta, then this one


def test_stale_delta_is_refused_and_nothing_is_written(sample_project):
    with pytest.raises(StalePatch) as caught:
        story_state_apply_patch(
            project=sample_project,
            delta=delta(0, 1, set_op("characters.lin-feng.location", "x"), foreshadow("p", "planted"))
        )
    assert caught.value.http_status == 409
    assert "0" in caught.value.message and "1" in caught.value.message
    assert StoryState.objects.get(project=sample_project).state_version == 1
    assert sample_project.state_changes.count() == 1
    assert not Foreshadowing.objects.filter(project=sample_project).exists()


def test_invalid_op_refuses_the_whole_delta(sample_project):
    bad = delta(1, 1, foreshadow("p", "planted"), set_op("characters.lin-feng.__proto__.x", 1))
    with pytest.raises(PatchError, match=r"op 1 .*__proto__"):
        story_state_apply_patch(project=sample_project, delta=bad)
    assert StoryState.objects.get(project=sample_project).data["active_foreshadowing"] == []
    assert not Foreshadowing.objects.filter(project=sample_project).exists()
    assert sample_project.state_changes.count() == 1


def test_changelog_replayed_from_empty_gives_the_current_state(sample_project):
    moves = ["幽暗森林", "魔都", "北境雪原"]
    for chapter, place in enumerate(moves, start=1):
        story_state_apply_patch(
            project=sample_project,
            delta=delta(chapter, chapter, set_op("characters.lin-feng.location", place),
                        {"op": "inc", "path": "characters.lin-feng.relationships.chen-lao", "value": 5}),
        )
    deltas = list(StateChange.objects.filter(project=sample_project).order_by("state_version")
                  .values_list("delta", flat=True))
    assert replay(deltas) == StoryState.objects.get(project=sample_project).data


def test_foreshadow_ops_update_the_ledger_by_the_rules(sample_project):
    story_state_apply_patch(project=sample_project,
                            delta=delta(1, 3, foreshadow("ancient_prophecy", "planted", "老者提及")))
    story_state_apply_patch(project=sample_project,
                            delta=delta(2, 15, foreshadow("ancient_prophecy", "advanced", "石板")))
    # a late "planted" never moves the status back nor resets planted_chapter
    story_state_apply_patch(project=sample_project,
                            delta=delta(3, 16, foreshadow("ancient_prophecy", "planted", "重复")),
                            source=ChangeSource.HUMAN)
    item = Foreshadowing.objects.get(project=sample_project, fid="ancient_prophecy")
    assert item.status == "advanced"
    assert item.planted_chapter == 3 and item.planted_storyline == "main-arc"
    assert item.last_updated_chapter == 16
    # seeded from the volume plan (sample volume 1 plans this id as long, chapters 10-20)
    assert item.description == "远古预言暗示主角命运"
    assert item.scope == "long"
    assert (item.target_resolve_start, item.target_resolve_end) == (10, 20)
    assert [(e.chapter, e.action) for e in item.events.all()] == [(3, "planted"), (15, "advanced"), (16, "planted")]
    state = StoryState.objects.get(project=sample_project).data
    assert state["active_foreshadowing"] == ["ancient_prophecy"]


def test_ledger_history_is_unique_by_chapter_and_action(sample_project):
    story_state_apply_patch(
        project=sample_project,
        delta=delta(1, 4, foreshadow("clue", "planted", "一"), foreshadow("clue", "planted", "二")),
    )
    item = Foreshadowing.objects.get(project=sample_project, fid="clue")
    assert item.events.count() == 1
    assert item.description == "clue" and item.scope == "medium"  # facts §10.9 placeholders


def test_resolved_foreshadowing_leaves_the_active_list(sample_project):
    story_state_apply_patch(project=sample_project, delta=delta(1, 2, foreshadow("clue", "planted")))
    story_state_apply_patch(project=sample_project, delta=delta(2, 5, foreshadow("clue", "resolved", "真相")))
    assert Foreshadowing.objects.get(project=sample_project, fid="clue").status == "resolved"
    assert StoryState.objects.get(project=sample_project).data["active_foreshadowing"] == []


# --- selectors: overdue and dormant (facts §10.9, §12) ---------------------------------------------


def _item(project, fid, scope, status="planted", last=None, end=None):
    return Foreshadowing.objects.create(project=project, fid=fid, scope=scope, status=status,
                                        last_updated_chapter=last, target_resolve_end=end)


def test_overdue_is_short_scope_past_its_range_and_unresolved():
    project = ProjectFactory(last_completed_chapter=12)
    _item(project, "late", "short", end=10)
    _item(project, "done", "short", status="resolved", end=10)
    _item(project, "in-range", "short", end=12)
    _item(project, "long-one", "long", end=5)  # long scope never goes overdue
    assert list(foreshadowing_overdue(project=project).values_list("fid", flat=True)) == ["late"]


def test_dormancy_thresholds_follow_scope_and_genre():
    project = ProjectFactory(last_completed_chapter=30, genre_drive_type="suspense")
    _item(project, "s", "short", last=27)  # silent 3, threshold 6-3=3 -> dormant
    _item(project, "m", "medium", last=22)  # silent 8, threshold 9 -> not yet
    _item(project, "l", "long", last=5)  # silent 25, threshold 21 -> dormant
    _item(project, "r", "short", status="resolved", last=1)
    dormant = foreshadowing_dormant(project=project)
    assert [(d.foreshadowing.fid, d.chapters_since_last_update, d.dormancy_threshold) for d in dormant] == [
        ("l", 25, 21),
        ("s", 3, 3),
    ]


def test_the_writers_one_read_of_foreshadowing_agrees_with_both_selectors(django_assert_num_queries):
    project = ProjectFactory(last_completed_chapter=30, genre_drive_type="plot")
    _item(project, "b-late", "short", last=20, end=25)
    _item(project, "a-late", "short", last=29, end=29)
    _item(project, "open-end", "short", last=2)  # no range: never overdue, long silent
    _item(project, "m", "medium", last=10, end=20)  # medium scope: dormant, never overdue
    _item(project, "done", "short", status="resolved", last=1, end=3)
    for as_of in (0, 24, 30, 60):
        with django_assert_num_queries(1):
            attention = foreshadowing_attention(project=project, as_of=as_of)
        assert attention.overdue == list(foreshadowing_overdue(project=project, as_of=as_of))
        assert attention.dormant == foreshadowing_dormant(project=project, as_of=as_of)


# --- PostgreSQL: row locks -----------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_patches_on_one_base_apply_exactly_once():
    project = ProjectFactory()
    VolumeFactory(project=project, number=1)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def writer(n: int) -> None:
        try:
            barrier.wait()
            story_state_apply_patch(project=project, delta=delta(0, 1, set_op("world_state.time_marker", f"t{n}")))
            outcomes.append("applied")
        except StalePatch:
            outcomes.append("stale")
        finally:
            connection.close()  # each thread has its own connection; close it or the test DB can't be dropped

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["applied", "stale", "stale", "stale"]
    state = StoryState.objects.get(project=project)
    assert state.state_version == 1
    assert StateChange.objects.filter(project=project).count() == 1
