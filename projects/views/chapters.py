"""Chapters: the list by volume, the reader, the conflict-safe editor and the version history."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_safe

from projects.chapter_marks import chapter_marks, marked_paragraphs
from projects.errors import InvalidData, VersionConflict
from projects.evaluations import evaluation_report
from projects.models import Chapter
from projects.permissions import Action
from projects.query_params import query_int
from projects.selectors import chapter_list_for_project, volumes_with_counts
from projects.services.editing import chapter_update
from projects.text_diff import line_diff
from projects.views.access import page_context, project_access


def _chapter(project, number: int) -> Chapter:
    chapter = (Chapter.objects.filter(project=project, number=number)
               .select_related("volume", "storyline", "evaluation", "log", "summary").first())
    if chapter is None:
        raise Http404(_("No such chapter."))
    return chapter


@login_required
@require_safe
def chapter_list(request, slug: str):
    """The volumes with their chapter counts, and the chapters of one volume (``?volume=N``,
    default the latest volume with chapters): a 1000-chapter book is not one page."""
    access = project_access(request, slug)
    volumes = list(volumes_with_counts(project=access.project))
    numbers = [v.number for v in volumes if v.chapter_count]
    wanted = query_int(request.GET, "volume")  # a malformed number: 404 (NovelsiteErrorMiddleware)
    current = wanted if wanted in numbers else (numbers[-1] if numbers else None)
    chapters = list(chapter_list_for_project(project=access.project).filter(volume__number=current)) \
        if current is not None else []
    return render(request, "projects/chapter_list.html", page_context(
        access, volumes=volumes, current=current, chapters=chapters, total=sum(v.chapter_count for v in volumes)))


def _mark_counts(marks: list[dict]) -> list[tuple[str, str, int]]:
    """(rule, severity, how many marks) for the legend under the text, hard ones first."""
    counts: dict[tuple[str, str], int] = {}
    for mark in marks:
        counts[(mark["rule"], mark["severity"])] = counts.get((mark["rule"], mark["severity"]), 0) + 1
    return sorted(((rule, severity, n) for (rule, severity), n in counts.items()), key=lambda r: (r[1] != "hard", r[0]))


@login_required
@require_safe
def chapter_read(request, slug: str, number: int):
    access = project_access(request, slug)
    chapter = _chapter(access.project, number)
    marks = chapter_marks(access.project, chapter)  # the craft lints' findings (pipeline registers them)
    paragraphs = marked_paragraphs(chapter.text, marks)
    evaluation = getattr(chapter, "evaluation", None)
    neighbours = set(Chapter.objects.filter(project=access.project, number__in=[number - 1, number + 1])
                     .values_list("number", flat=True))
    return render(request, "projects/chapter_read.html", page_context(
        access, chapter=chapter, paragraphs=paragraphs, evaluation=evaluation, lint_counts=_mark_counts(marks),
        report=evaluation_report(evaluation.data) if evaluation else None,
        log=getattr(chapter, "log", None), summary=getattr(chapter, "summary", None),
        previous=number - 1 if number - 1 in neighbours else None,
        next=number + 1 if number + 1 in neighbours else None))


class ChapterEditForm(forms.Form):
    title = forms.CharField(label=gettext_lazy("Title"), max_length=200, required=False)
    text = forms.CharField(label=gettext_lazy("Text"),
                           widget=forms.Textarea(attrs={"rows": 30, "class": "chapter-text"}),
                           max_length=100_000)
    base_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1)


@login_required
@require_http_methods(["GET", "POST"])
def chapter_edit(request, slug: str, number: int):
    access = project_access(request, slug, Action.EDIT)
    chapter = _chapter(access.project, number)
    initial = {"title": chapter.title, "text": chapter.text, "base_version": chapter.version}
    form = ChapterEditForm(request.POST or None, initial=initial)
    conflict = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            chapter_update(chapter=chapter, editor=request.user, text=data["text"].replace("\r\n", "\n"),
                           base_version=data["base_version"], title=data["title"])
        except VersionConflict:
            chapter.refresh_from_db()
            conflict = {"current": chapter, "diff": line_diff(chapter.text, data["text"].replace("\r\n", "\n"))}
            # the editor keeps the person's text but now edits on top of the saved version: saving
            # again is a deliberate choice made after seeing both
            rebased = request.POST.copy()
            rebased["base_version"] = chapter.version
            form = ChapterEditForm(rebased)
            messages.error(request, _("Someone saved version %(v)d meanwhile; your text was not saved. "
                                      "Compare both below and apply your change to the new version.")
                           % {"v": chapter.version})
        except InvalidData as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, _("Chapter saved."))
            return redirect("chapter-read", slug=slug, number=number)
    return render(request, "projects/chapter_edit.html", page_context(access, chapter=chapter, form=form,
                                                                      conflict=conflict))


@login_required
@require_safe
def chapter_history(request, slug: str, number: int):
    access = project_access(request, slug)
    chapter = _chapter(access.project, number)
    versions = list(chapter.history.select_related("history_user").order_by("-history_date")[:50])
    rows = []
    for newer, older in zip(versions, versions[1:] + [None]):
        changed = line_diff(older.text, newer.text) if older is not None else []
        rows.append({"version": newer, "diff": changed[:200]})
    return render(request, "projects/chapter_history.html", page_context(access, chapter=chapter, rows=rows))
