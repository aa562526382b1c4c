"""A book moves between Novelsite and novel-writer-cli without friction (#20, items 1 and 2): a tree
imported and exported unchanged comes back byte for byte (key order, item order, timestamps,
changelog lines, shapes); changed data keeps the tree's order and form; timestamps never depend on
the server's time zone; a project that never ran has no ``null`` where the tool wants a string."""
from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from projects.checkpoint import checkpoint_of
from projects.filetree.fidelity import faithful_json, faithful_json_lines, reorder_like
from projects.filetree.importer import tree_import
from projects.filetree.source import read_tree
from projects.models import Project
from projects.sample_project import sample_project_create
from projects.services.foreshadowing import foreshadowing_create
from projects.services.story_state import story_state_apply_patch
from projects.services.volume_plan import StagedVolumePlan, volume_plan_commit
from tests.test_filetree import CLI_TREE, import_files, tree_of

pytestmark = pytest.mark.django_db


def original_files() -> dict[str, bytes]:
    return {str(p.relative_to(CLI_TREE)): p.read_bytes() for p in CLI_TREE.rglob("*") if p.is_file()}


def test_a_tool_tree_comes_back_byte_for_byte():
    project = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    exported, original = tree_of(project), original_files()
    for path, data in original.items():
        if path.startswith(".novel.lock/"):
            assert path not in exported  # never exported
            continue
        assert exported[path] == data, path
    assert set(exported) - set(original) == {"novelsite/project.json"}  # Novelsite's documented extension


def test_a_second_round_trip_is_byte_identical_too():
    first = tree_of(tree_import(read_tree(CLI_TREE), slug="wucheng").project)
    second = tree_of(import_files(first, slug="wucheng-2").project)
    assert {p: d for p, d in second.items() if p != "novelsite/project.json"} == \
        {p: d for p, d in first.items() if p != "novelsite/project.json"}


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/Los_Angeles"])
def test_timestamps_do_not_depend_on_the_servers_time_zone(settings, zone):
    settings.TIME_ZONE = zone
    project = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    # the tree's naive time is read as UTC, whatever the zone, and written back as it came
    assert project.last_checkpoint_time == datetime(2026, 2, 21, 15, 30, tzinfo=UTC)
    assert json.loads(tree_of(project)[".checkpoint.json"])["last_checkpoint_time"] == "2026-02-21T15:30:00"
    # a new time is written in one fixed form: UTC, milliseconds, Z (as the tool's toISOString)
    Project.objects.filter(pk=project.pk).update(last_checkpoint_time=datetime(2026, 3, 2, 14, 41, 7, tzinfo=UTC))
    project.refresh_from_db()
    assert checkpoint_of(project)["last_checkpoint_time"] == "2026-03-02T14:41:07.000Z"
    assert json.loads(tree_of(project)[".checkpoint.json"])["last_checkpoint_time"] == "2026-03-02T14:41:07.000Z"


def test_a_project_that_never_ran_has_no_null_time(make_user):
    project = sample_project_create(owner=make_user("owner"))
    assert project.last_checkpoint_time is None
    checkpoint = json.loads(tree_of(project)[".checkpoint.json"])
    assert "last_checkpoint_time" not in checkpoint  # the tool accepts a missing key, never null
    assert None not in (checkpoint["last_completed_chapter"], checkpoint["current_volume"])


def test_changed_data_keeps_the_trees_key_order_item_order_and_shape():
    project = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    foreshadowing_create(project=project, editor=None, fid="a_new_clue", description="新线索", scope="short",
                         target_resolve_start=3, target_resolve_end=6)
    exported = json.loads(tree_of(project)["foreshadowing/global.json"])
    before = json.loads((CLI_TREE / "foreshadowing/global.json").read_bytes())
    assert isinstance(exported, list)  # the tree's bare-list shape stays
    assert [item["id"] for item in exported] == [item["id"] for item in before] + ["a_new_clue"]
    assert list(exported[0]) == list(before[0])  # the tool's key order, not sorted keys


def test_new_changelog_lines_are_appended_in_the_tools_form_and_old_lines_kept():
    project = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    story_state_apply_patch(project=project, delta={
        "storyline_id": "main-arc", "chapter": 3, "base_state_version": 2,
        "ops": [{"value": "钟楼", "path": "characters.shen-yan.location", "op": "set"}]})
    lines = tree_of(project)["state/changelog.jsonl"].decode().splitlines()
    original = (CLI_TREE / "state/changelog.jsonl").read_text().splitlines()
    assert lines[:2] == original
    assert lines[2] == ('{"chapter":3,"base_state_version":2,"storyline_id":"main-arc",'
                        '"ops":[{"op":"set","path":"characters.shen-yan.location","value":"钟楼"}]}')


def test_a_replan_keeps_the_volume_key_and_no_empty_new_characters_file_is_added(make_user):
    project = tree_import(read_tree(CLI_TREE), slug="wucheng").project
    contract = json.loads((CLI_TREE / "volumes/vol-01/chapter-contracts/chapter-003.json").read_bytes())
    plan = StagedVolumePlan(volume=1, chapter_start=4, chapter_end=4,
                            outline="### 第 4 章：钟声\n- Storyline: main-arc",
                            schedule={"active_storylines": ["main-arc"]},
                            foreshadowing={"items": [{"id": "bell_tower", "description": "钟楼里的人"}]},
                            new_characters=[], contracts={4: {**contract, "chapter": 4}})
    volume_plan_commit(project=project, plan=plan)
    assert project.volumes.get(number=1).foreshadowing_plan["volume"] == 1
    plan_file = json.loads(tree_of(project)["volumes/vol-01/foreshadowing.json"])
    assert plan_file["volume"] == 1

    lacking = {p: d for p, d in original_files().items() if p != "volumes/vol-01/new-characters.json"}
    imported = import_files(lacking, slug="no-new-characters").project
    assert "volumes/vol-01/new-characters.json" not in tree_of(imported)
    fresh = sample_project_create(owner=make_user("owner"))  # Novelsite's own plans always have one
    fresh.volumes.update(new_characters=[])
    assert tree_of(fresh)["volumes/vol-01/new-characters.json"] == b"[]\n"


# --- the pieces, on their own ------------------------------------------------------------------------

def test_reorder_like_follows_the_original_and_puts_new_things_last():
    original = {"b": 1, "a": [{"id": "y", "k": 1, "j": 2}, {"id": "x"}], "c": 3}
    value = {"a": [{"id": "x"}, {"id": "z"}, {"j": 5, "id": "y", "k": 1}], "b": 2, "d": 4}
    assert json.dumps(reorder_like(value, original)) == json.dumps(
        {"b": 2, "a": [{"id": "y", "k": 1, "j": 5}, {"id": "x"}, {"id": "z"}], "d": 4})


def test_numbers_and_booleans_are_not_mistaken_for_each_other():
    original = '{\n    "flag": 1,\n    "ratio": 1.0\n}\n'
    assert faithful_json("x.json", b'{"flag": true, "ratio": 1.0}', original) == \
        b'{\n    "flag": true,\n    "ratio": 1.0\n}\n'  # changed: the original's indent, not its text
    assert faithful_json("x.json", b'{"ratio": 1.0, "flag": 1}', original) == original.encode()


def test_broken_originals_or_exports_fall_back_to_the_export():
    assert faithful_json("x.json", b'{"a": 1}', "{not json") == b'{"a": 1}'
    assert faithful_json_lines(b'{"a":1}\n', "garbage\n") == b'{"a":1}\n'


def test_a_tool_state_without_the_foreshadowing_mirror_imports_without_a_warning():
    """The tool leaves ``active_foreshadowing`` as it is; Novelsite keeps it in step with the
    foreshadow ops. A state that differs only there is not "different from the replayed state"."""
    files = original_files()
    state = json.loads(files["state/current-state.json"])
    state["active_foreshadowing"] = []
    files["state/current-state.json"] = json.dumps(state, ensure_ascii=False, indent=2).encode()
    report = import_files(files, slug="no-mirror")
    assert not [w for w in report.warnings if "differs" in w]
    state["characters"]["shen-yan"]["location"] = "别处"  # a real difference still warns
    files["state/current-state.json"] = json.dumps(state, ensure_ascii=False, indent=2).encode()
    assert any("differs" in w for w in import_files(files, slug="differs").warnings)


@pytest.mark.parametrize(("line", "title"), [
    ("# 第 3 章 雾起", "雾起"), ("# 第3章 雾起", "雾起"), ("# 第3章：雾起", "雾起"), ("# 第十二章 雾起", "雾起"),
    ("# 雾起", "雾起"), ("# 第三者", "第三者"), ("#   第 7 章   ", ""),
])
def test_a_heading_names_its_title_without_the_chapter_number(line, title):
    from projects.filetree.chapter_heading import heading_title
    assert heading_title(line) == title


def test_chapters_get_the_tools_heading_and_an_imported_heading_comes_back_as_it_came():
    files = original_files()
    files["chapters/chapter-002.md"] = "# 第2章：半封信\n\n正文。\n".encode()
    project = import_files(files, slug="headings").project
    chapter = project.chapters.get(number=2)
    assert chapter.title == "半封信"  # the title alone
    exported = tree_of(project)
    assert exported["chapters/chapter-002.md"] == "# 第2章：半封信\n\n正文。\n".encode()  # as it came
    assert exported["chapters/chapter-001.md"].startswith("# 雾起\n".encode())
    project.chapters.filter(number=2).update(title="整封信")  # a new title: the tool's form
    assert tree_of(project)["chapters/chapter-002.md"].startswith("# 第 2 章 整封信\n".encode())


def test_an_outside_writers_heading_keeps_its_number_out_of_the_title():
    from pipeline.chapter.stages.draft import split_chapter
    assert split_chapter("# 第 5 章 夜渡\n\n正文", "第5章") == ("夜渡", "正文")
    assert split_chapter("正文没有标题", "第5章") == ("第5章", "正文没有标题")


@pytest.mark.django_db(transaction=True)
def test_a_committed_chapter_keeps_its_crossref_as_the_tools_commit_does(settings, make_user):
    """facts §7.4: the commit packet lists state/chapter-NNN-crossref.json; Novelsite's own commit
    writes it too, and a rollback of the chapter takes it back (#20 item 6)."""
    from pipeline.runtime.runs import chapter_run_start
    from projects.services.chapter_rollback import chapter_rollback_latest

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
    project = sample_project_create(owner=make_user("owner"))
    chapter_run_start(project_id=project.pk)
    crossref = json.loads(tree_of(project)["state/chapter-001-crossref.json"])
    assert isinstance(crossref, dict)
    chapter_rollback_latest(project=project, number=1)
    assert "state/chapter-001-crossref.json" not in tree_of(project)
