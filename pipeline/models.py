"""The pipeline's own runtime records. Story data lives in ``projects``; these rows say what the
machine did, with what, and what it cost. ``pipeline`` imports ``projects``, never the reverse."""
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from pipeline.prompts import template_names
from pipeline.prompts.validation import prompt_template_errors
from projects.json_fields import SchemaJSONField
from projects.models import Project
from projects.models.base import EditVersioned


def empty_blackboard() -> dict:
    return {"meta": {}, "content": {}, "control": {}}


class RunKind(models.TextChoices):
    CHAPTER = "chapter"
    QUICKSTART = "quickstart"
    PLAN = "plan"
    REVIEW = "review"
    REWRITE = "rewrite"
    PROMOTION = "promotion"
    STYLE = "style"  # the style analyst reading a voice sample (issue #17 §3)


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"  # stopped at a NOVEL_ASK gate or a plan approval
    ERROR = "error"  # retries spent: the project is in ERROR_RETRY until someone retries
    DONE = "done"
    CANCELLED = "cancelled"


class StageRunStatus(models.TextChoices):
    """One attempt at one stage (``StageRun``)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ABANDONED = "abandoned"  # its worker was lost and the stage was claimed again


# an attempt that ended: the next execution of the stage is a new attempt
FINISHED_STAGE_RUN_STATUSES = (StageRunStatus.SUCCEEDED, StageRunStatus.FAILED)

ACTIVE_RUN_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING, RunStatus.ERROR)
# Runs beside the book: they never move its checkpoint, and a failure does not stop it.
SIDE_RUN_KINDS = (RunKind.PROMOTION, RunKind.STYLE)


class PipelineRun(models.Model):
    """One chapter, plan, quick-start, review or promotion run, with its blackboard (seed 001) as
    staging: nothing reaches the story tables before commit. The lease says which worker may
    advance it and until when; an expired lease lets the reconciler resume the run."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    kind = models.CharField(max_length=12, choices=RunKind)
    chapter = models.PositiveIntegerField(null=True, blank=True)
    volume_number = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=RunStatus, default=RunStatus.QUEUED)
    stage = models.CharField(max_length=32, blank=True, help_text="The step this run is at.")
    blackboard = SchemaJSONField(schema_name="BLACKBOARD", default=empty_blackboard, editor="raw")
    # A chapter run's story context as its draft read it (pipeline.chapter.context.context_snapshot): the
    # later stages restore it instead of re-reading the story. Empty: not built yet, or cleared.
    context = models.JSONField(default=dict, blank=True, editable=False)
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    batch = models.ForeignKey("BatchRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs",
                              help_text="The nightly batch this run belongs to, if any.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # One project advances one thing at a time; promotion posts and style analyses may run beside it.
            models.UniqueConstraint(
                fields=["project"],
                condition=models.Q(status__in=ACTIVE_RUN_STATUSES) & ~models.Q(kind__in=SIDE_RUN_KINDS),
                name="pipelinerun_one_active_per_project",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "lease_expires_at"], name="run_lease_idx"),
            models.Index(fields=["project", "kind", "chapter"], name="run_chapter_idx"),
        ]

    def __str__(self) -> str:
        target = f" ch{self.chapter}" if self.chapter else ""
        return f"{self.kind}{target} [{self.status}/{self.stage or '-'}]"


class StageRun(models.Model):
    """One attempt at one stage of a run: model, timing, tokens, cost and the prompt receipt."""

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="stage_runs")
    stage = models.CharField(max_length=32)
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=StageRunStatus, default=StageRunStatus.RUNNING)
    backend = models.CharField(max_length=20, blank=True)
    model = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveBigIntegerField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_creation_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0,
                                   help_text="The amount in ``currency`` (USD unless the provider prices otherwise).")
    currency = models.CharField(max_length=3, default="USD")
    cost_known = models.BooleanField(default=True, help_text="False: a model without a price; the cost is unknown.")
    receipt = SchemaJSONField(schema_name="PROMPT_RECEIPT", default=dict, blank=True, editor="raw")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["run", "started_at", "pk"]
        indexes = [models.Index(fields=["run", "stage"], name="stagerun_stage_idx")]

    def __str__(self) -> str:
        return f"{self.stage}#{self.attempt} ({self.status})"


class LLMCall(models.Model):
    """A finished LLM call and its output, keyed so that a redelivered task finds it and never
    pays twice (DESIGN §4)."""

    run = models.ForeignKey(PipelineRun, on_delete=models.CASCADE, related_name="llm_calls")
    stage_run = models.ForeignKey(StageRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="llm_calls")
    call_key = models.CharField(max_length=200, unique=True, help_text="run:stage:attempt:sequence")
    backend = models.CharField(max_length=20)
    model = models.CharField(max_length=100)
    request_sha256 = models.CharField(max_length=64)
    output_text = models.TextField()
    # the request as sent: {"system": [{text, cache_breakpoint}], "messages": [{role, blocks: [...]}]}
    # (pipeline.llm.call_store.prompt_record); the run page shows it to members (issue #17 §4)
    prompt = SchemaJSONField(schema_name="OPAQUE_JSON", default=dict, blank=True, editor="raw")
    stop_reason = models.CharField(max_length=40, blank=True)
    usage = SchemaJSONField(schema_name="LLM_USAGE", default=dict, blank=True, editor="raw")
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0,
                                   help_text="The amount in ``currency`` (USD unless the provider prices otherwise).")
    currency = models.CharField(max_length=3, default="USD")
    cost_known = models.BooleanField(default=True, help_text="False: a model without a price; the cost is unknown.")
    duration_ms = models.PositiveBigIntegerField(default=0)
    request_id = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "created_at", "pk"]
        verbose_name = "LLM call"

    def __str__(self) -> str:
        return self.call_key


class GateStatus(models.TextChoices):
    OPEN = "open"
    ANSWERED = "answered"
    CANCELLED = "cancelled"


class GateQuestion(models.Model):
    """A NOVEL_ASK QuestionSpec (seed 003) a step stopped at."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="gate_questions")
    run = models.ForeignKey(PipelineRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="questions")
    step = models.CharField(max_length=60, help_text="Step id, e.g. chapter:048:review or volume:validate.")
    topic = models.CharField(max_length=200)
    spec = SchemaJSONField(schema_name="QUESTION_SPEC", editor="raw")
    answer_path = models.CharField(max_length=300)
    status = models.CharField(max_length=10, choices=GateStatus, default=GateStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-created_at", "-pk"]
        indexes = [models.Index(fields=["project", "status"], name="gate_open_idx")]

    def __str__(self) -> str:
        return f"{self.step}: {self.topic} ({self.status})"


class GateAnswer(models.Model):
    """The AnswerSpec for a question, exported at its ``answer_path``."""

    question = models.OneToOneField(GateQuestion, on_delete=models.CASCADE, related_name="answer")
    answer = SchemaJSONField(schema_name="ANSWER_SPEC", editor="raw")
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    answered_at = models.DateTimeField()

    class Meta:
        ordering = ["-answered_at", "-pk"]

    def __str__(self) -> str:
        return f"answer to {self.question_id}"


class PromptTemplate(EditVersioned):
    """A project's override of one default template in ``pipeline/prompts/`` (validated on save)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prompt_templates")
    name = models.CharField(max_length=100, choices=[(n, n) for n in template_names()],
                            help_text="The default template it replaces, e.g. draft.j2.")
    source = models.TextField()
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="prompttemplate_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.project.slug})"

    def clean(self) -> None:
        # Validated on every save path (admin, API, services): it must parse, render against the
        # default's sample context and stay inside the sandbox.
        errors = prompt_template_errors(self.name, self.source)
        if errors:
            raise ValidationError({"source" if self.name in template_names() else "name": errors})


class StateTransition(models.Model):
    """One move of a project's orchestrator state (facts §4): from where to where, why, and who or
    what caused it (a user, or the run whose step moved it)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="state_transitions")
    from_state = models.CharField(max_length=20)
    to_state = models.CharField(max_length=20)
    reason = models.CharField(max_length=300, blank=True)
    run = models.ForeignKey(PipelineRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "created_at", "pk"]
        indexes = [models.Index(fields=["project", "created_at"], name="transition_project_idx")]

    def __str__(self) -> str:
        return f"{self.from_state} → {self.to_state}"


class BatchStatus(models.TextChoices):
    RUNNING = "running"
    DONE = "done"  # wrote what it was asked to
    STOPPED = "stopped"  # stopped early: a gate, an error, the end of the plan or the cost cap (see stop_reason)
    SKIPPED = "skipped"  # nothing to write (not writable, busy)


class BatchRun(models.Model):
    """One night's autopilot batch of one project: unique per project and date, so a beat that
    fires twice (or a restarted scheduler) never writes the night's chapters twice."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="batches")
    date = models.DateField(help_text="The night it belongs to, in TIME_ZONE.")
    status = models.CharField(max_length=10, choices=BatchStatus, default=BatchStatus.RUNNING)
    chapters_requested = models.PositiveSmallIntegerField(default=0)
    first_chapter = models.PositiveIntegerField(null=True, blank=True)
    chapters_written = models.PositiveSmallIntegerField(default=0)
    cost_cap_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    stop_reason = models.CharField(max_length=200, blank=True)
    summary = models.JSONField(default=dict, blank=True, help_text="The morning summary: chapters, cost, gates.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "-date"]
        constraints = [models.UniqueConstraint(fields=["project", "date"], name="batchrun_unique_night")]

    def __str__(self) -> str:
        return f"{self.project_id} {self.date} ({self.status})"


class SensitiveWordList(models.Model):
    """A project's own sensitive words for promotion posts (seed 001's sensitive filter), each with
    the word that replaces it ("" drops it); added to the shipped default list, overriding it."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="sensitive_words")
    words = models.JSONField(default=dict, blank=True, help_text='{"word": "replacement", …}')
    updated_at = models.DateTimeField(auto_now=True)

    def clean(self) -> None:
        if not isinstance(self.words, dict) or not all(
                isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in self.words.items()):
            raise ValidationError({"words": 'an object of non-empty words to their replacements, e.g. {"最": ""}'})

    def __str__(self) -> str:
        return f"sensitive words of {self.project_id}"
