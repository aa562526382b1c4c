"""``novel prompt``: the exact request a chapter stage would send the model (system and messages in
order, with the cache markers) and its receipt, for a chapter not written yet, a committed one and
one in flight; nothing is sent, nothing stored, nothing spent (#17 §4)."""
from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from pipeline.models import LLMCall, StageRun
from pipeline.runtime.runs import chapter_run_start
from projects.sample_project import sample_project_create

pytestmark = pytest.mark.django_db(transaction=True)  # the eager chain runs on commit


@pytest.fixture
def project(make_user, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
    return sample_project_create(owner=make_user("owner"))


def run_json(capsys, *args) -> dict:
    call_command("novel", "--json", "prompt", *args)
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["ok"] is True and envelope["command"] == "prompt"
    return envelope["data"]


def test_the_draft_prompt_of_the_next_chapter_with_its_cache_markers(project, capsys):
    data = run_json(capsys, project.slug, "1")
    assert data["stage"] == "draft" and data["source"] == "not written yet"
    system = data["request"]["system"]
    assert any(block.get("cache_control") for block in system)  # the stable head is marked for caching
    text = "\n".join(b["text"] for m in data["request"]["messages"] for b in m["content"])
    assert "第 1 章" in text or "第1章" in text
    assert data["receipt"]["blocks"] and data["receipt"]["stage"] == "draft"
    assert not LLMCall.objects.exists() and not StageRun.objects.exists()  # nothing sent, nothing kept


@pytest.mark.parametrize("stage", ["summarize", "refine", "judge"])
def test_every_later_stage_of_a_committed_chapter(project, capsys, stage):
    chapter_run_start(project_id=project.pk)
    calls = LLMCall.objects.count()
    data = run_json(capsys, project.slug, "1", "--stage", stage)
    assert data["source"] == "committed chapter" and data["stage"] == stage
    chapter_text = project.chapters.get(number=1).text
    bodies = "\n".join(b["text"] for m in data["request"]["messages"] for b in m["content"])
    assert chapter_text[:40] in bodies  # the stage reads the chapter it would work on
    assert LLMCall.objects.count() == calls


def test_text_output_shows_roles_markers_and_the_receipt(project, capsys):
    call_command("novel", "prompt", project.slug, "1")
    out = capsys.readouterr().out
    assert "--- system" in out and "[cache breakpoint after this block]" in out
    assert "--- user" in out and "--- receipt" in out and "not sent" in out


@pytest.mark.parametrize(("args", "message"), [
    (["nope", "1"], "No project"),
    (["demo", "99"], "no contract"),
    (["demo", "2", "--stage", "judge"], "not written yet"),
])
def test_clear_errors(project, capsys, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("novel", "prompt", *args)
