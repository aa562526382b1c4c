from django.core.validators import MaxLengthValidator
from django.db import models
from simple_history.models import HistoricalRecords

from projects.ids import slug_validator
from projects.json_fields import SchemaJSONField
from projects.models.base import EditVersioned
from projects.models.project import Project

STORYLINE_MEMORY_MAX_CHARS = 500  # seed 000 §9.1: storylines/<id>/memory.md, ≤500 字


class StorylineScope(models.TextChoices):  # facts §10.4
    NOVEL = "novel"
    MULTI_VOLUME = "multi_volume"
    SINGLE_VOLUME = "single_volume"


class StorylineStatus(models.TextChoices):
    ACTIVE = "active"
    DORMANT = "dormant"
    PLANNED = "planned"


class Storyline(EditVersioned):
    """One line of storylines/storylines.json, with its memory.md (facts §10.4, §10.10)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="storylines")
    slug = models.CharField(max_length=60, validators=[slug_validator])
    name = models.CharField(max_length=100)
    type = models.CharField(max_length=40, blank=True, help_text="main_arc, faction_conflict … (no 'type:' prefix)")
    scope = models.CharField(max_length=16, choices=StorylineScope, default=StorylineScope.NOVEL)
    pov_characters = SchemaJSONField(schema_name="STRING_LIST", default=list, blank=True)
    affiliated_factions = SchemaJSONField(schema_name="STRING_LIST", default=list, blank=True)
    timeline = models.CharField(max_length=40, blank=True, default="present")
    status = models.CharField(max_length=8, choices=StorylineStatus, default=StorylineStatus.ACTIVE)
    description = models.TextField(blank=True)
    introduced_volume = models.PositiveIntegerField(null=True, blank=True)
    memory = models.TextField(blank=True, validators=[MaxLengthValidator(STORYLINE_MEMORY_MAX_CHARS)])
    extra = SchemaJSONField(schema_name="EXTRA_KEYS", default=dict, blank=True, editor="raw")
    position = models.PositiveIntegerField(default=0)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "position", "slug"]
        constraints = [models.UniqueConstraint(fields=["project", "slug"], name="storyline_unique_slug")]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"
