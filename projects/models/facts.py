from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, MinValueValidator
from django.db import models
from simple_history.models import HistoricalRecords

from projects.ids import slug_validator
from projects.json_fields import SchemaJSONField
from projects.models.base import EditVersioned
from projects.models.project import Project
from projects.schemas import STORY_FACT_KINDS, STORY_FACT_STATUSES, STORY_FACT_TEXT_MAX

FactKind = models.TextChoices("FactKind", [(k, k) for k in STORY_FACT_KINDS])
FactStatus = models.TextChoices("FactStatus", [(s, s) for s in STORY_FACT_STATUSES])


class FactOrigin(models.TextChoices):
    PIPELINE = "pipeline"  # stored by a chapter's commit; taken back when that chapter is rolled back
    PERSON = "person"  # added by someone in the admin, the web pages or an import


class StoryFact(EditVersioned):
    """One lasting fact of the story (issue #18's facts ledger): a promise or oath, a debt, an
    injury, a death, a departure, a revealed identity or secret. Established in ``chapter``; it
    binds ``characters`` (slugs) and ``storyline``, and stays open until a later chapter fulfils
    or cancels it (``closed_chapter``). Exported as novelsite/facts.json."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="facts")
    fact_id = models.CharField("id", max_length=60, validators=[slug_validator],
                               help_text="A stable slug id, e.g. fact-007.")
    kind = models.CharField(max_length=10, choices=FactKind)
    text = models.TextField(validators=[MaxLengthValidator(STORY_FACT_TEXT_MAX)])
    chapter = models.PositiveIntegerField(validators=[MinValueValidator(1)], help_text="Chapter that established it.")
    characters = SchemaJSONField(schema_name="STORY_FACT_CHARACTERS", default=list, blank=True)
    storyline = models.CharField(max_length=60, blank=True)
    foreshadowing = SchemaJSONField(schema_name="STRING_LIST", default=list, blank=True)
    status = models.CharField(max_length=10, choices=FactStatus, default="open")
    closed_chapter = models.PositiveIntegerField(null=True, blank=True)
    closing_note = models.TextField(blank=True, validators=[MaxLengthValidator(STORY_FACT_TEXT_MAX)])
    origin = models.CharField(max_length=8, choices=FactOrigin, default=FactOrigin.PERSON, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "chapter", "fact_id"]
        verbose_name = "story fact"
        constraints = [
            models.UniqueConstraint(fields=["project", "fact_id"], name="storyfact_unique_id"),
            models.CheckConstraint(
                condition=(models.Q(status="open", closed_chapter__isnull=True)
                           | (~models.Q(status="open") & models.Q(closed_chapter__isnull=False))),
                name="storyfact_closed_has_chapter"),
        ]
        indexes = [models.Index(fields=["project", "status", "chapter"], name="storyfact_status_idx")]

    def __str__(self) -> str:
        return f"{self.fact_id} ({self.kind}, {self.status})"

    def clean(self) -> None:
        super().clean()
        if self.status == "open":
            if self.closed_chapter is not None:
                raise ValidationError({"closed_chapter": "An open fact has no closing chapter."})
        elif self.closed_chapter is None:
            raise ValidationError({"closed_chapter": "Say in which chapter the fact was fulfilled or cancelled."})
        elif self.chapter is not None and self.closed_chapter < self.chapter:
            raise ValidationError({"closed_chapter": "A fact cannot close before the chapter that established it."})
