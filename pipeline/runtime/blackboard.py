"""The run blackboard of seed 001: meta, content and control zones, persisted with each run.

Components never pass context to each other; they write to the blackboard and read the slice they
declare. What a component may touch depends on its kind, by the seed's zone access table:

| kind         | meta           | content | control |
|--------------|----------------|---------|---------|
| orchestrator | R/W            | R       | R/W     |
| worker       | R (via slice)  | W       | -       |
| skill        | R (via slice)  | R/W     | R       |
| middleware   | R              | R/W     | R/W     |
| slicer       | R              | R       | R       |

"Via slice" means through ``get_slice`` only. Every kind may ``append_error`` (seed: 所有组件).
A forbidden read or write raises ``BlackboardAccessError``. Content keys keep their version history
(seed 001 best practice 4). ORM-free: ``PipelineRun.blackboard`` stores ``to_dict()``.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["orchestrator", "worker", "skill", "middleware", "slicer"]
KINDS: tuple[Kind, ...] = ("orchestrator", "worker", "skill", "middleware", "slicer")
STEP_STATUSES = ("pending", "running", "completed", "failed", "skipped")
TEMPORARY_PREFIX = "_tmp"  # content keys removed by complete()

# (zone, operation) -> kinds allowed. "slice" is a read through get_slice.
ACCESS: dict[tuple[str, str], frozenset[str]] = {
    ("meta", "read"): frozenset({"orchestrator", "middleware", "slicer"}),
    ("meta", "slice"): frozenset(KINDS),
    ("meta", "write"): frozenset({"orchestrator"}),
    ("content", "read"): frozenset({"orchestrator", "skill", "middleware", "slicer"}),
    ("content", "slice"): frozenset({"orchestrator", "skill", "middleware", "slicer"}),
    ("content", "write"): frozenset({"worker", "skill", "middleware"}),
    ("control", "read"): frozenset({"orchestrator", "skill", "middleware", "slicer"}),
    ("control", "slice"): frozenset({"orchestrator", "skill", "middleware", "slicer"}),
    ("control", "write"): frozenset({"orchestrator", "middleware"}),
}



def _copy(value: Any) -> Any:
    """A deep copy of JSON-shaped data (what a blackboard holds), several times faster than
    ``copy.deepcopy``, which it falls back to for anything else."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return copy.deepcopy(value)


class BlackboardAccessError(PermissionError):
    """A component touched a zone its kind may not touch."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Blackboard:
    def __init__(self, data: dict[str, Any] | None = None) -> None:
        data = _copy(data) if data else {}
        self._meta: dict[str, Any] = data.get("meta", {})
        self._content: dict[str, Any] = data.get("content", {})
        self._control: dict[str, Any] = data.get("control", {})
        self._history: dict[str, list[dict[str, Any]]] = data.get("history", {})

    def to_dict(self) -> dict[str, Any]:
        """What PipelineRun.blackboard stores."""
        data = {"meta": self._meta, "content": self._content, "control": self._control}
        if self._history:
            data["history"] = self._history
        return _copy(data)

    def as_(self, kind: Kind) -> BlackboardView:
        if kind not in KINDS:
            raise ValueError(f"unknown component kind {kind!r}; one of {', '.join(KINDS)}")
        return BlackboardView(self, kind)


class BlackboardView:
    """The blackboard as one kind of component sees it."""

    def __init__(self, board: Blackboard, kind: Kind) -> None:
        self._board = board
        self.kind = kind

    def _check(self, zone: str, operation: str) -> None:
        if self.kind not in ACCESS[(zone, operation)]:
            verb = {"read": "read", "write": "write", "slice": "slice"}[operation]
            raise BlackboardAccessError(f"a {self.kind} may not {verb} the {zone} zone (seed 001 access table)")

    # --- writes ---
    def write_meta(self, key: str, value: Any) -> None:
        self._check("meta", "write")
        self._board._meta[key] = _copy(value)

    def write_content(self, zone: str, key: str | None, value: Any) -> None:
        """``key`` None writes the zone entry itself (seed 001's ``hashtags`` is a list, not an object)."""
        self._check("content", "write")
        if key is None:
            if zone in self._board._content:
                versions = self._board._history.setdefault(zone, [])
                versions.append({"version": len(versions) + 1, "value": self._board._content[zone],
                                 "replaced_at": _now()})
            self._board._content[zone] = _copy(value)
            return
        section = self._board._content.setdefault(zone, {})
        if key in section:
            versions = self._board._history.setdefault(f"{zone}.{key}", [])
            versions.append({"version": len(versions) + 1, "value": section[key], "replaced_at": _now()})
        section[key] = _copy(value)

    def write_control(self, key: str, value: Any) -> None:
        """``key`` may be dotted (``quality_scores.virality``)."""
        self._check("control", "write")
        target = self._board._control
        *parents, last = key.split(".")
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = _copy(value)

    def append_error(self, step_id: str, error_type: str, message: str) -> None:
        errors = self._board._control.setdefault("errors", [])
        errors.append({"step_id": step_id, "error_type": error_type, "message": message, "timestamp": _now()})

    def update_step_status(self, step_id: str, status: str) -> None:
        self._check("control", "write")
        if self.kind != "orchestrator":
            raise BlackboardAccessError("only the orchestrator updates step status (seed 001)")
        if status not in STEP_STATUSES:
            raise ValueError(f"unknown step status {status!r}; one of {', '.join(STEP_STATUSES)}")
        self._board._control.setdefault("step_status", {})[step_id] = status
        if status == "running":
            self._board._control["current_stage"] = step_id

    # --- reads ---
    def read_meta(self, key: str) -> Any:
        self._check("meta", "read")
        return _copy(self._board._meta.get(key))

    def read_content(self, zone: str, key: str) -> Any:
        self._check("content", "read")
        return _copy(self._board._content.get(zone, {}).get(key))

    def read_control(self, key: str) -> Any:
        self._check("control", "read")
        return _copy(_dig(self._board._control, key.split(".")))

    def content_versions(self, zone: str, key: str) -> list[dict[str, Any]]:
        self._check("content", "read")
        return _copy(self._board._history.get(f"{zone}.{key}", []))

    def get_slice(self, scope: Iterable[str]) -> dict[str, Any]:
        """The values at dotted paths (``meta.intent``, ``content.hook.selected``,
        ``control.quality_scores``), missing ones as None. Nothing outside ``scope`` is returned."""
        zones = {"meta": self._board._meta, "content": self._board._content, "control": self._board._control}
        result = {}
        for path in scope:
            zone, _, rest = path.partition(".")
            if zone not in zones or not rest:
                raise ValueError(f"slice paths look like meta.intent or content.hook.selected, not {path!r}")
            self._check(zone, "slice")
            result[path] = _copy(_dig(zones[zone], rest.split(".")))
        return result

    def snapshot(self) -> dict[str, Any]:
        """The whole board: the run's final output (orchestrator only)."""
        if self.kind != "orchestrator":
            raise BlackboardAccessError("only the orchestrator takes the final snapshot (seed 001)")
        return self._board.to_dict()

    # --- lifecycle (seed 001: initialise, execute, complete) ---
    def initialise(self, *, meta: dict[str, Any], steps: Iterable[str]) -> None:
        for key, value in meta.items():
            self.write_meta(key, value)
        for step in steps:
            self.update_step_status(step, "pending")
        self.write_control("iteration_count", 0)

    def complete(self, *, temporary_keys: Iterable[str] = ()) -> dict[str, Any]:
        """Clean up temporary content (keys starting with ``_tmp`` and any listed as
        ``zone.key``), then return the snapshot."""
        if self.kind != "orchestrator":
            raise BlackboardAccessError("only the orchestrator completes a run (seed 001)")
        listed = set(temporary_keys)
        for zone, section in self._board._content.items():
            for key in [k for k in section if k.startswith(TEMPORARY_PREFIX) or f"{zone}.{k}" in listed]:
                del section[key]
        return self.snapshot()


def _dig(tree: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree
