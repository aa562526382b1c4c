from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from projects.json_fields import SchemaJSONField
from projects.json_validation import json_issues
from projects.platforms.profiles import (
    genre_weight_profiles_problems,
    golden_chapter_gates_problems,
    platform_profile_problems,
)
from projects.text_stats import count_chars
from projects.vocabulary import OrchestratorState, PipelineStage, QuickstartPhase, VolumePipelineStage, model_choices

BRIEF_MAX_CHARS = 1000  # seed 000 §9.1: brief.md, ≤1000 字


def validate_brief_length(value: str) -> None:
    """≤1000 字: counted like the platforms count, without whitespace (the CLI's own brief
    template is 1051 characters but 948 字, and must import)."""
    size = count_chars(value)
    if size > BRIEF_MAX_CHARS:
        raise ValidationError(f"The brief has {size} characters (字, whitespace not counted); at most "
                              f"{BRIEF_MAX_CHARS}.", code="brief_too_long")


class TargetPlatform(models.TextChoices):  # issue #17 §1: where the novel is published (not promotion sites)
    QIDIAN = "qidian", _("Qidian")
    FANQIE = "fanqie", _("Fanqie")
    JINJIANG = "jinjiang", _("Jinjiang")
    GENERAL = "general", _("General (no particular site)")


class GenreDriveType(models.TextChoices):  # facts §10.16; shifts dormancy thresholds (§12)
    PLOT = "plot"
    CHARACTER = "character"
    SUSPENSE = "suspense"
    SLICE_OF_LIFE = "slice_of_life"


# The fields of .checkpoint.json, in the seed's order. The pipeline writes them with
# QuerySet.update() so that a checkpoint move is not recorded as a human edit in the history.
CHECKPOINT_FIELDS = (
    "last_completed_chapter",
    "current_volume",
    "orchestrator_state",
    "pipeline_stage",
    "volume_pipeline_stage",
    "quickstart_phase",
    "inflight_chapter",
    "revision_count",
    "hook_fix_count",
    "title_fix_count",
    "last_committed_volume",
    "pending_actions",
    "last_checkpoint_time",
)


class Project(models.Model):
    """One novel. Story settings people edit, plus the checkpoint the pipeline moves."""

    slug = models.SlugField(max_length=60, unique=True)
    title = models.CharField(max_length=200)
    brief = models.TextField(blank=True, validators=[validate_brief_length])
    genre = models.CharField(max_length=40, blank=True, help_text=_("e.g. xuanhuan, dushi, scifi"))
    target_platform = models.CharField(max_length=40, choices=TargetPlatform, blank=True)
    genre_drive_type = models.CharField(max_length=20, choices=GenreDriveType, blank=True)
    # The platform's files (facts §2; projects/platforms): null means the built-in data of target_platform.
    platform_profile = SchemaJSONField(schema_name="PLATFORM_PROFILE", null=True, blank=True, editor="raw")
    genre_weight_profiles = SchemaJSONField(schema_name="GENRE_WEIGHT_PROFILES", null=True, blank=True, editor="raw")
    golden_chapter_gates = SchemaJSONField(schema_name="GOLDEN_CHAPTER_GATES", null=True, blank=True, editor="raw")
    platform_writing_guide = models.TextField(blank=True)

    style_profile = SchemaJSONField(schema_name="STYLE_PROFILE", default=dict, blank=True)
    ai_blacklist = SchemaJSONField(schema_name="AI_BLACKLIST", default=dict, blank=True)
    style_drift = SchemaJSONField(schema_name="STYLE_DRIFT", null=True, blank=True)
    relationships = SchemaJSONField(schema_name="OPAQUE_JSON", default=dict, blank=True, editor="raw")
    storyline_spec = SchemaJSONField(schema_name="STORYLINE_SPEC", default=dict, blank=True)
    storylines_meta = SchemaJSONField(schema_name="STORYLINES_META", default=dict, blank=True)

    autopilot_enabled = models.BooleanField(default=False)
    autopilot_chapters_per_night = models.PositiveSmallIntegerField(default=3)
    autopilot_cost_cap_usd = models.DecimalField(
        max_digits=8, decimal_places=2, default=Decimal("5.00"), validators=[MinValueValidator(Decimal("0"))]
    )
    manual_cost_cap_usd = models.DecimalField(
        max_digits=8, decimal_places=2, default=Decimal("20.00"), validators=[MinValueValidator(Decimal("0"))],
        help_text="What runs started by hand may spend on LLM calls per day (USD); nightly batches have their own cap.",
    )
    gate_settings = SchemaJSONField(schema_name="GATE_SETTINGS", default=dict, blank=True)
    # the craft lints' thresholds, word range and title policy over the platform's (issue #17 §2)
    lint_settings = SchemaJSONField(schema_name="LINT_SETTINGS", default=dict, blank=True)
    stage_models = SchemaJSONField(schema_name="STAGE_MODELS", default=dict, blank=True)

    # --- checkpoint (.checkpoint.json, facts §3) ---
    last_completed_chapter = models.PositiveIntegerField(default=0)
    current_volume = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    orchestrator_state = models.CharField(max_length=20, choices=model_choices(OrchestratorState),
                                          default=OrchestratorState.INIT.value)
    pipeline_stage = models.CharField(max_length=12, choices=model_choices(PipelineStage), null=True, blank=True)
    volume_pipeline_stage = models.CharField(max_length=10, choices=model_choices(VolumePipelineStage), null=True,
                                             blank=True)
    quickstart_phase = models.CharField(max_length=12, choices=model_choices(QuickstartPhase), null=True, blank=True)
    inflight_chapter = models.PositiveIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    revision_count = models.PositiveSmallIntegerField(default=0)
    hook_fix_count = models.PositiveSmallIntegerField(default=0)
    title_fix_count = models.PositiveSmallIntegerField(default=0)
    last_committed_volume = models.PositiveIntegerField(default=0)
    pending_actions = SchemaJSONField(schema_name="PENDING_ACTIONS", default=list, blank=True, editor="raw")
    last_checkpoint_time = models.DateTimeField(null=True, blank=True)
    checkpoint_extra = SchemaJSONField(schema_name="CHECKPOINT_EXTRA", default=dict, blank=True, editor="raw")

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=[*CHECKPOINT_FIELDS, "checkpoint_extra", "updated_at"])

    class Meta:
        ordering = ["title", "pk"]
        indexes = [models.Index(fields=["autopilot_enabled"], name="project_autopilot_idx")]

    def __str__(self) -> str:
        return f"{self.title} ({self.slug})"

    def clean(self) -> None:
        """The platform files' rules a schema cannot say (ranges in order, weights that normalise)."""
        super().clean()
        checks = (("platform_profile", platform_profile_problems), ("genre_weight_profiles",
                  genre_weight_profiles_problems), ("golden_chapter_gates", golden_chapter_gates_problems))
        errors = {}
        for name, problems_of in checks:
            value = getattr(self, name)
            schema = self._meta.get_field(name).schema_name
            if value is None or json_issues(schema, value):  # the field's own validation reports those
                continue
            problems = problems_of(value)
            if problems:
                errors[name] = problems
        if errors:
            raise ValidationError(errors)


class Role(models.TextChoices):
    OWNER = "owner", _("Owner")
    EDITOR = "editor", _("Editor")
    REVIEWER = "reviewer", _("Reviewer")
    VIEWER = "viewer", _("Viewer")


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="novel_memberships")
    role = models.CharField(max_length=10, choices=Role, default=Role.VIEWER)
    morning_summary_email = models.BooleanField(
        default=False, help_text=_("E-mail me the morning summary of the project's nightly autopilot batch."))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user"]
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="membership_unique_user")]
        indexes = [models.Index(fields=["user", "role"], name="membership_user_role_idx")]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.project.slug}"


class ExtraFile(models.Model):
    """A file of an imported tree that Novelsite does not model (platform profiles, reports …),
    kept verbatim so that an export gives it back."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="extra_files")
    path = models.CharField(max_length=500)
    content = models.TextField(blank=True)

    class Meta:
        ordering = ["project", "path"]
        constraints = [models.UniqueConstraint(fields=["project", "path"], name="extrafile_unique_path")]

    def __str__(self) -> str:
        return self.path


class ImportedFile(models.Model):
    """A JSON file of an imported tree as it was written, so that an export of unchanged data gives
    the same bytes back and an export of changed data keeps its order (filetree/fidelity.py)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="imported_files")
    path = models.CharField(max_length=500)
    content = models.TextField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "path"], name="importedfile_unique_path")]

    def __str__(self) -> str:
        return self.path
