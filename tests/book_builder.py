"""Writing a book through the services, fast (tests/test_writer_memory.py, test_long_book_memory.py):
contracts planned in bulk (validated against their schema first), chapters committed one by one
through ``chapter_commit_story`` as the pipeline commits them, with their summary and delta."""
from __future__ import annotations

from projects.json_validation import validate_json
from projects.models import ChapterContract, StoryState, Volume
from projects.sample_project import _contract
from projects.services.chapter_commit import StagedChapter, chapter_commit_story
from projects.services.editing import story_object_create

CHAPTERS_PER_VOLUME = 30


def contract_of(number: int, cast: list[str], **changes) -> dict:
    """The sample's contract shape for chapter ``number`` with ``cast`` as its characters."""
    data = _contract(number, f"第{number}章")
    data["preconditions"]["character_states"] = {slug: {"location": "北境雪原"} for slug in cast}
    data["postconditions"]["state_changes"] = {cast[0]: {"location": "北境雪原"}} if cast else {}
    for key, value in changes.items():
        if key == "foreshadowing_updates":
            data["postconditions"]["foreshadowing_updates"] = value
        else:
            data[key] = value
    return data


def plan_contracts(project, contracts: dict[int, dict]) -> None:
    """Replace the contracts of these chapters (volumes created as needed, 30 chapters each)."""
    volumes = {v.number: v for v in Volume.objects.filter(project=project)}
    for volume in sorted({(n - 1) // CHAPTERS_PER_VOLUME + 1 for n in contracts} - set(volumes)):
        volumes[volume] = story_object_create(instance=Volume(
            project=project, number=volume, title=f"第{volume}卷",
            storyline_schedule={"volume": volume, "active_storylines": ["main-arc"]}), editor=None)
    for number, data in contracts.items():
        validate_json("CHAPTER_CONTRACT", data, label=f"chapter {number} contract")
    ChapterContract.objects.filter(project=project, chapter__in=list(contracts)).delete()
    ChapterContract.objects.bulk_create([
        ChapterContract(project=project, volume=volumes[(n - 1) // CHAPTERS_PER_VOLUME + 1], chapter=n, data=data)
        for n, data in sorted(contracts.items())], batch_size=500)


def commit_chapter(project, number: int, *, summary: str, ops: list[dict] | None = None) -> None:
    """Commit chapter ``number`` as the pipeline does: text, summary and a delta on the current state."""
    version = StoryState.objects.filter(project=project).values_list("state_version", flat=True).get()
    delta = {"chapter": number, "base_state_version": version, "storyline_id": "main-arc", "ops": list(ops or [])}
    chapter_commit_story(project=project, staged=StagedChapter(
        number=number, volume_number=(number - 1) // CHAPTERS_PER_VOLUME + 1, storyline_slug="main-arc",
        title=f"第{number}章", text="雪落在北境。" * 60, summary=summary, delta=delta, memory=None,
        evaluation={}, log={}))
