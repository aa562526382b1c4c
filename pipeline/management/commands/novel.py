"""``python manage.py novel <subcommand>``: the command-line face of Novelsite.

Subcommands so far: ``demo`` (load the demo novel), ``status``, ``write``, ``export`` and ``import``. With ``--json`` the output is the
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
from projects.filetree.export import export_to_path
from projects.filetree.importer import tree_import
from projects.filetree.source import read_tree
from projects.models import Project
from projects.sample_project import SAMPLE_SLUG, sample_project_create
from projects.selectors import project_status


class Command(BaseCommand):
    help = "Novelsite's novel commands: demo, status, write, export, import."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the JSON envelope instead of text.")
        sub = parser.add_subparsers(dest="subcommand", required=True)
        demo = sub.add_parser("demo", help="Create the demo novel (idempotent).")
        demo.add_argument("--owner", help="Username to make owner (created if missing, without a password).")
        status = sub.add_parser("status", help="Show a project's checkpoint and progress.")
        status.add_argument("project", nargs="?", default=SAMPLE_SLUG, help="Project slug (default: demo).")
        write = sub.add_parser("write", help="Write the next chapters (through the queue when a broker is set).")
        write.add_argument("project", help="Project slug.")
        write.add_argument("--chapters", type=int, default=1, help="How many chapters (default 1).")
        write.add_argument("--timeout", type=int, default=3600, help="With a broker: seconds to follow the runs.")
        export = sub.add_parser("export", help="Write a project as the canonical file tree (a directory or .zip).")
        export.add_argument("project", help="Project slug.")
        export.add_argument("target", help="A new or empty directory, or a path ending in .zip.")
        load = sub.add_parser("import", help="Create a project from a file tree (a directory or .zip).")
        load.add_argument("source", help="The tree's directory, or a .zip of it.")
        load.add_argument("--project", dest="slug", help="Slug for the new project (default: from the tree).")
        load.add_argument("--owner", help="Username that becomes the project's owner.")
        load.add_argument("--replace", action="store_true", help="Replace an existing project with that slug.")

    def handle(self, *args: Any, **options: Any) -> None:
        command = options["subcommand"]
        try:
            data = getattr(self, f"_{command}")(options)
        except (NovelsiteError, Project.DoesNotExist, CommandError) as exc:
            message = getattr(exc, "message", None) or str(exc)
            if options["json"]:  # every failure gets the envelope (facts §1), not only the Novelsite ones
                code = getattr(exc, "code", "not_found" if isinstance(exc, Project.DoesNotExist) else "error")
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

    def _write(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.write_command import write_chapters

        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise Project.DoesNotExist(f"No project with slug {options['project']!r}.")
        if options["chapters"] < 1:
            raise CommandError("--chapters must be at least 1", returncode=2)
        say = (lambda line: None) if options["json"] else self.stdout.write
        return write_chapters(project, options["chapters"], say=say, timeout=options["timeout"])

    def _export(self, options: dict[str, Any]) -> dict[str, Any]:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise Project.DoesNotExist(f"No project with slug {options['project']!r}.")
        try:
            export_to_path(project, options["target"])
        except FileExistsError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"Exported {project.slug} to {options['target']}"))
        return {"project": project.slug, "target": str(options["target"])}

    def _import(self, options: dict[str, Any]) -> dict[str, Any]:
        owner = None
        if options.get("owner"):
            owner = get_user_model().objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"No user {options['owner']!r}.", returncode=2)
        report = tree_import(read_tree(options["source"]), slug=options.get("slug"), owner=owner,
                             replace=options["replace"])
        data = {"project": report.project.slug, "files": report.files, "kept": report.kept,
                "skipped": report.skipped, "warnings": report.warnings}
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(
                f"Imported {report.files} files as project {report.project.slug} ({report.project.title})"))
            for path in report.kept:
                self.stdout.write(f"  kept as is (not modelled): {path}")
            for path in report.skipped:
                self.stdout.write(f"  skipped: {path}")
            for warning in report.warnings:
                self.stdout.write(self.style.WARNING(f"  warning: {warning}"))
        return data

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
