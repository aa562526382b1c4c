from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from projects.json_fields import SchemaJSONField
from projects.models.base import EditVersioned
from projects.models.project import Project


class VolumeStatus(models.TextChoices):
    WRITING = "writing"  # plan committed, chapters being written
    REVIEWING = "reviewing"
    CLOSED = "closed"


class Volume(EditVersioned):
    """volumes/vol-VV/: the committed plan of one volume and its review (facts §6, §8).

    A plan waiting for approval lives on its PipelineRun's blackboard, not here.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="volumes")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200, blank=True)
    outline = models.TextField(blank=True, help_text="outline.md, with one '### 第 N 章' block per chapter.")
    storyline_schedule = SchemaJSONField(schema_name="STORYLINE_SCHEDULE", default=dict, blank=True)
    # three accepted shapes (facts §15.2): a generated editor cannot offer a top-level choice, so raw JSON
    foreshadowing_plan = SchemaJSONField(schema_name="FORESHADOWING_PLAN", default=dict, blank=True, editor="raw")
    new_characters = SchemaJSONField(schema_name="NEW_CHARACTERS", default=list, blank=True)
    review = models.TextField(blank=True, help_text="review.md")
    status = models.CharField(max_length=10, choices=VolumeStatus, default=VolumeStatus.WRITING)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="volume_unique_number"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="volume_number_positive"),
        ]

    def __str__(self) -> str:
        return f"vol-{self.number:02d}"


class ChapterContract(EditVersioned):
    """volumes/vol-VV/chapter-contracts/chapter-NNN.json: the L3 contract of one chapter (facts §10.7)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="chapter_contracts")
    volume = models.ForeignKey(Volume, on_delete=models.CASCADE, related_name="contracts")
    chapter = models.PositiveIntegerField()
    data = SchemaJSONField(schema_name="CHAPTER_CONTRACT", default=dict)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "chapter"]
        constraints = [models.UniqueConstraint(fields=["project", "chapter"], name="contract_unique_chapter")]

    def __str__(self) -> str:
        return f"chapter-{self.chapter:03d} contract"

    def clean(self) -> None:
        if isinstance(self.data, dict) and self.data.get("chapter") not in (None, self.chapter):
            raise ValidationError({"data": f"data: $.chapter is {self.data.get('chapter')}, expected {self.chapter}"})
        if self.volume_id and self.project_id and self.volume.project_id != self.project_id:
            raise ValidationError({"volume": "The volume belongs to another project."})
