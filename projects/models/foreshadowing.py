from django.db import models

from projects.json_fields import SchemaJSONField
from projects.models.project import Project
from projects.schemas import FORESHADOW_SCOPES, FORESHADOW_STATUSES

ForeshadowScope = models.TextChoices("ForeshadowScope", [(s, s) for s in FORESHADOW_SCOPES])
ForeshadowStatus = models.TextChoices("ForeshadowStatus", [(s, s) for s in FORESHADOW_STATUSES])
STATUS_RANK = {"planted": 1, "advanced": 2, "resolved": 3}  # facts §10.9: status only moves forward


class Foreshadowing(models.Model):
    """One item of foreshadowing/global.json: the fact layer (facts §10.9)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="foreshadowing")
    fid = models.CharField("id", max_length=200)
    description = models.TextField(blank=True)
    scope = models.CharField(max_length=6, choices=ForeshadowScope, default="medium")
    status = models.CharField(max_length=8, choices=ForeshadowStatus, default="planted")
    planted_chapter = models.PositiveIntegerField(null=True, blank=True)
    planted_storyline = models.CharField(max_length=60, blank=True)
    target_resolve_start = models.PositiveIntegerField(null=True, blank=True)
    target_resolve_end = models.PositiveIntegerField(null=True, blank=True)
    last_updated_chapter = models.PositiveIntegerField(null=True, blank=True)
    extra = SchemaJSONField(schema_name="EXTRA_KEYS", default=dict, blank=True, editor="raw")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "fid"]
        verbose_name_plural = "foreshadowing"
        constraints = [models.UniqueConstraint(fields=["project", "fid"], name="foreshadowing_unique_id")]
        indexes = [models.Index(fields=["project", "status", "scope"], name="foreshadowing_status_idx")]

    def __str__(self) -> str:
        return f"{self.fid} ({self.status})"


class ForeshadowingEvent(models.Model):
    """One history entry; unique by chapter and action (facts §10.9 de-duplicates on ``chapter:action``)."""

    foreshadowing = models.ForeignKey(Foreshadowing, on_delete=models.CASCADE, related_name="events")
    chapter = models.PositiveIntegerField()
    action = models.CharField(max_length=8, choices=ForeshadowStatus)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["foreshadowing", "chapter", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["foreshadowing", "chapter", "action"], name="foreshadowevent_unique")
        ]

    def __str__(self) -> str:
        return f"{self.chapter}:{self.action}"
