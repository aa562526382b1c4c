"""Human edits of ``Project.relationships`` (characters/relationships.json, facts §10.3).

The file has no schema beyond "an object or an array" (OPAQUE_JSON): imported trees may hold any
shape, and a shape this code does not know is stored exactly as it came. The shape the sample and
the pipeline use, ``{who: {whom: number}}`` with an affinity in −100…100, is checked for its range.

Project rows have no edit version of their own for this field (a settings save bumps nothing here),
so a save names the value it started from by ``relationships_digest`` and is refused with
``VersionConflict`` when the stored value no longer has that digest.
"""
from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils.translation import gettext as _

from projects.errors import InvalidData, VersionConflict
from projects.json_input import json_problem
from projects.lock_objects import project_lock
from projects.models import Project
from projects.json_validation import validate_json

AFFINITY_MIN, AFFINITY_MAX = -100, 100  # projects/sample_project.py: lin-feng → zhao-ming −30


def relationships_digest(value: Any) -> str:
    """A stable fingerprint of a stored value: the same JSON always gives the same digest, whatever
    the order of its keys."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def relationships_are_pairs(value: Any) -> bool:
    """Whether ``value`` is the ``{who: {whom: number}}`` shape (empty included) that the web form
    edits as rows; anything else is kept as it is and edited as JSON only."""
    return isinstance(value, dict) and all(
        isinstance(towards, dict) and all(_is_number(v) for v in towards.values()) for towards in value.values())


def relationships_check(value: Any) -> None:
    """Raise ``InvalidData`` unless ``value`` may be stored: JSON the database takes, OPAQUE_JSON,
    and, in the pairs shape, finite numbers in −100…100 between two different characters."""
    problem = json_problem(value)
    if problem:
        raise InvalidData(_("The relationships are not acceptable JSON: %(p)s") % {"p": problem})
    validate_json("OPAQUE_JSON", value, label="relationships")
    if not relationships_are_pairs(value):
        return
    for who, towards in value.items():
        for whom, number in towards.items():
            if who == whom:
                raise InvalidData(_("%(who)s cannot have a relationship towards themself.") % {"who": who})
            if not math.isfinite(number) or not AFFINITY_MIN <= number <= AFFINITY_MAX:
                raise InvalidData(_("%(who)s → %(whom)s: %(n)s is outside −100…100.")
                                  % {"who": who, "whom": whom, "n": number})


@transaction.atomic
def relationships_update(*, project: Project, editor: AbstractBaseUser | None, relationships: Any,
                         base_digest: str) -> Project:
    """Store ``relationships`` if the stored value still has ``base_digest``. Takes the project lock
    (projects/lock_objects.py) and keeps it to the end of the caller's transaction; the change is
    recorded in the project's history with ``editor``."""
    relationships_check(relationships)
    current = project_lock(project.pk)
    if relationships_digest(current.relationships) != base_digest:
        raise VersionConflict(
            "The relationships were saved by someone else after this edit started.",
            extra={"current_digest": relationships_digest(current.relationships), "base_digest": base_digest})
    current.relationships = relationships
    current._history_user = editor
    current.save(update_fields=["relationships", "updated_at"])
    return current
