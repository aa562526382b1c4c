"""The owner's platform settings (issue #17 §1): platform, genre, drive type and the main numbers of
the active platform profile, as a form (the whole profile stays editable as JSON in the admin)."""
from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from projects.labels import label
from projects.models import Project, TargetPlatform
from projects.platforms.genres import GENRES
from projects.platforms.limits import active_platform_profile
from projects.platforms.apply import profile_numbers

COUNT = {"min_value": 0, "max_value": 1_000_000}
DRIVE_TYPES = [("", gettext_lazy("Not chosen")), ("plot", gettext_lazy("The plot")),
               ("character", gettext_lazy("The characters")), ("suspense", gettext_lazy("Suspense")),
               ("slice_of_life", gettext_lazy("Everyday life"))]  # GenreDriveType's codes, in human words


class PlatformSettingsForm(forms.Form):
    target_platform = forms.ChoiceField(label=gettext_lazy("Platform"), required=False,
                                        choices=[("", gettext_lazy("Not chosen")), *TargetPlatform.choices])
    genre = forms.ChoiceField(label=gettext_lazy("Genre"), required=False)
    genre_drive_type = forms.ChoiceField(label=gettext_lazy("What drives the story"), required=False,
                                         choices=DRIVE_TYPES)
    word_target_min = forms.IntegerField(label=gettext_lazy("Chapter length: target from (字)"), **COUNT)
    word_target_max = forms.IntegerField(label=gettext_lazy("Chapter length: target up to (字)"), **COUNT)
    word_hard_min = forms.IntegerField(label=gettext_lazy("Chapter length: never below (字)"), **COUNT)
    word_hard_max = forms.IntegerField(label=gettext_lazy("Chapter length: never above (字)"), **COUNT)
    hook_required = forms.BooleanField(label=gettext_lazy("Every chapter must end on a hook"), required=False)
    hook_min_strength = forms.IntegerField(label=gettext_lazy("Weakest hook accepted (1–5)"), min_value=1,
                                           max_value=5)
    max_paragraph_chars = forms.IntegerField(label=gettext_lazy("Longest paragraph on a phone (字)"), min_value=1,
                                             max_value=1_000_000)
    max_exposition_paragraphs = forms.IntegerField(
        label=gettext_lazy("Explanatory paragraphs in a row, at most"), min_value=1, max_value=1000)
    max_new_entities = forms.IntegerField(label=gettext_lazy("New named people, places and terms per chapter, at most"),
                                          **COUNT)

    NUMBER_FIELDS = ("word_target_min", "word_target_max", "word_hard_min", "word_hard_max", "hook_required",
                     "hook_min_strength", "max_paragraph_chars", "max_exposition_paragraphs", "max_new_entities")

    def __init__(self, *args, project: Project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        codes = list(GENRES)
        if project.genre and project.genre not in codes:  # a genre typed before the list existed stays choosable
            codes.append(project.genre)
        self.fields["genre"].choices = [("", _("Not chosen")), *[(code, label("genre", code)) for code in codes]]


    def clean(self):
        data = super().clean()
        lengths = [data.get(name) for name in ("word_hard_min", "word_target_min", "word_target_max", "word_hard_max")]
        if None not in lengths and lengths != sorted(lengths):
            raise forms.ValidationError(_("Chapter lengths must go up: never below ≤ target from ≤ target up to ≤ "
                                          "never above."))
        return data


def platform_form_initial(project: Project) -> dict:
    return {"target_platform": project.target_platform, "genre": project.genre,
            "genre_drive_type": project.genre_drive_type, **profile_numbers(active_platform_profile(project))}
