"""Roles and what they may do. One table, used by the admin, the web pages and the API.

owner: everything; editor: edit story data and run the pipeline; reviewer: answer gates and
approve plans, read everything; viewer: read.
"""
from __future__ import annotations

from enum import StrEnum

from projects.models import Role


class Action(StrEnum):
    READ = "read"
    DECIDE = "decide"  # answer NOVEL_ASK gates, approve plans
    EDIT = "edit"  # story data, pipeline runs
    MANAGE = "manage"  # members, project settings, deletion


ALLOWED: dict[str, frozenset[Action]] = {
    Role.OWNER: frozenset(Action),
    Role.EDITOR: frozenset({Action.READ, Action.DECIDE, Action.EDIT}),
    Role.REVIEWER: frozenset({Action.READ, Action.DECIDE}),
    Role.VIEWER: frozenset({Action.READ}),
}


def role_allows(role: str | None, action: Action) -> bool:
    return role is not None and action in ALLOWED.get(role, frozenset())


def roles_allowing(action: Action) -> list[str]:
    return [role for role, actions in ALLOWED.items() if action in actions]

