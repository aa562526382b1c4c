"""The exporter's one door to the pipeline: ``projects`` never imports ``pipeline``, so the
pipeline registers a writer here (in ``PipelineConfig.ready``) that yields the ``staging/`` files
of a project's in-flight runs and its NOVEL_ASK answers."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from projects.models import Project

StagingWriter = Callable[[Project], Iterable[tuple[str, bytes]]]
_writers: list[StagingWriter] = []


def register_staging_writer(writer: StagingWriter) -> None:
    if writer not in _writers:
        _writers.append(writer)


def staging_files(project: Project) -> Iterator[tuple[str, bytes]]:
    for writer in _writers:
        for path, data in writer(project):
            if not path.startswith("staging/"):
                raise ValueError(f"a staging writer may only write under staging/, not {path!r}")
            yield path, data
