"""A promotion run's final output in seed 001's own shape (``meta_zone``, ``content_zone``,
``control_zone``), validated against the seed's schema (``seed001_blackboard.schema.json``), and
how it leaves and re-enters a project: ``promotions/<run-id>.json`` in the exported tree (an
extension of the canonical tree, like ``novelsite/``), read back by the importer."""
from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from projects.filetree.canonical import dump_json

SCHEMA_PATH = Path(__file__).with_name("seed001_blackboard.schema.json")
PATH_RE = re.compile(r"^promotions/(\d{1,12})\.json$")
FORMAT = "novelsite.promotion/1"


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def seed_snapshot(blackboard: dict[str, Any]) -> dict[str, Any]:
    """The run's blackboard as seed 001 names its zones (the pipeline's own bookkeeping left out)."""
    return {"meta_zone": blackboard.get("meta", {}),
            "content_zone": {k: v for k, v in blackboard.get("content", {}).items() if k != "staged_files"},
            "control_zone": blackboard.get("control", {})}


def seed_snapshot_errors(snapshot: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in sorted(_validator().iter_errors(snapshot), key=lambda e: list(map(str, e.absolute_path)))][:10]


def promotion_file(run_id: int, blackboard: dict[str, Any], status: str) -> tuple[str, bytes]:
    document = {"format": FORMAT, "run_id": run_id, "status": status, "blackboard": seed_snapshot(blackboard),
                "history": blackboard.get("history", {})}
    return f"promotions/{run_id}.json", dump_json(document)


def promotion_file_errors(path: str, document: Any) -> list[str]:
    """Why an imported ``promotions/*.json`` cannot be taken back (empty = fine)."""
    if not PATH_RE.match(path):
        return [f"{path}: promotion files are named promotions/<run-id>.json"]
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return [f"{path}: not a Novelsite promotion file (format {FORMAT})"]
    if not isinstance(document.get("blackboard"), dict) or not isinstance(document.get("history", {}), dict):
        return [f"{path}: blackboard must be an object"]
    return [f"{path}: {error}" for error in seed_snapshot_errors(document["blackboard"])]


def blackboard_from_file(document: dict[str, Any]) -> dict[str, Any]:
    board = document["blackboard"]
    data = {"meta": board.get("meta_zone", {}), "content": board.get("content_zone", {}),
            "control": board.get("control_zone", {})}
    if document.get("history"):
        data["history"] = document["history"]
    return data


def promotions_of(project) -> Any:
    """The exporter's ``promotions/`` extension: every finished promotion of the project."""
    from pipeline.models import PipelineRun, RunKind, RunStatus

    runs = PipelineRun.objects.filter(project=project, kind=RunKind.PROMOTION, status=RunStatus.DONE).order_by("pk")
    for run_id, blackboard in runs.values_list("pk", "blackboard"):
        yield promotion_file(run_id, blackboard, RunStatus.DONE)


def promotions_import(project, files: dict[str, str]) -> None:
    """The importer's ``promotions/`` extension: each file checked in full (seed 001's schema), then
    a finished promotion run per file; one bad file refuses the whole import, naming it."""
    from pipeline.models import PipelineRun, RunKind, RunStatus
    from projects.filetree.errors import TreeError

    documents = []
    for path in sorted(files):
        try:
            document = json.loads(files[path])
        except json.JSONDecodeError as exc:
            raise TreeError(path, f"not JSON: {exc}") from exc
        if errors := promotion_file_errors(path, document):
            raise TreeError(path, "; ".join(errors))
        documents.append(document)
    PipelineRun.objects.bulk_create([
        PipelineRun(project=project, kind=RunKind.PROMOTION, status=RunStatus.DONE, stage="promote:platforms",
                    chapter=_last_chapter(d), blackboard=blackboard_from_file(d)) for d in documents])


def _last_chapter(document: dict[str, Any]) -> int | None:
    target = document["blackboard"].get("meta_zone", {}).get("target")
    last = target.get("last") if isinstance(target, dict) else None
    return last if isinstance(last, int) and not isinstance(last, bool) and 1 <= last < 10**9 else None
