from django.db import models
from simple_history.models import HistoricalRecords

from projects.ids import file_stem_validator, world_rule_id_validator
from projects.json_fields import SchemaJSONField
from projects.models.base import CanonStatus, EditVersioned
from projects.models.project import Project


class ResearchNote(EditVersioned):
    """research/<name>.md: background material WorldBuilder and CharacterWeaver read."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="research_notes")
    name = models.CharField(max_length=100, validators=[file_stem_validator])
    content = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="researchnote_unique_name")]

    def __str__(self) -> str:
        return f"research/{self.name}.md"


class WorldDoc(EditVersioned):
    """world/<name>.md: geography, history, rules and any other world document."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="world_docs")
    name = models.CharField(max_length=100, validators=[file_stem_validator])
    content = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="worlddoc_unique_name")]

    def __str__(self) -> str:
        return f"world/{self.name}.md"


class ConstraintType(models.TextChoices):
    HARD = "hard"
    SOFT = "soft"


class WorldRule(EditVersioned):
    """One L1 rule of world/rules.json (facts §10.1)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="world_rules")
    rule_id = models.CharField(max_length=20, validators=[world_rule_id_validator])
    category = models.CharField(max_length=60, blank=True)
    rule = models.TextField()
    constraint_type = models.CharField(max_length=4, choices=ConstraintType, default=ConstraintType.HARD)
    canon_status = models.CharField(max_length=12, choices=CanonStatus, default=CanonStatus.ESTABLISHED)
    exceptions = SchemaJSONField(schema_name="RULE_EXCEPTIONS", default=list, blank=True, editor="raw")
    introduced_chapter = models.PositiveIntegerField(null=True, blank=True)
    last_verified = models.PositiveIntegerField(null=True, blank=True)
    keywords = SchemaJSONField(
        schema_name="STRING_LIST", default=list, blank=True, help_text="Words whose presence breaks a hard rule."
    )
    extra = SchemaJSONField(schema_name="EXTRA_KEYS", default=dict, blank=True, editor="raw")
    position = models.PositiveIntegerField(default=0)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "position", "rule_id"]
        constraints = [models.UniqueConstraint(fields=["project", "rule_id"], name="worldrule_unique_id")]

    def __str__(self) -> str:
        return f"{self.rule_id}: {self.rule[:40]}"
