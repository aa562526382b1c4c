"""A sample of the wanted voice (issue #17 §3): prose an owner or editor gave, and the statistics
code measured on it. The style analyst reads it; ``projects.style_targets`` turns its numbers into
the writer's statistical targets."""
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from projects.models.project import Project


class VoiceSource(models.TextChoices):  # style profile ``source_type`` (facts §10.12)
    ORIGINAL = "original", _("My own earlier writing")
    REFERENCE = "reference", _("A passage by someone else that I like")


class VoiceSample(models.Model):
    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="voice_sample")
    text = models.TextField()
    source_type = models.CharField(max_length=20, choices=VoiceSource.choices, default=VoiceSource.ORIGINAL)
    file_name = models.CharField(max_length=200, blank=True, help_text="The uploaded file's name, if any.")
    statistics = models.JSONField(default=dict, blank=True,
                                  help_text="projects.voice_stats.voice_statistics of the text, computed on save.")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"voice sample of {self.project_id}"
