from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from projects.json_fields import SchemaJSONField
from projects.models.base import EditVersioned
from projects.models.project import Project
from projects.models.storylines import Storyline
from projects.models.volumes import Volume
from projects.schemas import GATE_DECISIONS
from projects.text_stats import count_chars

GateDecision = models.TextChoices("GateDecision", [(d, d) for d in GATE_DECISIONS])


class Chapter(EditVersioned):
    """chapters/chapter-NNN.md: a committed chapter."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="chapters")
    # RESTRICT: a volume with chapters cannot be deleted alone, but deleting the project takes both.
    volume = models.ForeignKey(Volume, on_delete=models.RESTRICT, related_name="chapters")
    number = models.PositiveIntegerField()
    storyline = models.ForeignKey(Storyline, on_delete=models.SET_NULL, null=True, blank=True, related_name="chapters")
    title = models.CharField(max_length=200, blank=True)
    text = models.TextField()
    word_count = models.PositiveIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords(excluded_fields=["word_count"])

    class Meta:
        ordering = ["project", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="chapter_unique_number"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="chapter_number_positive"),
        ]

    def __str__(self) -> str:
        return f"chapter-{self.number:03d} {self.title}".strip()

    def clean(self) -> None:
        if self.volume_id and self.project_id and self.volume.project_id != self.project_id:
            raise ValidationError({"volume": "The volume belongs to another project."})
        if self.storyline_id and self.project_id and self.storyline.project_id != self.project_id:
            raise ValidationError({"storyline": "The storyline belongs to another project."})

    def save(self, *args, **kwargs) -> None:
        self.word_count = count_chars(self.text)  # derived, so it can never disagree with the text
        super().save(*args, **kwargs)


class ChapterSummary(models.Model):
    """summaries/chapter-NNN-summary.md (facts §10.10: ≤300 chars, fixed sections)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="chapter_summaries")
    chapter = models.OneToOneField(Chapter, on_delete=models.CASCADE, related_name="summary")
    storyline_slug = models.CharField(max_length=60, blank=True)
    text = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "chapter__number"]
        verbose_name_plural = "chapter summaries"

    def __str__(self) -> str:
        return f"summary of chapter {self.chapter_id}"


class MemoryLevel(models.TextChoices):
    """seed 002 and beyond: 5 chapter summaries → one archive; a closed volume's archives → one
    volume summary; volume summaries older than the last two → the book synopsis."""

    ARCHIVE = "archive"
    VOLUME = "volume"
    SYNOPSIS = "synopsis"


class ArchivedSummary(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="archived_summaries")
    level = models.CharField(max_length=10, choices=MemoryLevel)
    chapter_start = models.PositiveIntegerField()
    chapter_end = models.PositiveIntegerField()
    volume_number = models.PositiveIntegerField(null=True, blank=True)
    text = models.TextField()
    superseded = models.BooleanField(default=False, help_text="Folded into a higher level; kept for history.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "chapter_start", "level"]
        verbose_name_plural = "archived summaries"
        constraints = [
            # one row per level and range; a new synopsis covers a longer range from the same start
            models.UniqueConstraint(fields=["project", "level", "chapter_start", "chapter_end"],
                                    name="archive_unique_range"),
            models.CheckConstraint(condition=models.Q(chapter_end__gte=models.F("chapter_start")),
                                   name="archive_range_ordered"),
        ]
        indexes = [models.Index(fields=["project", "superseded", "level"], name="archive_live_idx")]

    def __str__(self) -> str:
        return f"{self.level} ch{self.chapter_start:03d}-ch{self.chapter_end:03d}"


class Evaluation(models.Model):
    """evaluations/chapter-NNN-eval.json (facts §10.11), flat or wrapped, plus columns for charts."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="evaluations")
    chapter = models.OneToOneField(Chapter, on_delete=models.CASCADE, related_name="evaluation")
    data = SchemaJSONField(schema_name="EVALUATION", editor="raw")
    overall = models.DecimalField(max_digits=4, decimal_places=2, null=True, blank=True)
    recommendation = models.CharField(max_length=10, blank=True)
    gate_decision = models.CharField(max_length=32, choices=GateDecision, blank=True)
    force_passed = models.BooleanField(default=False)
    revisions = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "chapter__number"]

    def __str__(self) -> str:
        return f"evaluation of chapter {self.chapter_id}: {self.overall}"


class ChapterLog(models.Model):
    """logs/chapter-NNN-log.json: the per-chapter pipeline log (seed 000 §9.2, plus cache tokens and cost)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="chapter_logs")
    chapter = models.OneToOneField(Chapter, on_delete=models.CASCADE, related_name="log")
    data = SchemaJSONField(schema_name="CHAPTER_LOG", editor="raw")
    total_duration_ms = models.PositiveBigIntegerField(null=True, blank=True)
    total_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    gate_decision = models.CharField(max_length=32, choices=GateDecision, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "chapter__number"]

    def __str__(self) -> str:
        return f"log of chapter {self.chapter_id}"


class AppearanceSource(models.TextChoices):
    CONTRACT = "contract"  # named by the chapter's contract (its cast)
    DELTA = "delta"  # an applied state op on characters.<slug>… in the chapter's delta
    LEDGER = "ledger"  # a fact of the facts ledger about the character (added by the ledger)


class CharacterAppearance(models.Model):
    """Where a character really was in the story: one row per committed chapter, character and
    source. The writer's recall of a returning character reads the latest of these, not the
    latest summary that happens to contain the name (#18). Goes with its chapter (cascade)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="character_appearances")
    chapter = models.ForeignKey(Chapter, on_delete=models.CASCADE, related_name="appearances")
    chapter_number = models.PositiveIntegerField()  # the chapter's number, for the index
    character_slug = models.CharField(max_length=60)
    source = models.CharField(max_length=10, choices=AppearanceSource)

    class Meta:
        ordering = ["project", "chapter_number", "character_slug"]
        constraints = [models.UniqueConstraint(fields=["chapter", "character_slug", "source"],
                                               name="appearance_unique")]
        indexes = [models.Index(fields=["project", "character_slug", "chapter_number"], name="appearance_last_idx")]

    def __str__(self) -> str:
        return f"{self.character_slug} in chapter {self.chapter_number} ({self.source})"
