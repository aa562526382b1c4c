"""The voice sample leaves with the book and comes back with it (#17 §3): the file tree carries it as
``novelsite/voice-sample.json``; a malformed one refuses the import with the file and the reason,
and nothing of the project is written."""
from __future__ import annotations

import json

import pytest

from projects.filetree import paths
from projects.filetree.errors import TreeError
from projects.filetree.export import export_to_directory
from projects.filetree.importer import tree_import
from projects.filetree.source import read_directory
from projects.models import Project, VoiceSample
from projects.sample_project import sample_project_create
from projects.services.voice import voice_sample_save
from tests.sample_pages import VOICE_SAMPLE

pytestmark = pytest.mark.django_db


def _exported(tmp_path, *, with_sample: bool = True):
    project = sample_project_create(slug="voiced")
    if with_sample:
        voice_sample_save(project=project, editor=None, text=VOICE_SAMPLE, source_type="reference",
                          file_name="喜欢的段落.txt")
    target = tmp_path / "tree"
    export_to_directory(project, target)
    return project, target


def test_the_sample_travels_with_the_tree_and_its_statistics_are_measured_again(tmp_path):
    project, target = _exported(tmp_path)
    written = json.loads((target / paths.NOVELSITE_VOICE_SAMPLE).read_text(encoding="utf-8"))
    assert written == {"source_type": "reference", "file_name": "喜欢的段落.txt",
                       "text": VoiceSample.objects.get(project=project).text}

    tree_import(read_directory(target), slug="voiced-again")

    back = VoiceSample.objects.get(project__slug="voiced-again")
    original = VoiceSample.objects.get(project=project)
    assert (back.text, back.source_type, back.file_name) == (original.text, "reference", "喜欢的段落.txt")
    assert back.statistics == original.statistics and back.statistics


def test_a_project_without_a_sample_writes_no_file(tmp_path):
    _project, target = _exported(tmp_path, with_sample=False)
    assert not (target / paths.NOVELSITE_VOICE_SAMPLE).exists()
    tree_import(read_directory(target), slug="unvoiced-again")
    assert not VoiceSample.objects.filter(project__slug="unvoiced-again").exists()


@pytest.mark.parametrize(("body", "reason"), [
    ("not json", "voice-sample.json"),
    (json.dumps(["a list"]), "must be an object"),
    (json.dumps({"text": 42}), "must be strings"),
    (json.dumps({"text": VOICE_SAMPLE, "file_name": ["x"]}), "must be strings"),
    (json.dumps({"text": VOICE_SAMPLE, "source_type": "stolen"}), "source_type must be one of"),
    (json.dumps({"text": "太短了。"}), "$.text"),
    (json.dumps({"text": "长" * 40_000}), "$.text"),
])
def test_a_malformed_sample_refuses_the_import_and_writes_nothing(tmp_path, body, reason):
    _project, target = _exported(tmp_path)
    (target / paths.NOVELSITE_VOICE_SAMPLE).write_text(body, encoding="utf-8")
    before = Project.objects.count()

    with pytest.raises(TreeError) as refused:
        tree_import(read_directory(target), slug="broken-voice")

    assert paths.NOVELSITE_VOICE_SAMPLE in str(refused.value) and reason in str(refused.value)
    assert Project.objects.count() == before and not Project.objects.filter(slug="broken-voice").exists()
