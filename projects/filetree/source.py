"""Reading a tree from a directory or a zip, defensively: every path is checked before anything is
read (no "..", no absolute paths, no symlinks), and sizes are bounded per file, per tree and in
file count, so a hostile upload is refused with the offending file named, not unpacked."""
from __future__ import annotations

import contextlib
import os
import stat
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO
from zlib import error as zlib_error

from django.conf import settings

from projects.filetree.errors import TreeError
from projects.filetree.paths import CHECKPOINT, NEVER_EXPORTED_PREFIX, check_relative_path
from projects.filetree.zip_directory import ARCHIVE, check_declared_entries, declared_entry_count

ROOT_MARKERS = (CHECKPOINT, "brief.md", "novelsite/project.json", "chapters/", "world/")


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    max_tree_bytes: int
    max_files: int

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(settings.NOVELSITE_IMPORT_MAX_FILE_BYTES, settings.NOVELSITE_IMPORT_MAX_TREE_BYTES,
                   settings.NOVELSITE_IMPORT_MAX_FILES)


@dataclass
class TreeSource:
    """The tree's files by relative path, plus what was read past (``.novel.lock/``)."""

    files: dict[str, bytes] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    name: str = ""


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.count = 0

    def charge(self, path: str, size: int) -> None:
        if size > self.limits.max_file_bytes:
            raise TreeError(path, f"file is {size} bytes; the limit is {self.limits.max_file_bytes}")
        self.total += size
        self.count += 1
        if self.count > self.limits.max_files:
            raise TreeError(path, f"too many files: the limit is {self.limits.max_files}")
        if self.total > self.limits.max_tree_bytes:
            raise TreeError(path, f"the tree is larger than the limit of {self.limits.max_tree_bytes} bytes")


def _add(source: TreeSource, path: str, data: bytes) -> None:
    check_relative_path(path)
    if path.startswith(NEVER_EXPORTED_PREFIX):  # the original tool's runtime lock: never part of a tree
        source.skipped.append(path)
        return
    if path in source.files:
        raise TreeError(path, "the archive holds this path twice")
    source.files[path] = data


def _strip_wrapper(names: list[str]) -> str:
    """A zip of a folder wraps the tree in one directory: return that prefix ("" if none)."""
    if any(name.startswith(marker) or name == marker for name in names for marker in ROOT_MARKERS):
        return ""
    tops = {name.split("/", 1)[0] for name in names}
    if len(tops) == 1 and all("/" in name for name in names):
        return tops.pop() + "/"
    return ""


def read_zip(stream: IO[bytes] | str | os.PathLike, limits: Limits | None = None) -> TreeSource:
    """Everything the archive declares is checked first (``zip_directory``: entry count from its
    last bytes, then paths, symlinks, declared sizes and their total from the central directory);
    only then is any entry inflated, each one with a hard cap in case its declared size lies."""
    limits = limits or Limits.from_settings()
    with _opened(stream) as handle:
        try:
            declared = declared_entry_count(handle)
            if declared > limits.max_files:
                raise TreeError(ARCHIVE, f"{declared} files; the limit is {limits.max_files}")
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError, struct.error) as exc:
            raise TreeError(ARCHIVE, f"not a readable zip file: {exc}") from exc
        with archive:
            return _read_entries(archive, limits)


def _read_entries(archive: zipfile.ZipFile, limits: Limits) -> TreeSource:
    entries = [info for info in archive.infolist() if not info.is_dir()]
    check_declared_entries(entries, max_file_bytes=limits.max_file_bytes, max_tree_bytes=limits.max_tree_bytes,
                           max_files=limits.max_files)
    prefix = _strip_wrapper([info.filename for info in entries])
    source = TreeSource(name=prefix.rstrip("/"))
    budget = _Budget(limits)  # charged with what really came out, not with what was declared
    for info in entries:
        data = _read_bounded(archive, info, min(info.file_size, limits.max_file_bytes))
        budget.charge(info.filename, len(data))
        _add(source, info.filename[len(prefix):], data)
    return source


@contextlib.contextmanager
def _opened(stream: IO[bytes] | str | os.PathLike) -> Iterator[IO[bytes]]:
    if isinstance(stream, (str, os.PathLike)):
        with open(stream, "rb") as handle:
            yield handle
    else:
        yield stream


_CHUNK = 1024 * 1024


def _read_bounded(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """Inflate one entry in chunks, never more than ``limit`` (its declared size, at most the
    per-file limit) plus one chunk: a member that inflates to more than it declares is refused."""
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as handle:
            while size <= limit:
                chunk = handle.read(min(_CHUNK, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
    except (zipfile.BadZipFile, RuntimeError, OSError, EOFError, NotImplementedError, zlib_error) as exc:
        raise TreeError(info.filename, f"cannot be read from the zip: {exc}") from exc
    if size > limit:
        raise TreeError(info.filename, f"unpacks to more than the {limit} bytes it declares")
    return b"".join(chunks)


def read_directory(root: str | os.PathLike, limits: Limits | None = None) -> TreeSource:
    root = Path(root)
    if not root.is_dir():
        raise TreeError(str(root), "not a directory")
    budget = _Budget(limits or Limits.from_settings())
    source = TreeSource(name=root.name)
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(directory)
        for name in sorted(dirnames + filenames):
            full = here / name
            relative = PurePosixPath(full.relative_to(root)).as_posix()
            info = full.lstat()
            if stat.S_ISLNK(info.st_mode):
                raise TreeError(relative, "symbolic links are not allowed")
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise TreeError(relative, "not a regular file")
            budget.charge(relative, info.st_size)
            _add(source, relative, full.read_bytes())
    return source


def read_tree(location: str | os.PathLike, limits: Limits | None = None) -> TreeSource:
    """A directory, or a ``.zip`` file."""
    path = Path(location)
    if path.is_dir():
        return read_directory(path, limits)
    if path.is_file():
        source = read_zip(path, limits)
        source.name = source.name or path.stem
        return source
    raise TreeError(str(path), "no such directory or zip file")
