"""Reading a project tree on disk defensively, for ``validate`` / ``advance`` of a step run by an outside
executor (facts §1 safe-path rules). Every problem becomes an error naming the file, never an exception:

* paths with ``..``, absolute paths and NUL are refused (``rejectPathTraversalInput``);
* a path whose realpath (or nearest existing ancestor's) leaves the root, through a symlink, is refused
  (``resolveProjectRelativePath``);
* only regular files are read, at most ``MAX_READ_BYTES`` each;
* text must be UTF-8 without NUL; JSON must parse (no NaN/Infinity) and nest at most 64 levels.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from pipeline.questions.spec import validate_answer_path
from projects.filetree.canonical import load_json, load_text
from projects.filetree.errors import TreeError

MAX_READ_BYTES = 10 * 1024 * 1024  # an agent's output is never this big; refuse before reading it
CHECKPOINT = ".checkpoint.json"


class Unreadable:
    """The value of a file that could not be read (the reason is in the errors)."""

    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE = Unreadable()


class TreeReader:
    """Reads files under ``root``; ``errors`` collects ``"<path>: <problem>"`` messages and ``failed`` the
    paths that produced them. ``quiet=True`` on a read suppresses its messages (for probes)."""

    def __init__(self, root: str | os.PathLike[str], errors: list[str]) -> None:
        self.root = Path(root)
        self.errors = errors
        self.failed: set[str] = set()

    def _fail(self, rel: str, problem: str, quiet: bool) -> None:
        if not quiet:
            self.errors.append(f"{rel}: {problem}")
            self.failed.add(rel)

    def locate(self, rel: str, *, quiet: bool = False) -> Path | None:
        """The absolute path of ``rel`` if it is a safe project-relative path that stays inside the root."""
        problems = validate_answer_path(rel, field=rel, root=self.root)
        if problems:
            if not quiet:
                self.errors.extend(problems)
                self.failed.add(rel)
            return None
        return self.root / rel

    def exists(self, rel: str, *, quiet: bool = True) -> bool:
        path = self.locate(rel, quiet=quiet)
        return path is not None and os.path.lexists(path)

    def is_dir(self, rel: str, *, quiet: bool = True) -> bool:
        path = self.locate(rel, quiet=quiet)
        return path is not None and path.is_dir()

    def read_bytes(self, rel: str, *, quiet: bool = False, what: str = "required file") -> bytes | None:
        path = self.locate(rel, quiet=quiet)
        if path is None:
            return None
        if not os.path.lexists(path):
            self._fail(rel, f"missing {what}", quiet)
            return None
        try:
            info = path.stat()  # follows a symlink, whose target locate() has shown to be inside the root
            if not stat.S_ISREG(info.st_mode):
                self._fail(rel, "not a regular file", quiet)
                return None
            if info.st_size > MAX_READ_BYTES:
                self._fail(rel, f"file is {info.st_size} bytes; the limit is {MAX_READ_BYTES}", quiet)
                return None
            with open(path, "rb") as handle:
                data = handle.read(MAX_READ_BYTES + 1)
        except OSError as exc:
            self._fail(rel, f"cannot be read ({exc.strerror or exc})", quiet)
            return None
        if len(data) > MAX_READ_BYTES:  # it grew while we looked
            self._fail(rel, f"file is larger than the limit of {MAX_READ_BYTES} bytes", quiet)
            return None
        return data

    def text(self, rel: str, *, quiet: bool = False, what: str = "required file") -> str | None:
        data = self.read_bytes(rel, quiet=quiet, what=what)
        if data is None:
            return None
        try:
            return load_text(data, rel)
        except TreeError as exc:
            self._fail(rel, exc.reason, quiet)
            return None

    def json(self, rel: str, *, quiet: bool = False, what: str = "required file") -> Any:
        """The parsed JSON, or ``UNREADABLE``."""
        data = self.read_bytes(rel, quiet=quiet, what=what)
        if data is None:
            return UNREADABLE
        try:
            return load_json(data, rel)
        except TreeError as exc:
            self._fail(rel, exc.reason, quiet)
            return UNREADABLE
        except RecursionError:
            self._fail(rel, "JSON nested too deeply", quiet)
            return UNREADABLE

    def json_object(self, rel: str, *, quiet: bool = False, what: str = "required file") -> dict | None:
        value = self.json(rel, quiet=quiet, what=what)
        if value is UNREADABLE:
            return None
        if not isinstance(value, dict):
            self._fail(rel, f"must be a JSON object, not {_json_type(value)}", quiet)
            return None
        return value

    def list_files(self, rel: str, suffix: str, *, quiet: bool = False) -> list[str] | None:
        """Names of the entries of directory ``rel`` ending in ``suffix`` (sorted), or None."""
        path = self.locate(rel, quiet=quiet)
        if path is None:
            return None
        if not path.is_dir():
            self._fail(rel, "missing required directory" if not os.path.lexists(path) else "not a directory", quiet)
            return None
        try:
            names = sorted(entry.name for entry in os.scandir(path) if entry.name.endswith(suffix))
        except OSError as exc:
            self._fail(rel, f"cannot be listed ({exc.strerror or exc})", quiet)
            return None
        return names


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__
