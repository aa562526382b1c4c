"""The quick start's trial chapter (facts §5 ``trial`` and ``results``): readable with its
evaluation while the quick start runs and after it committed."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_safe

from pipeline.book.staged_reading import quickstart_trial
from projects.views.access import page_context, project_access


@login_required
@require_safe
def trial_view(request, slug: str):
    access = project_access(request, slug)
    return render(request, "pipeline/trial.html", page_context(access, trial=quickstart_trial(project=access.project)))
