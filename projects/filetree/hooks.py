"""The file tree's doors to the pipeline: ``projects`` never imports ``pipeline``, so the pipeline
registers here (in ``PipelineConfig.ready``):

- a staging writer that yields the ``staging/`` files of a project's in-flight runs and its
  NOVEL_ASK answers;
- extensions of the canonical tree (``promotions/``): a writer for the export, and a reader the
  importer hands the extension's files to, inside the import's transaction (a reader raises
  ``TreeError`` naming the file to refuse the whole import);
- a staging reader the importer hands the tree's ``staging/`` files to, inside the import's
  transaction, once the project is written: it takes the in-flight chapter's work into a run and
  says which files it took (never kept as opaque files) and what it dropped.
"""
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


ExtensionWriter = Callable[[Project], Iterable[tuple[str, bytes]]]
ExtensionReader = Callable[[Project, dict[str, str]], None]
_extensions: dict[str, tuple[ExtensionWriter, ExtensionReader]] = {}


def register_extension(prefix: str, *, writer: ExtensionWriter, reader: ExtensionReader) -> None:
    """``prefix`` is a top-level directory of the tree, e.g. ``promotions/``."""
    if not prefix.endswith("/") or "/" in prefix[:-1]:
        raise ValueError(f"an extension owns a top-level directory like 'promotions/', not {prefix!r}")
    _extensions[prefix] = (writer, reader)


def extension_files(project: Project) -> Iterator[tuple[str, bytes]]:
    for prefix, (writer, _reader) in sorted(_extensions.items()):
        for path, data in writer(project):
            if not path.startswith(prefix):
                raise ValueError(f"the {prefix} extension may only write under it, not {path!r}")
            yield path, data


def extension_read(project: Project, files: dict[str, str]) -> set[str]:
    """Hand each extension the imported files under its prefix; returns the paths it took."""
    taken: set[str] = set()
    for prefix, (_writer, reader) in sorted(_extensions.items()):
        mine = {path: text for path, text in files.items() if path.startswith(prefix)}
        if mine:
            reader(project, mine)
            taken |= set(mine)
    return taken


StagingReader = Callable[[Project, dict[str, str]], tuple[set[str], list[str]]]
_staging_readers: list[StagingReader] = []


def register_staging_reader(reader: StagingReader) -> None:
    if reader not in _staging_readers:
        _staging_readers.append(reader)


def staging_read(project: Project, files: dict[str, str]) -> tuple[set[str], list[str]]:
    """Hand the staging readers the imported ``staging/`` files: (the paths they took, warnings)."""
    staged = {path: text for path, text in files.items() if path.startswith("staging/")}
    taken: set[str] = set()
    warnings: list[str] = []
    for reader in _staging_readers:
        if staged:
            took, said = reader(project, staged)
            taken |= took
            warnings += said
    return taken, warnings
