from django.db import models
from simple_history.models import HistoricalRecords

from projects.ids import slug_validator
from projects.json_fields import SchemaJSONField
from projects.models.base import CanonStatus, EditVersioned
from projects.models.project import Project


class CharacterStatus(models.TextChoices):  # characters/active/ or characters/retired/
    ACTIVE = "active"
    RETIRED = "retired"


class Character(EditVersioned):
    """characters/<status>/<slug>.md (profile) + <slug>.json (display_name, contracts[], facts §10.2)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="characters")
    slug = models.CharField(max_length=60, validators=[slug_validator])
    display_name = models.CharField(max_length=100)
    status = models.CharField(max_length=8, choices=CharacterStatus, default=CharacterStatus.ACTIVE)
    canon_status = models.CharField(max_length=12, choices=CanonStatus, default=CanonStatus.ESTABLISHED)
    profile = models.TextField(blank=True, help_text="Narrative profile (Markdown).")
    contracts = SchemaJSONField(schema_name="CHARACTER_CONTRACTS", default=list, blank=True)
    aliases = SchemaJSONField(
        schema_name="CHARACTER_ALIASES", default=list, blank=True,
        help_text="Other names and titles the text calls this character by (the checks read them).",
    )
    extra = SchemaJSONField(schema_name="EXTRA_KEYS", default=dict, blank=True, editor="raw")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "slug"]
        constraints = [models.UniqueConstraint(fields=["project", "slug"], name="character_unique_slug")]
        indexes = [models.Index(fields=["project", "status"], name="character_status_idx")]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.slug})"
