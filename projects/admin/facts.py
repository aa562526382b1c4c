"""Admin for the facts ledger (issue #18): versioned like every story object, with the web pages'
rules (known characters and storyline, a closing chapter exactly when closed)."""
from django import forms
from django.contrib import admin

from projects.admin.base import VersionedForm, VersionedStoryAdmin
from projects.errors import InvalidData
from projects.models import StoryFact
from projects.services.facts import story_fact_references_check


class StoryFactForm(VersionedForm):
    def clean(self):
        cleaned = super().clean()
        project = cleaned.get("project") or (self.instance.project if self.instance.project_id else None)
        if project is not None:
            try:
                story_fact_references_check(project, characters=cleaned.get("characters") or [],
                                            storyline=cleaned.get("storyline") or "")
            except InvalidData as exc:
                raise forms.ValidationError(exc.message) from exc
        return cleaned


@admin.register(StoryFact)
class StoryFactAdmin(VersionedStoryAdmin):
    form = StoryFactForm
    list_display = ["fact_id", "project", "kind", "status", "chapter", "closed_chapter", "short_text"]
    list_select_related = ["project"]
    list_filter = ["kind", "status", "project"]
    search_fields = ["fact_id", "text"]
    autocomplete_fields = ["project"]
    readonly_fields = ("version", "origin")

    @admin.display(description="text")
    def short_text(self, obj: StoryFact) -> str:
        return obj.text[:60]
