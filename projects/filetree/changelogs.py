"""world/changelog.md and characters/changelog.md, generated from the edit history.

Rows created by an import are not listed again: the imported file already says what happened
before, and is kept as the changelog's head, so re-exporting an imported tree gives it back."""
from __future__ import annotations

from collections.abc import Iterator

from django.utils import timezone

from projects.models import Character, Project, WorldDoc, WorldRule

IMPORT_REASON = "import"
_VERBS = {"+": "created", "~": "changed", "-": "deleted"}


def _label(record, model) -> str:
    if model is WorldDoc:
        return f"world/{record.name}.md"
    if model is WorldRule:
        return f"{record.rule_id} (world/rules.json)"
    return f"{record.display_name} ({record.slug})"


def _lines(project: Project, models) -> Iterator[tuple]:
    for model in models:
        records = (model.history.filter(project_id=project.pk).exclude(history_change_reason=IMPORT_REASON)
                   .select_related("history_user").order_by())
        for record in records:
            who = record.history_user.get_username() if record.history_user else "pipeline"
            when = timezone.localtime(record.history_date).strftime("%Y-%m-%d %H:%M")
            line = f"- {when} {who} {_VERBS[record.history_type]} {_label(record, model)} (v{record.version})"
            yield record.history_date, model.__name__, record.history_id, line


def changelog_text(project: Project, *, head: str, models) -> str:
    lines = [line for *_key, line in sorted(_lines(project, models))]
    parts = [head.rstrip("\n")] if head.strip() else []
    if lines:
        parts.append("\n".join(lines))
    return "\n".join(parts)


WORLD_MODELS = (WorldDoc, WorldRule)
CHARACTER_MODELS = (Character,)
