from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from projects.json_fields import SchemaJSONField
from projects.models.project import Project


class StoryState(models.Model):
    """state/current-state.json. ``state_version`` mirrors ``data["state_version"]`` as a column so
    the version check and the changelog join need no JSON lookups."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="story_state")
    schema_version = models.PositiveSmallIntegerField(default=1)
    state_version = models.PositiveIntegerField(default=0)
    data = SchemaJSONField(schema_name="STORY_STATE", editor="raw")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project"]

    def __str__(self) -> str:
        return f"state v{self.state_version} of {self.project_id}"

    def clean(self) -> None:
        if isinstance(self.data, dict):
            if self.data.get("state_version") != self.state_version:
                raise ValidationError({"data": "data: $.state_version must equal the state_version column"})
            if self.data.get("schema_version") != self.schema_version:
                raise ValidationError({"data": "data: $.schema_version must equal the schema_version column"})


class ChangeSource(models.TextChoices):
    PIPELINE = "pipeline"
    HUMAN = "human"
    IMPORT = "import"
    ROLLBACK = "rollback"


class StateChange(models.Model):
    """One applied delta: one line of state/changelog.jsonl. Unique per resulting version, so two
    writers can never both apply a patch on the same base."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="state_changes")
    state_version = models.PositiveIntegerField(help_text="The state version this delta produced.")
    base_state_version = models.PositiveIntegerField()
    chapter = models.PositiveIntegerField()
    storyline_slug = models.CharField(max_length=60, blank=True)
    delta = SchemaJSONField(schema_name="STATE_DELTA", editor="raw")
    source = models.CharField(max_length=10, choices=ChangeSource, default=ChangeSource.PIPELINE)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "state_version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "state_version"], name="statechange_unique_version"),
            models.CheckConstraint(
                condition=models.Q(state_version=models.F("base_state_version") + 1), name="statechange_version_step"
            ),
        ]
        indexes = [models.Index(fields=["project", "chapter"], name="statechange_chapter_idx")]

    def __str__(self) -> str:
        return f"v{self.base_state_version}→v{self.state_version} (chapter {self.chapter})"


class VolumeStateSnapshot(models.Model):
    """state/history/vol-VV-final-state.json."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="state_snapshots")
    volume_number = models.PositiveIntegerField()
    data = SchemaJSONField(schema_name="STORY_STATE", editor="raw")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "volume_number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "volume_number"], name="snapshot_unique_volume")
        ]

    def __str__(self) -> str:
        return f"vol-{self.volume_number:02d}-final-state"
