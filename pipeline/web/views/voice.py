"""The voice page (issue #17 §3), /p/<slug>/settings/voice/: an owner or editor gives a sample of
the wanted voice (pasted or a .txt/.md file); code measures it at once and the style analyst
(``pipeline.book.voice``) picks exemplars and writes DO/DON'T directives into the style profile.
Lives in ``pipeline`` because it starts a run (``projects`` never imports ``pipeline``)."""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from pipeline.models import ACTIVE_RUN_STATUSES
from pipeline.nightly.spending import llm_work_admit
from pipeline.book.voice import style_analysis_cancel, style_analysis_start, style_run_latest
from projects.errors import InvalidData, NovelsiteError
from projects.models import VoiceSample, VoiceSource
from projects.permissions import Action
from projects.services.voice import (
    MAX_CHARS,
    MAX_UPLOAD_BYTES,
    MIN_CHARS,
    sample_text_from_upload,
    voice_sample_delete,
    voice_sample_save,
)
from projects.style_targets import statistical_targets
from projects.views.access import flash_error, page_context, project_access


class VoiceSampleForm(forms.Form):
    source_type = forms.ChoiceField(label=gettext_lazy("Whose writing is it?"), choices=VoiceSource.choices,
                                    initial=VoiceSource.ORIGINAL, widget=forms.RadioSelect)
    text = forms.CharField(label=gettext_lazy("Paste the sample"), required=False, strip=False,
                           widget=forms.Textarea(attrs={"rows": 12}))
    upload = forms.FileField(label=gettext_lazy("…or upload a .txt or .md file (UTF-8)"), required=False)

    def clean(self):
        data = super().clean()
        text, upload = data.get("text") or "", data.get("upload")
        if upload is not None and text.strip():
            raise forms.ValidationError(_("Paste a sample or upload a file, not both."))
        if upload is not None:
            if upload.size > MAX_UPLOAD_BYTES:  # refused before a byte of it is read
                raise forms.ValidationError(_("The file is larger than %(kib)d KiB; upload a shorter sample.")
                                            % {"kib": MAX_UPLOAD_BYTES // 1024})
            try:
                data["text"] = sample_text_from_upload(upload.read(), upload.name or "")
            except InvalidData as exc:
                raise forms.ValidationError(exc.message) from exc
            data["file_name"] = upload.name or ""
        elif not text.strip():
            raise forms.ValidationError(_("Paste a sample or upload a file."))
        else:
            data["file_name"] = ""
        return data


def _number(value: Any, digits: int = 0) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "—"


def statistics_in_words(stats: dict[str, Any]) -> list[str]:
    """The measured numbers of a sample as sentences a writer reads."""
    if not stats:
        return []
    marks = stats.get("punctuation_per_kchars") or {}
    low, high = (stats.get("sentence_length_range") or [0, 0])[:2]
    lines = [
        _("%(chars)d characters in %(sentences)d sentences and %(paragraphs)d paragraphs.")
        % {"chars": stats.get("chars", 0), "sentences": stats.get("sentences", 0),
           "paragraphs": stats.get("paragraphs", 0)},
        _("A sentence has %(avg)s characters on average; most have between %(low)s and %(high)s.")
        % {"avg": _number(stats.get("avg_sentence_length"), 1), "low": low, "high": high},
        _("Sentence lengths vary by %(std)s characters (standard deviation; 8–18 reads natural).")
        % {"std": _number(stats.get("sentence_length_std_dev"), 1)},
        _("A paragraph has %(avg)s characters on average; paragraph lengths vary by %(cv)s (coefficient of "
          "variation; 0.4–1.2 reads natural).")
        % {"avg": _number(stats.get("avg_paragraph_length")), "cv": _number(stats.get("paragraph_length_cv"), 2)},
        _("%(percent)s%% of the text is dialogue.") % {"percent": _number((stats.get("dialogue_ratio") or 0) * 100)},
        _("Per 1000 characters: %(comma)s commas, %(stop)s full stops, %(exclamation)s exclamation marks, "
          "%(question)s question marks, %(ellipsis)s ellipses, %(dash)s dashes.")
        % {"comma": _number(marks.get("comma"), 1), "stop": _number(marks.get("full_stop"), 1),
           "exclamation": _number(marks.get("exclamation"), 1), "question": _number(marks.get("question"), 1),
           "ellipsis": _number(marks.get("ellipsis"), 1), "dash": _number(marks.get("em_dash"), 1)},
    ]
    if stats.get("idioms_per_kchars") is not None:
        lines.append(_("%(rate)s four-character idioms per 1000 characters of narration.")
                     % {"rate": _number(stats["idioms_per_kchars"], 1)})
    return lines


def targets_in_words(targets: dict[str, Any]) -> list[str]:
    std, cv = targets["sentence_length_std_dev"], targets["paragraph_length_cv"]
    return [
        _("Sentences of about %(avg)s characters, spread %(low)s–%(high)s (standard deviation).")
        % {"avg": _number(targets["avg_sentence_length"], 1), "low": std[0], "high": std[1]},
        _("Paragraphs of about %(avg)s characters, spread %(low)s–%(high)s (coefficient of variation); never "
          "above %(max)s characters.") % {"avg": _number(targets["avg_paragraph_length"]), "low": cv[0],
                                         "high": cv[1], "max": targets["max_paragraph_chars"]},
        _("About %(percent)s%% dialogue; no narrating connectives (首先, 然而, 总之 …).")
        % {"percent": _number(targets["dialogue_ratio"] * 100)},
    ]


def _directives(profile: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for item in profile.get("writing_directives") or []:
        if isinstance(item, dict):
            out.append({"directive": str(item.get("directive") or ""), "do": str(item.get("do") or ""),
                        "dont": str(item.get("dont") or "")})
        elif isinstance(item, str):
            out.append({"directive": item, "do": "", "dont": ""})
    return out


def _context(access, form: VoiceSampleForm) -> dict[str, Any]:
    project = access.project
    sample = VoiceSample.objects.filter(project=project).select_related("updated_by").first()
    run = style_run_latest(project)
    targets = statistical_targets(project)
    profile = project.style_profile or {}
    exemplars = [e for e in profile.get("style_exemplars") or [] if isinstance(e, str)]
    return page_context(access, form=form, sample=sample, run=run,
                        analysing=run is not None and run.status in ACTIVE_RUN_STATUSES and run.status != "error",
                        statistics=statistics_in_words(sample.statistics if sample else {}),
                        targets=targets, targets_words=targets_in_words(targets),
                        exemplars=exemplars, directives=_directives(profile),
                        limits={"least": MIN_CHARS, "most": MAX_CHARS, "kib": MAX_UPLOAD_BYTES // 1024})


def _start_analysis(request, project) -> None:
    style_analysis_cancel(project_id=project.pk)  # its answer would be about an older sample
    try:
        llm_work_admit(project=project, user=request.user)
        style_analysis_start(project_id=project.pk, user=request.user)
    except NovelsiteError as exc:
        messages.warning(request, _("The style analyst did not start: %(reason)s") % {"reason": exc.message})
    else:
        messages.success(request, _("The style analyst is reading the sample; its exemplars and directives appear "
                                    "here when it is done."))


@login_required
@require_http_methods(["GET", "POST"])
def voice_view(request, slug: str):
    access = project_access(request, slug, Action.EDIT)
    project = access.project
    action = request.POST.get("action", "save") if request.method == "POST" else ""
    if action == "analyse":
        if not VoiceSample.objects.filter(project=project).exists():
            messages.error(request, _("Give a voice sample first."))
        else:
            _start_analysis(request, project)
        return redirect("settings-voice", slug=slug)
    if action == "delete":
        voice_sample_delete(project=project)
        messages.success(request, _("The sample is deleted; the platform's and genre's defaults give the targets "
                                    "again."))
        return redirect("settings-voice", slug=slug)
    form = VoiceSampleForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            voice_sample_save(project=project, editor=request.user, text=data["text"],
                              source_type=data["source_type"], file_name=data["file_name"])
        except InvalidData as exc:
            form.add_error(None, exc.message)
        except NovelsiteError as exc:
            flash_error(request, exc)
        else:
            messages.success(request, _("The sample is saved and measured."))
            _start_analysis(request, project)
            return redirect("settings-voice", slug=slug)
    return render(request, "pipeline/voice.html", _context(access, form))
