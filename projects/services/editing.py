"""Human edits of story objects: versioned, validated, recorded with who made them.

A person opens an object at ``version`` N and saves with ``base_version=N``. If someone else saved
meanwhile, the save is refused with ``VersionConflict`` (the current version in ``extra``) instead
of overwriting their work. django-simple-history records every accepted save with its user.
"""
from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from projects.errors import InvalidData, VersionConflict
from projects.lock_objects import project_lock, row_lock
from projects.models import EditVersioned, Project

V = TypeVar("V", bound=EditVersioned)


def full_clean_or_raise(instance: EditVersioned) -> None:
    try:
        instance.full_clean()
    except ValidationError as exc:
        fields = exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
        message = "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in fields.items())
        raise InvalidData(message, extra={"fields": fields}) from exc


def _project_id(instance: EditVersioned) -> int:
    return instance.pk if isinstance(instance, Project) else instance.project_id


@transaction.atomic
def story_object_version_check(*, obj: EditVersioned, base_version: int | None) -> None:
    """Raise ``VersionConflict`` unless ``obj`` is still at ``base_version``. Takes the project lock,
    then the row lock, and keeps them for the caller's transaction: called inside the transaction
    that saves (the admin's), no other save can slip in between the check and the write."""
    project_lock(_project_id(obj))
    current = row_lock(obj)
    if current.version != base_version:
        raise VersionConflict(
            f"{current} was saved by someone else (version {current.version}, you edited version {base_version}).",
            extra={"current_version": current.version, "base_version": base_version},
        )


@transaction.atomic
def story_object_update(*, obj: V, editor: AbstractBaseUser | None, base_version: int, **changes: Any) -> V:
    """Apply ``changes`` to ``obj`` if nobody saved since ``base_version``. Takes the project lock,
    then the row lock (projects/lock_objects.py order)."""
    project_lock(_project_id(obj))
    current = row_lock(obj)
    if current.version != base_version:
        raise VersionConflict(
            f"{current} was saved by someone else (version {current.version}, you edited version {base_version}).",
            extra={"current_version": current.version, "base_version": base_version},
        )
    for name, value in changes.items():
        setattr(current, name, value)
    current.version += 1
    current._history_user = editor
    full_clean_or_raise(current)
    current.save()
    return current


@transaction.atomic
def story_object_create(*, instance: V, editor: AbstractBaseUser | None) -> V:
    """Validate and save a new story object (version 1)."""
    project_lock(_project_id(instance))
    instance.version = 1
    instance._history_user = editor
    full_clean_or_raise(instance)
    instance.save()
    return instance


def chapter_update(*, chapter, editor, text: str, base_version: int, title: str | None = None):
    changes: dict[str, Any] = {"text": text}
    if title is not None:
        changes["title"] = title
    return story_object_update(obj=chapter, editor=editor, base_version=base_version, **changes)
