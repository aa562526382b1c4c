"""Which code runs each stage: one table keyed by (run kind, stage name).

A chapter run's stages are modules of ``pipeline/chapter/stages/`` (their ``execute`` reads the chapter's
context); every other kind of run lists its steps in a table of its own module. Adding a stage is
one entry here (or in that table); the runner (``pipeline/runtime/runner.py``) has no special cases.
"""
from __future__ import annotations

from pipeline.models import RunKind
from pipeline.promotion.run import PROMOTION_STEPS
from pipeline.runtime.stage import CHAPTER, Stage
from pipeline.chapter.stages import commit, draft, judge, maintain, refine, summarize
from pipeline.book.plan import PLAN_STEPS
from pipeline.book.quickstart import QUICKSTART_STEPS
from pipeline.book.review import REVIEW_STEPS
from pipeline.book.revision import REVISION_STEPS
from pipeline.book.voice import STYLE_STEPS
from projects.errors import NovelsiteError


class UnknownStage(NovelsiteError):
    """A task names a stage its run's kind does not have (a message from an older version, or a bug)."""

    code = "unknown_stage"


def _chapter_stages() -> dict[str, Stage]:
    stages = {name: Stage(module.execute, reads=CHAPTER)
              for name, module in (("draft", draft), ("summarize", summarize), ("refine", refine), ("judge", judge))}
    stages["commit"] = Stage(in_one_transaction=commit.chapter_commit)  # no model call: claim and commit at once
    # starts a batch's next chapter
    stages["maintain"] = Stage(maintain.execute, maintain.maintain_finish, reads=CHAPTER)
    return stages


STAGES: dict[tuple[str, str], Stage] = {
    (kind, name): stage
    for kind, table in (
        (RunKind.CHAPTER, _chapter_stages()),
        (RunKind.REWRITE, REVISION_STEPS),
        (RunKind.QUICKSTART, QUICKSTART_STEPS),
        (RunKind.PLAN, PLAN_STEPS),
        (RunKind.REVIEW, REVIEW_STEPS),
        (RunKind.PROMOTION, PROMOTION_STEPS),
        (RunKind.STYLE, STYLE_STEPS),
    )
    for name, stage in table.items()
}


def stage_for(kind: str, name: str) -> Stage:
    try:
        return STAGES[(kind, name)]
    except KeyError:
        raise UnknownStage(f"a {kind} run has no stage {name!r}") from None
