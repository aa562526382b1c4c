"""``python manage.py novel <subcommand>``: the command-line face of Novelsite.

Subcommands: ``demo`` (load the demo novel), ``status``, ``next`` and ``advance`` (a project, or an exported
tree with ``--tree``), ``packet``, ``prompt`` (what a chapter stage would send the model), ``validate --tree``,
``import-step``, ``plan``, ``answer``, ``rewrite``, ``promote``, ``ask validate``, ``write``, ``export``,
``import`` and ``lint`` (craft lints of a chapter or a chapter file). With ``--json`` the output is the
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

from projects.errors import InvalidData, NovelsiteError
from projects.filetree.export import export_to_path
from projects.filetree.importer import tree_import
from projects.filetree.source import read_tree
from projects.models import Project
from projects.query_params import plain_int
from projects.sample_project import SAMPLE_SLUG, sample_project_create
from projects.selectors import project_status
from projects.vocabulary import CHAPTER_AGENT_STEPS


class Command(BaseCommand):
    help = ("Novelsite's novel commands: demo, status, next, advance, packet, prompt, validate, import-step, plan, "
            "answer, rewrite, promote, ask validate, write, export, import, lint.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the JSON envelope instead of text.")
        sub = parser.add_subparsers(dest="subcommand", required=True)
        demo = sub.add_parser("demo", help="Create the demo novel (idempotent).")
        demo.add_argument("--owner", help="Username to make owner (created if missing, without a password).")
        demo.add_argument("--reset", action="store_true",
                          help="Delete the demo novel first (what was written in it is lost), so it starts over.")
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
        upcoming = sub.add_parser("next", help="The next step of a project, or of an exported tree with --tree, "
                                               "and why (facts §4.2).")
        upcoming.add_argument("project", nargs="?", help="Project slug (not with --tree).")
        upcoming.add_argument("--tree", help="A project tree (a directory) instead of a project.")
        step = sub.add_parser("advance", help="Take the next step: `advance <project> [<step>]` starts or resumes "
                                              "the run that does it; `advance --tree DIR <step>` advances an "
                                              "exported tree's checkpoint after validating the step's outputs.")
        step.add_argument("project", help="Project slug (with --tree: the step).")
        step.add_argument("step", nargs="?", help="The step you expect to take (refused if it is not the next).")
        step.add_argument("--as", dest="username", help="Username the step is taken for (recorded).")
        step.add_argument("--tree", help="An exported tree (a directory) to advance instead of a project.")
        packet = sub.add_parser("packet", help="The InstructionPacket of a step (facts §14.1).")
        packet.add_argument("project", help="Project slug.")
        packet.add_argument("step", help="Step id, e.g. chapter:004:draft, volume:outline, quickstart:world.")
        packet.add_argument("--embed-brief", action="store_true", help="Embed the first 2000 characters of the brief.")
        packet.add_argument("--write", metavar="TREE",
                            help="Also write it to TREE/staging/manifests/<step>.packet.json.")
        prompt = sub.add_parser("prompt", help="The exact request a chapter stage would send the model (system and "
                                               "messages in order, with the cache markers) and its receipt; "
                                               "nothing is sent.")
        prompt.add_argument("project", help="Project slug.")
        prompt.add_argument("chapter", type=int, help="Chapter number.")
        prompt.add_argument("--stage", default="draft", choices=CHAPTER_AGENT_STEPS,
                            help="Which stage's request (default: draft).")
        take = sub.add_parser("import-step", help="Take a step's staged outputs from an exported tree into the "
                                                  "project, after validating them (chapter steps, volume:outline).")
        take.add_argument("project", help="Project slug.")
        take.add_argument("tree", help="The tree's directory, where the outside executor wrote staging/.")
        take.add_argument("step", help="Step id, e.g. chapter:004:draft.")
        take.add_argument("--as", dest="username", help="Username the step is taken for (recorded).")
        check = sub.add_parser("validate", help="Validate a step's outputs in an exported tree (facts §5–§8).")
        check.add_argument("step", help="Step id.")
        check.add_argument("--tree", required=True, help="The tree's directory (where .checkpoint.json is).")
        plan = sub.add_parser("plan", help="Plan the project's current volume (stops at the approval question).")
        plan.add_argument("project", help="Project slug.")
        plan.add_argument("--notes", default="", help="Notes for the PlotArchitect.")
        answer = sub.add_parser("answer", help="Answer a NOVEL_ASK question waiting in a project.")
        answer.add_argument("project", help="Project slug.")
        answer.add_argument("answers", help='The answers as JSON, e.g. \'{"decision": "approve"}\'.')
        answer.add_argument("--question", type=int, help="Question id (default: the only open one).")
        answer.add_argument("--as", dest="username", required=True, help="Username answering (reviewer or above).")
        rewrite = sub.add_parser("rewrite", help="Rewrite a committed chapter (the latest is rolled back and "
                                                 "written again; an older one gets a text-only revision).")
        rewrite.add_argument("project", help="Project slug.")
        rewrite.add_argument("chapter", type=int, help="Chapter number.")
        rewrite.add_argument("--notes", required=True, help="What to change.")
        rewrite.add_argument("--as", dest="username", help="Username asking (recorded).")
        promote = sub.add_parser("promote", help="Write a promotion post for a chapter, a range or a volume "
                                                 "(seed 001) and print its platform versions.")
        promote.add_argument("project", help="Project slug.")
        where = promote.add_mutually_exclusive_group(required=True)
        where.add_argument("--chapter", type=int, help="One chapter.")
        where.add_argument("--chapters", help="A range, e.g. 3-5.")
        where.add_argument("--volume", type=int, help="A volume.")
        promote.add_argument("--platform", default="xiaohongshu", help="xiaohongshu, wechat, twitter or general.")
        promote.add_argument("--style", default="casual",
                             help="professional, casual, humorous, inspirational or educational.")
        promote.add_argument("--intent", default="", help="What the post is for (default: promote the chapters).")
        promote.add_argument("--as", dest="username", help="Username the post is written for (recorded).")
        lint = sub.add_parser("lint", help="Craft lints of a committed chapter (`lint <project> <chapter>`) or of a "
                                           "chapter file (`lint --file chapter.md`, with a project's thresholds "
                                           "when one is named).")
        lint.add_argument("project", nargs="?", help="Project slug (optional with --file).")
        lint.add_argument("chapter", nargs="?", help="Chapter number (with --file: the number its heading must carry).")
        lint.add_argument("--file", help="A chapter file in UTF-8: `# 第 N 章 标题` and the prose.")
        ask = sub.add_parser("ask", help="NOVEL_ASK files (seed 003).")
        ask_sub = ask.add_subparsers(dest="ask_command", required=True)
        ask_validate = ask_sub.add_parser("validate", help="Validate a QuestionSpec or an AnswerSpec JSON file.")
        ask_validate.add_argument("file", help="A QuestionSpec (version, topic, questions) or an AnswerSpec file.")
        ask_validate.add_argument("--questions", help="With an AnswerSpec: the QuestionSpec it answers (cross-check).")

    def handle(self, *args: Any, **options: Any) -> None:
        command = options["subcommand"]
        try:
            data = getattr(self, f"_{command.replace('-', '_')}")(options)
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
        if options.get("reset"):
            deleted, _ = Project.objects.filter(slug=SAMPLE_SLUG).delete()
            if deleted and not options["json"]:
                self.stdout.write(f"The earlier demo novel ({SAMPLE_SLUG}) was deleted.")
        project = sample_project_create(owner=owner)
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"Demo project ready: {project.title} ({project.slug})"))
        return {"project": project.slug}

    def _write(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.management.write_progress import write_chapters

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
                             replace=options["replace"], operator=True)
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

    def _project(self, slug: str) -> Project:
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise Project.DoesNotExist(f"No project with slug {slug!r}.")
        return project

    def _user(self, username: str | None):
        if not username:
            return None
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.", returncode=2)
        return user

    def _next(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.book.orchestrator import next_step

        if options.get("tree"):
            from pipeline.steps.tree_next import tree_next_step

            data = tree_next_step(options["tree"])
            if not options["json"]:
                self.stdout.write(f"next: {data['step']}  ({data['reason']})")
                evidence = data.get("evidence", {})
                if evidence.get("differs_from_tool"):
                    self.stdout.write(f"  unlike novel-writer-cli ({evidence.get('tool_step', data['step'])}): "
                                      f"{evidence['differs_from_tool']}")
            return data
        if not options.get("project"):
            raise CommandError("next: name a project, or a tree with --tree", returncode=2)
        data = next_step(self._project(options["project"])).as_dict()
        if not options["json"]:
            self.stdout.write(f"next: {data['step'] or '-'}  ({data['reason']})  action: {data['action']}")
            if data["evidence"].get("differs_from_tool"):  # where novel-writer-cli would go elsewhere, and why
                self.stdout.write(f"  unlike novel-writer-cli: {data['evidence']['differs_from_tool']}")
        return data

    def _advance(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.book.orchestrator import advance, next_step

        if options.get("tree"):
            from pipeline.steps.tree_advance import advance_step

            step = options["step"] or options["project"]  # `advance --tree DIR <step>`
            checkpoint = advance_step(options["tree"], step)
            if not options["json"]:
                self.stdout.write(self.style.SUCCESS(f"{step} advanced: {checkpoint.get('orchestrator_state')} "
                                                     f"stage {checkpoint.get('pipeline_stage') or '-'}"))
            return {"step": step, "checkpoint": checkpoint}
        project = self._project(options["project"])
        run = advance(project_id=project.pk, user=self._user(options.get("username")), step=options.get("step"))
        project.refresh_from_db()
        data = {"run_id": run.pk if run else None, "state": project.orchestrator_state,
                "next": next_step(project).as_dict()}
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"{project.slug}: {project.orchestrator_state}; next: "
                                                 f"{data['next']['step'] or '-'} ({data['next']['reason']})"))
        return data

    def _prompt(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.chapter.prompt_preview import stage_prompt_preview

        preview = stage_prompt_preview(self._project(options["project"]), options["chapter"], options["stage"])
        data = preview.as_dict()
        if not options["json"]:
            self._print_prompt(data)
        return data

    def _print_prompt(self, data: dict[str, Any]) -> None:
        receipt = data["receipt"]
        self.stdout.write(self.style.SUCCESS(
            f"chapter {data['chapter']} · {data['stage']} · {receipt.get('backend')}:{data['model'] or '(default)'} · "
            f"from the {data['source']} · not sent"))
        parts = [("system", block) for block in data["request"].get("system", [])]
        parts += [(message["role"], block) for message in data["request"]["messages"] for block in message["content"]]
        for role, block in parts:
            marker = "  [cache breakpoint after this block]" if block.get("cache_control") else ""
            self.stdout.write(self.style.MIGRATE_HEADING(f"--- {role}{marker}"))
            self.stdout.write(block["text"])
        self.stdout.write(self.style.MIGRATE_HEADING("--- receipt"))
        self.stdout.write(json.dumps(receipt, ensure_ascii=False, indent=2, default=str))

    def _packet(self, options: dict[str, Any]) -> dict[str, Any]:
        from pathlib import Path

        from pipeline.steps.packets import instruction_packet, packet_manifest_path
        from projects.filetree.canonical import dump_json

        project = self._project(options["project"])
        packet = instruction_packet(project, options["step"], embed_brief=options["embed_brief"])
        data: dict[str, Any] = {"packet": packet}
        if options.get("write"):
            target = Path(options["write"]) / packet_manifest_path(options["step"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(dump_json(packet))
            data["written_manifest_path"] = str(target)
        if not options["json"]:
            self.stdout.write(json.dumps(packet, ensure_ascii=False, indent=2))
        return data

    def _import_step(self, options: dict[str, Any]) -> dict[str, Any]:
        from dataclasses import asdict as as_dict

        from pipeline.steps.import_step import step_import

        project = self._project(options["project"])
        imported = step_import(project_id=project.pk, tree=options["tree"], step=options["step"],
                               user=self._user(options.get("username")))
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"{imported.step} imported; the run is {imported.status} at "
                                                 f"{imported.next_stage}"))
            for violation in imported.violations:  # #18: what sends the chapter back, as the pipeline would
                self.stdout.write(self.style.WARNING(f"  violation: {violation}"))
        return as_dict(imported)

    def _validate(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.steps.tree_validate import validate_step

        check = validate_step(options["tree"], options["step"])
        data = {"step": options["step"], "ok": check.ok, "errors": check.errors, "warnings": check.warnings}
        if not check.ok:
            raise InvalidData(f"{options['step']}: " + "; ".join(check.errors), extra=data)
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"{options['step']}: valid"))
            for warning in check.warnings:
                self.stdout.write(self.style.WARNING(f"  warning: {warning}"))
        return data

    def _plan(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.book.orchestrator import next_step
        from pipeline.book.plan import volume_plan_start

        project = self._project(options["project"])
        run = volume_plan_start(project_id=project.pk, notes=options["notes"])
        project.refresh_from_db()
        data = {"run_id": run.pk, "next": next_step(project).as_dict()}
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"planning volume {project.current_volume}: "
                                                 f"{data['next']['reason']}"))
        return data

    def _answer(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.questions.answers import gate_answer_submit
        from pipeline.models import GateQuestion, GateStatus

        project = self._project(options["project"])
        user = self._user(options["username"])
        from projects.permissions import Action
        from projects.selectors import project_get_for_member

        project_get_for_member(user=user, slug=project.slug, action=Action.DECIDE)
        try:
            answers = json.loads(options["answers"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"answers: not JSON: {exc}", returncode=2) from exc
        questions = GateQuestion.objects.filter(project=project, status=GateStatus.OPEN)
        if options.get("question"):
            questions = questions.filter(pk=options["question"])
        found = list(questions[:2])
        if len(found) != 1:
            raise CommandError("no open question" if not found else "several open questions: pass --question",
                               returncode=2)
        answer = gate_answer_submit(question_id=found[0].pk, answers=answers, user=user)
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"answered {found[0].step} ({found[0].topic})"))
        return {"question_id": found[0].pk, "answer": answer.answer}

    def _rewrite(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.book.rewrite import chapter_rewrite_start

        project = self._project(options["project"])
        run = chapter_rewrite_start(project_id=project.pk, chapter=options["chapter"], notes=options["notes"],
                                    user=self._user(options.get("username")))
        run.refresh_from_db()
        data = {"run_id": run.pk, "kind": run.kind, "status": run.status}
        if not options["json"]:
            how = "rolled back and rewritten" if run.kind == "chapter" else "revised (text only)"
            self.stdout.write(self.style.SUCCESS(f"chapter {options['chapter']}: {how}; run {run.pk} is {run.status}"))
        return data

    def _promote(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.models import PipelineRun
        from pipeline.promotion.run import promotion_start
        from pipeline.promotion.snapshot import seed_snapshot

        project = self._project(options["project"])
        if options.get("chapters"):
            first, _, last = (plain_int(part) for part in options["chapters"].partition("-"))
            if first is None or last is None:
                raise CommandError("--chapters: a range like 3-5", returncode=2)
            target = {"chapters": [first, last]}
        else:
            target = {"chapter": options["chapter"]} if options.get("chapter") else {"volume": options["volume"]}
        run = promotion_start(project_id=project.pk, target=target, platform=options["platform"],
                              style=options["style"], intent=options["intent"],
                              user=self._user(options.get("username")))
        run = PipelineRun.objects.get(pk=run.pk)  # with a broker, the steps run on the workers
        snapshot = seed_snapshot(run.blackboard)
        if not options["json"]:
            self.stdout.write(f"promotion {run.pk}: {run.status}")
            for platform, version in (snapshot["content_zone"].get("platform_versions") or {}).items():
                self.stdout.write(self.style.SUCCESS(f"\n[{platform}] {version['title']}"))
                self.stdout.write(version["body"])
                self.stdout.write(" ".join(f"#{tag}" for tag in version["hashtags"]))
        return {"run_id": run.pk, "status": run.status, "snapshot": snapshot}

    def _ask(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.questions.spec import check_answer, validate_answer_spec, validate_question_spec

        def load(path: str) -> Any:
            try:
                with open(path, encoding="utf-8") as handle:
                    return json.load(handle)
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise CommandError(f"{path}: {exc}", returncode=2) from exc

        document = load(options["file"])
        is_answer = isinstance(document, dict) and "answers" in document
        errors = validate_answer_spec(document) if is_answer else validate_question_spec(document)
        if is_answer and options.get("questions") and not errors:
            errors = check_answer(document, load(options["questions"]))
        kind = "AnswerSpec" if is_answer else "QuestionSpec"
        if errors:
            raise InvalidData(f"{options['file']}: invalid {kind}: " + "; ".join(errors), extra={"errors": errors})
        if not options["json"]:
            self.stdout.write(self.style.SUCCESS(f"{options['file']}: a valid {kind}"))
        return {"file": options["file"], "kind": kind, "errors": []}

    def _lint(self, options: dict[str, Any]) -> dict[str, Any]:
        from pipeline.chapter.lint import lint_chapter, lint_file

        number = None
        if options.get("chapter") is not None:
            number = plain_int(options["chapter"])
            if number is None or number < 1:
                raise CommandError(f"The chapter must be a number ≥ 1, not {options['chapter']!r}.", returncode=2)
        project = self._project(options["project"]) if options.get("project") else None
        if options.get("file"):
            report = lint_file(options["file"], project=project, chapter=number)
        elif project is None or number is None:
            raise CommandError("Name a project and a chapter, or a chapter file with --file.", returncode=2)
        else:
            report = lint_chapter(project, number)
        if not options["json"]:
            self._print_lint(report)
        return report.as_dict()

    def _print_lint(self, report) -> None:
        from pipeline.chapter.craft.catalogue import RULES_BY_ID

        write = self.stdout.write
        write(f"{report.chars} 字，{len(report.findings)} 项发现（{len(report.hard)} 项必须修改）")
        for finding in report.findings:
            rate = f"，每千字 {finding.rate_per_kchars}" if finding.rate_per_kchars is not None else ""
            style = self.style.ERROR if finding.severity == "hard" else self.style.WARNING
            write(style(f"[{finding.severity}] {finding.rule}（{RULES_BY_ID[finding.rule].name}）"
                        f"×{finding.count}{rate}"))
            write(f"    {finding.message}")
            for item in finding.evidence[:5]:
                write(f"    {item['start']}-{item['end']}: {item['text'][:60]}")

    def _status(self, options: dict[str, Any]) -> dict[str, Any]:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise Project.DoesNotExist(f"No project with slug {options['project']!r}.")
        status = project_status(project=project)
        data = asdict(status)
        data["project"] = {"slug": project.slug, "title": project.title}
        from pipeline.web.selectors import project_error

        error = project_error(project=project)  # ERROR_RETRY's cause; None in any other state
        data["error"] = asdict(error) if error else None
        if not options["json"]:
            self._print_status(data)
        return data

    def _print_status(self, data: dict[str, Any]) -> None:
        cp = data["checkpoint"]
        write = self.stdout.write
        write(f"{data['project']['title']} ({data['project']['slug']})")
        write(f"  state:      {cp['orchestrator_state']}  stage: {cp['pipeline_stage'] or 'idle'}"
              f"  inflight: {cp['inflight_chapter'] or '-'}")
        if data["error"]:
            error = data["error"]
            where = ", ".join(filter(None, [f"run {error['run_id']}" if error["run_id"] else "",
                                            error["run_kind"],
                                            f"chapter {error['chapter']}" if error["chapter"] else "",
                                            error["at"]]))
            write(self.style.ERROR(f"  error:      {error['stage'] + ': ' if error['stage'] else ''}{error['error']}"
                                   + (f" ({where})" if where else "")))
            write("              retry: manage.py novel advance " + data["project"]["slug"])
        write(f"  volume:     {cp['current_volume']}  last completed chapter: {cp['last_completed_chapter']}")
        write(f"  chapters:   {data['chapters']} ({data['words']} 字)  active characters: {data['characters_active']}")
        write(f"  state:      v{data['state_version']}")
        write(f"  foreshadowing: {data['foreshadowing_open']} open, overdue: "
              f"{', '.join(data['foreshadowing_overdue']) or 'none'}, dormant: "
              f"{', '.join(data['foreshadowing_dormant']) or 'none'}")
