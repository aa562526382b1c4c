"""``python manage.py novel <subcommand>``: the command-line face of Novelsite.

Subcommands so far: ``demo`` (load the demo novel) and ``status``. With ``--json`` the output is the
original tool's envelope (facts §1): ``{"ok": true, "command", "data"}`` or
``{"ok": false, "command", "error": {"message", "code"}}`` with exit code 2.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from projects.errors import NovelsiteError
from projects.models import Project
from projects.sample_project import SAMPLE_SLUG, sample_project_create
from projects.selectors import project_status


class Command(BaseCommand):
    help = "Novelsite's novel commands: demo, status."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the JSON envelope instead of text.")
        sub = parser.add_subparsers(dest="subcommand", required=True)
        demo = sub.add_parser("demo", help="Create the demo novel (idempotent).")
        demo.add_argument("--owner", help="Username to make owner (created if missing, without a password).")
        status = sub.add_parser("status", help="Show a project's checkpoint and progress.")
        status.add_argument("project", nargs="?", default=SAMPLE_SLUG, help="Project slug (default: demo).")

    def handle(self, *args: Any, **options: Any) -> None:
        command = options["subcommand"]
        try:
            data = getattr(self, f"_{command}")(options)
        except (NovelsiteError, Project.DoesNotExist) as exc:
            message = getattr(exc, "message", None) or str(exc)
            if options["json"]:
                code = getattr(exc, "code", "not_found")
                self.stdout.write(json.dumps({"ok": False, "command": command,
                                              "error": {"message": message, "code": code}}, ensure_ascii=False))
                sys.exit(2)
            raise CommandError(message, returncode=2) from exc
        if options["json"]:
            self.stdout.write(json.dumps({"ok": True, "command": command, "data": data}, ensure_ascii=False,
                                         default=str))

    def _demo(self, options: dict[str, Any]) -> dict[str, Any]:
        owner = None
        if options.get("owner"):
            owner, _ = get_user_model().objects.get_or_create(username=options["owner"])
        project = sample_project_create(owner=owner)
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"Demo project ready: {project.title} ({project.slug})"))
        return {"project": project.slug}

    def _status(self, options: dict[str, Any]) -> dict[str, Any]:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise Project.DoesNotExist(f"No project with slug {options['project']!r}.")
        status = project_status(project=project)
        data = asdict(status)
        data["project"] = {"slug": project.slug, "title": project.title}
        if not options["json"]:
            self._print_status(data)
        return data

    def _print_status(self, data: dict[str, Any]) -> None:
        cp = data["checkpoint"]
        write = self.stdout.write
        write(f"{data['project']['title']} ({data['project']['slug']})")
        write(f"  state:      {cp['orchestrator_state']}  stage: {cp['pipeline_stage'] or 'idle'}"
              f"  inflight: {cp['inflight_chapter'] or '-'}")
        write(f"  volume:     {cp['current_volume']}  last completed chapter: {cp['last_completed_chapter']}")
        write(f"  chapters:   {data['chapters']} ({data['words']} 字)  active characters: {data['characters_active']}")
        write(f"  state:      v{data['state_version']}")
        write(f"  foreshadowing: {data['foreshadowing_open']} open, overdue: "
              f"{', '.join(data['foreshadowing_overdue']) or 'none'}, dormant: "
              f"{', '.join(data['foreshadowing_dormant']) or 'none'}")
