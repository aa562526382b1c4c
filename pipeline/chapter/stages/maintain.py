"""After commit: memory consolidation when due (seed 002 and beyond), style drift every 5 chapters
(facts §13), then the run ends and, in a batch, the next chapter starts."""
from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Max

from pipeline.chapter import memory
from pipeline.chapter.memory import clip_at_sentence
from pipeline.nightly.batch_end import StopReason, batch_end, batch_goes_on, stop_reason_of
from pipeline.runtime.blackboard import Blackboard
from pipeline.chapter.context import ChapterContext
from pipeline.errors import PipelineBusy, PipelineNotReady
from pipeline.chapter.facts_recall import fact_line
from pipeline.jacquard.skein import PromptBlock
from pipeline.runtime.locks import claimed_run_lock
from pipeline.runtime.runs import chapter_run_create
from pipeline.nightly.spending import manual_budget_left
from pipeline.runtime.claims import Claim, StageOutcome, apply_outcome
from pipeline.chapter.stages.base import data_block, llm_call
from projects.ids import CHAPTERS_PER_VOLUME
from projects.models import ArchivedSummary, ChapterContract, Project
from projects.selectors import story_facts_open
from projects.services.memory import archived_summary_add, project_style_drift_set

log = logging.getLogger(__name__)

DRIFT_EVERY = 5  # facts §13: every 5 chapters (last_completed % 5 == 0)


def _volume_range(ctx: ChapterContext) -> tuple[int, int | None]:
    """The volume's planned chapters (first, last); last is None while the volume is not fully
    planned (an F0 seed, a partial plan): its end has not come, whatever is planned so far."""
    numbers = list(ctx.project.chapter_contracts.filter(volume__number=ctx.volume).values_list("chapter", flat=True))
    if not numbers:
        return ctx.chapter, None
    return min(numbers), (max(numbers) if max(numbers) >= ctx.volume * CHAPTERS_PER_VOLUME else None)


def _open_facts(ctx: ChapterContext, plan: memory.Consolidation) -> list[str]:
    """issue #18: the facts established in the consolidated chapters that are still open; the
    consolidator is told to keep them (the ledger keeps them too, but the memory should not lose them)."""
    facts = [f for f in story_facts_open(project=ctx.project, before_chapter=ctx.chapter + 1)
             if plan.chapter_start <= f.chapter <= plan.chapter_end]
    items = [{"id": f.fact_id, "kind": f.kind, "chapter": f.chapter, "characters": f.characters, "text": f.text}
             for f in facts]
    names = {c["slug"]: c["display_name"] for c in ctx.all_characters}
    return [fact_line(item, names) for item in items]


def _consolidate(claim: Claim, ctx: ChapterContext, plan: memory.Consolidation):
    # sized to what it covers (#18): the consolidator is told how long the level may be, and the
    # facts still open in these chapters, which it must keep
    slice_ = {"summaries": plan.texts, "level": plan.level, "max_chars": plan.max_chars,
              "chapters": [plan.chapter_start, plan.chapter_end], "open_facts": _open_facts(ctx, plan)}
    blocks = [PromptBlock("role", "system", "你负责压缩连载小说的记忆。", required=True, cacheable=True),
              data_block("summaries", "summary", "\n---\n".join(plan.texts), required=True)]
    call = llm_call(claim, ctx, stage="consolidate", slice_=slice_, blocks=blocks, template="consolidate.j2",
                    template_context=slice_, tags=["summary"], required_tags=["summary"],
                    # keyed by what is consolidated, not by position: after a crash the plans are
                    # recomputed, and a stored call must never answer for a different range
                    sequence=f"{plan.level}-{plan.chapter_start}-{plan.chapter_end}")
    archived_summary_add(project=ctx.project, level=plan.level, chapter_start=plan.chapter_start,
                         chapter_end=plan.chapter_end, text=clip_at_sentence(call.texts["summary"], plan.max_chars),
                         volume_number=plan.volume_number, supersedes=plan.supersedes)
    return call


def _style_drift(ctx: ChapterContext) -> None:
    from pipeline.chapter.style_drift import detect, drift_baseline
    from projects.style_targets import statistical_targets

    if ctx.chapter % DRIFT_EVERY:
        return
    recent = list(ctx.project.chapters.filter(number__gt=ctx.chapter - DRIFT_EVERY, number__lte=ctx.chapter)
                  .order_by("number").values_list("number", "text"))
    # a voice sample's numbers, when there is one, are what the chapters should read like (#17 §3)
    baseline = drift_baseline(ctx.style_profile, statistical_targets(ctx.project))
    updated = detect(chapters=recent, profile=baseline, current=ctx.project.style_drift, as_of=ctx.chapter)
    if updated != ctx.project.style_drift:
        project_style_drift_set(project=ctx.project, style_drift=updated)


def execute(claim: Claim, ctx: ChapterContext, board: Blackboard, on_text=None) -> StageOutcome:
    """Each consolidation is stored as soon as it is made (idempotent per range), so a crash here
    repeats at most the call in progress."""
    calls = []
    first, last = _volume_range(ctx)
    # Planned one after the other: at a volume's end the volume summary must see (and supersede)
    # the archive made just before it, or that archive stays live in every later prompt.
    plans = [lambda: memory.archive_due(ctx.project, ctx.chapter)]
    if ctx.chapter == last:
        plans.append(lambda: memory.volume_due(ctx.project, ctx.volume, first, last))
    for due in plans:
        if (plan := due()) is not None:
            calls.append(_consolidate(claim, ctx, plan))
    if ctx.chapter == last and (synopsis := memory.synopsis_due(ctx.project)) is not None:
        calls.append(_consolidate(claim, ctx, synopsis))
    _style_drift(ctx)
    board.as_("orchestrator").update_step_status("maintain", "completed")
    return StageOutcome(board.to_dict(), None, calls=calls)


def maintenance_due(*, project_id: int, chapter: int, volume: int) -> bool:
    """Whether ``execute`` has anything to do once ``chapter`` is committed: style drift every 5
    chapters, an archive due (seed 002), or the volume's end (its summary, maybe the synopsis).
    The commit asks, and finishes the run itself when nothing is due (most chapters): a stage
    hop for nothing costs as much as a small stage."""
    if chapter % DRIFT_EVERY == 0:
        return True
    archived_until = ArchivedSummary.objects.filter(project_id=project_id).aggregate(end=Max("chapter_end"))["end"]
    if chapter - (archived_until or 0) >= memory.ARCHIVE_TRIGGER:
        return True
    if chapter < volume * CHAPTERS_PER_VOLUME:  # a volume ends at V * 30 (facts §1), not at a partial plan's end
        return False
    later = ChapterContract.objects.filter(project_id=project_id, volume__number=volume, chapter__gt=chapter)
    return not later.exists()


@transaction.atomic(durable=True)
def maintain_finish(*, claim: Claim, outcome: StageOutcome) -> int | None:
    """End the run; in a batch, start the next chapter in the same transaction. Returns its run id."""
    _project, run = claimed_run_lock(claim, with_blackboard=False)
    apply_outcome(run, claim, outcome)
    return batch_continue(run, outcome.blackboard)


def batch_continue(run, blackboard: dict, *, project: Project | None = None) -> int | None:
    """After a chapter run finished with ``blackboard``: in a batch, start the next chapter (same
    transaction; the caller holds the project lock, and passes the project if it has it as the row
    now is). Returns the new run's id, or None when the batch stops."""
    remaining = Blackboard(blackboard).as_("slicer").read_meta("batch_remaining") or 0
    if remaining <= 0:
        batch_end(run, reason=StopReason.DONE)  # (nothing to end outside a nightly batch)
        return None
    if not batch_goes_on(run):
        return None
    if project is None:  # the fields chapter_run_create reads
        project = Project.objects.only("slug", "orchestrator_state", "last_completed_chapter",
                                       "manual_cost_cap_usd").get(pk=run.project_id)
    if run.batch_id is None and manual_budget_left(project) <= 0:
        log.info("project %s: the batch started by hand stops after chapter %s, today's budget is spent",
                 run.project_id, run.chapter)
        return None
    try:
        # It refuses (raises) before it writes anything, so no savepoint is needed around it. The
        # run that just finished was the project's one active run (pipelinerun_one_active_per_project),
        # so no other can be active: no need to look.
        return chapter_run_create(project, user=run.created_by if run.created_by_id else None,
                                   batch_remaining=remaining - 1, batch_id=run.batch_id, check_busy=False).pk
    except (PipelineBusy, PipelineNotReady) as exc:
        # the end of the planned volume, or someone else started something: the batch stops
        batch_end(run, reason=stop_reason_of(exc), detail=exc.message)
        return None
