"""NOVEL_ASK gates rendered as forms (seed 003 QuestionSpec), and the staged volume plan with a
diff against its previous version, approved or regenerated through its gate."""
from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from pipeline.questions.answers import gate_answer_submit
from pipeline.models import GateQuestion, GateStatus
from pipeline.web.selectors import gates_open, run_active
from pipeline.nightly.spending import llm_work_admit
from pipeline.book.staged_reading import chapter_review
from projects.errors import NovelsiteError
from projects.labels import label
from projects.permissions import Action
from projects.selectors import character_names
from projects.text_diff import line_diff
from projects.views.access import flash_error, page_context, project_access


def question_fields(question: GateQuestion) -> list[dict]:
    """The questions of a spec with the template's needs: input name, options, default, kind, and
    the words a person reads (``display_*``, ``text``): translated for the pipeline's own questions,
    the spec's text for others. An option's value stays its code."""
    fields = []
    for q in question.spec.get("questions", []):
        default = q.get("default")
        defaults = default if isinstance(default, list) else [default] if default else []
        header, text = question_words(question.topic, q)
        options = []
        for option in q.get("options", []):
            option = option if isinstance(option, dict) else {"label": option}
            shown = answer_label(q.get("id"), option.get("label"))
            helps = label("answer_help", option.get("label"))
            description = helps if helps != str(option.get("label")) else str(option.get("description") or "")
            options.append({**option, "text": shown, "help": "" if description == shown else description})
        fields.append({**q, "name": f"q-{q['id']}", "defaults": defaults, "options": options,
                       "display_header": header, "display_question": text})
    return fields


def question_words(topic: str, question: dict) -> tuple[str, str]:
    """(header, question) of one question of a QuestionSpec, in the page's language when the
    pipeline asked it (seed 003 specs carry Chinese text; an outside executor's are shown as they are)."""
    qid, kind = question.get("id"), topic.rsplit(".", 1)[-1]
    number = next((int(part) for part in topic.split(".") if part.isdigit()), 0)
    known = {
        ("platform_binding", "platform"): (_("Platform"), _("Where will the novel be published?")),
        ("platform_binding", "genre"): (_("Genre"), _("What kind of novel is it?")),
        ("judge_pause", "decision"): (_("Chapter %(n)d needs a decision") % {"n": number},
                                      _("Read the chapter and the judge's reasons, then decide.")),
        ("judge_pause", "notes"): (_("Notes"), _("Concrete notes for the writer (optional)")),
        ("plan_approval", "decision"): (_("Volume %(n)d plan") % {"n": number},
                                        _("Review the plan, then decide.")),
        ("plan_approval", "notes"): (_("Notes"), _("Notes for a regenerated plan (optional)")),
    }
    return known.get((kind, qid), (str(question.get("header") or ""), str(question.get("question") or "")))


def answer_label(question_id, value) -> str:
    """An answer in words: a decision, a platform or a genre by its label; other text as it is."""
    if isinstance(value, list):
        return "、".join(answer_label(question_id, v) for v in value)
    kind = {"platform": "platform", "genre": "genre"}.get(question_id, "answer")
    return label(kind, value)


def answered_rows(question: GateQuestion) -> list[tuple[str, str, str]]:
    """A stored answer as (question, answer in words, raw value) rows."""
    specs = {q.get("id"): q for q in question.spec.get("questions", [])}
    answers = ((getattr(question, "answer", None) and question.answer.answer) or {}).get("answers") or {}
    rows = []
    for qid, value in answers.items():
        header = question_words(question.topic, specs.get(qid, {"id": qid}))[0] or str(qid)
        raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        rows.append((header, answer_label(qid, value), raw))
    return rows


def answers_from_post(question: GateQuestion, post) -> dict:
    """The AnswerSpec's ``answers`` from the form: a string for single choice and free text, a
    list for multi choice; an "other" text replaces the choice when the question allows it."""
    answers = {}
    for q in question.spec.get("questions", []):
        name = f"q-{q['id']}"
        other = (post.get(name + "-other") or "").strip() if q.get("allow_other") else ""
        if q.get("kind") == "multi_choice":
            picked = [value for value in post.getlist(name) if value]
            value = picked + [other] if other else picked
        else:
            value = other or (post.get(name) or "").strip()
        if value not in ("", []):
            answers[q["id"]] = value
    return answers


@login_required
@require_safe
def gate_list(request, slug: str):
    access = project_access(request, slug)
    questions = [{"question": q, "fields": question_fields(q), "review": chapter_review(q)}
                 for q in gates_open(project=access.project)]
    answered = [{"question": q, "rows": answered_rows(q)} for q in
                GateQuestion.objects.filter(project=access.project, status=GateStatus.ANSWERED)
                .select_related("answer", "answer__answered_by").order_by("-pk")[:20]]
    return render(request, "pipeline/gates.html", page_context(access, questions=questions, answered=answered))


@login_required
@require_POST
def gate_answer(request, slug: str, question_id: int):
    access = project_access(request, slug, Action.DECIDE)
    question = GateQuestion.objects.filter(project=access.project, pk=question_id).first()
    if question is None:
        raise Http404(_("No such question."))
    try:
        llm_work_admit(project=access.project, user=request.user)
        gate_answer_submit(question_id=question.pk, answers=answers_from_post(question, request.POST),
                           user=request.user)
    except NovelsiteError as exc:
        flash_error(request, exc)
        return redirect("gates", slug=slug)
    messages.success(request, _("Answer saved; the pipeline goes on."))
    return redirect("dashboard", slug=slug)


def _plan_run(project):
    run = run_active(project=project)
    if run is None or run.kind != "plan" or run.status != "waiting":
        return None
    run.refresh_from_db(fields=["blackboard"])
    return run


def _as_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _contracts_in_order(contracts) -> list[tuple[int, dict]]:
    """The staged contracts by chapter number (their keys are strings in the blackboard's JSON)."""
    if not isinstance(contracts, dict):
        return []
    rows = [(int(k), v) for k, v in contracts.items() if str(k).isdigit()]
    return sorted(rows, key=lambda row: row[0])


@login_required
@require_safe
def plan_view(request, slug: str):
    access = project_access(request, slug)
    run = _plan_run(access.project)
    context = page_context(access, run=run)
    if run is not None:
        board = run.blackboard
        plan = board.get("content", {}).get("book", {}).get("plan") or {}
        history = [entry.get("value") or {} for entry in board.get("history", {}).get("book.plan", [])]
        previous = history[-1] if history else None
        context.update(
            plan=plan, outline=plan.get("outline", ""), validation=board.get("control", {}).get("plan_validation", {}),
            schedule=plan.get("schedule") or {}, contracts=_contracts_in_order(plan.get("contracts") or {}),
            foreshadowing=plan.get("foreshadowing") or {}, names=character_names(project=access.project),
            versions=len(history) + 1, previous=previous is not None,
            outline_diff=line_diff(previous.get("outline", ""), plan.get("outline", "")) if previous else [],
            contracts_diff=line_diff(_as_text(previous.get("contracts", {})), _as_text(plan.get("contracts", {})))
            if previous else [],
            question=GateQuestion.objects.filter(run=run, status=GateStatus.OPEN).order_by("-pk").first())
    return render(request, "pipeline/plan.html", context)


@login_required
@require_POST
def plan_decide(request, slug: str):
    access = project_access(request, slug, Action.DECIDE)
    run = _plan_run(access.project)
    question = GateQuestion.objects.filter(run=run, status=GateStatus.OPEN).order_by("-pk").first() if run else None
    if question is None:
        raise Http404(_("No volume plan is waiting for approval."))
    decision = "approve" if request.POST.get("decision") == "approve" else "regenerate"
    answers = {"decision": decision}
    if decision == "regenerate" and request.POST.get("notes", "").strip():
        answers["notes"] = request.POST["notes"].strip()
    try:
        llm_work_admit(project=access.project, user=request.user)
        gate_answer_submit(question_id=question.pk, answers=answers, user=request.user)
    except NovelsiteError as exc:
        flash_error(request, exc)
        return redirect("plan", slug=slug)
    messages.success(request, _("Plan approved.") if decision == "approve" else _("The plan is being regenerated."))
    return redirect("dashboard", slug=slug)


@login_required
@require_POST
def plan_edit(request, slug: str):
    """An editor changes the staged outline before it is approved; the edit must pass the planning
    rules (``volume_plan_edit``), and the previous version stays for the diff."""
    from pipeline.book.plan import volume_plan_edit

    access = project_access(request, slug, Action.EDIT)
    run = _plan_run(access.project)
    if run is None:
        raise Http404(_("No volume plan is waiting for approval."))
    outline = request.POST.get("outline", "").replace("\r\n", "\n")
    try:
        warnings = volume_plan_edit(run_id=run.pk, plan={"outline": outline}, user=request.user)
    except NovelsiteError as exc:
        flash_error(request, exc)
    else:
        messages.success(request, _("The staged plan was changed."))
        for warning in warnings:
            messages.warning(request, warning)
    return redirect("plan", slug=slug)
