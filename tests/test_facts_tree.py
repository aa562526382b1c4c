"""The facts ledger in the file tree (issue #18): exported as novelsite/facts.json, Novelsite's
extension of the canonical tree, read back identically; a tree without the file imports with an
empty ledger; a broken file refuses the whole import with the file and the reason named."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

from projects.filetree.errors import TreeError
from projects.filetree.export import tree_files
from projects.filetree.importer import tree_import
from projects.filetree.source import read_zip
from projects.models import Project, StoryFact
from projects.services.facts import story_fact_create, story_facts_apply_commit

pytestmark = pytest.mark.django_db
FACTS = "novelsite/facts.json"


def _zip(files: dict[str, bytes]) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    buffer.seek(0)
    return buffer


def _import(files: dict[str, bytes], slug: str = "copy"):
    return tree_import(read_zip(_zip(files)), slug=slug)


@pytest.fixture
def ledger_project(sample_project):
    promise = story_fact_create(project=sample_project, editor=None, kind="promise", text="林枫答应护送陈老南下",
                                chapter=1, characters=["lin-feng", "chen-lao"], storyline="main-arc",
                                foreshadowing=["ancient_prophecy"])
    story_fact_create(project=sample_project, editor=None, fact_id="zhao-oath", kind="secret",
                      text="赵明暗中投靠了魔都", chapter=2, characters=["zhao-ming"], status="cancelled",
                      closed_chapter=3, closing_note="误会一场")
    story_facts_apply_commit(project=sample_project, chapter=3, storyline_slug="main-arc", facts={
        "new": [{"kind": "injury", "text": "陈老受了内伤", "characters": ["chen-lao"]}],
        "closed": [{"id": promise.fact_id, "status": "fulfilled", "note": "送到了"}]})
    return sample_project


def test_the_ledger_is_exported_and_read_back_identically(ledger_project):
    files = dict(tree_files(ledger_project))
    body = json.loads(files[FACTS])
    assert [(f["id"], f["status"], f["closed_chapter"], f["origin"]) for f in body["facts"]] == [
        ("fact-001", "fulfilled", 3, "person"), ("zhao-oath", "cancelled", 3, "person"),
        ("fact-002", "open", None, "pipeline")]
    copy = _import(files).project
    assert dict(tree_files(copy))[FACTS] == files[FACTS]
    fact = copy.facts.get(fact_id="fact-002")
    assert fact.origin == "pipeline" and fact.history.count() == 1  # imported rows have their first version


def test_a_tree_without_the_file_imports_with_an_empty_ledger(ledger_project):
    files = {path: data for path, data in tree_files(ledger_project) if path != FACTS}
    copy = _import(files).project
    assert not copy.facts.exists()
    assert FACTS not in dict(tree_files(copy))


def test_bindings_to_characters_the_tree_lacks_are_dropped_with_a_warning(ledger_project):
    files = dict(tree_files(ledger_project))
    body = json.loads(files[FACTS])
    body["facts"][2]["characters"] = ["chen-lao", "stranger"]
    files[FACTS] = json.dumps(body, ensure_ascii=False).encode()
    report = _import(files)
    assert report.project.facts.get(fact_id="fact-002").characters == ["chen-lao"]
    assert any("fact-002" in warning for warning in report.warnings)


@pytest.mark.parametrize("change, reason", [
    (lambda b: b["facts"].append(dict(b["facts"][0])), "appears twice"),
    (lambda b: b["facts"][0].update(kind="rumour"), "kind"),
    (lambda b: b["facts"][0].update(closed_chapter=None), "closed_chapter"),
    (lambda b: b["facts"][2].update(closed_chapter=9), "closed_chapter"),
    (lambda b: b["facts"][0].update(closed_chapter=0), "closed_chapter"),
    (lambda b: b["facts"][0].update(id="../../etc"), "id"),
    (lambda b: b["facts"][0].update(text="长" * 301), "text"),
    (lambda b: b.pop("facts"), "facts"),
])
def test_a_broken_facts_file_refuses_the_import_and_writes_nothing(ledger_project, change, reason):
    files = dict(tree_files(ledger_project))
    body = json.loads(files[FACTS])
    change(body)
    files[FACTS] = json.dumps(body, ensure_ascii=False).encode()
    with pytest.raises(TreeError, match=reason) as error:
        _import(files)
    assert FACTS in str(error.value)
    assert not Project.objects.filter(slug="copy").exists()
    assert StoryFact.objects.count() == 3


def test_a_facts_file_that_is_not_json_is_refused(ledger_project):
    files = dict(tree_files(ledger_project)) | {FACTS: b"{not json"}
    with pytest.raises(TreeError, match=FACTS):
        _import(files)
