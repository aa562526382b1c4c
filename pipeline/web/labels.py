"""The pipeline's vocabulary in human words, registered into ``projects.labels`` (projects never
imports pipeline) from ``PipelineConfig.ready()``: run kinds and statuses, step ids
(``chapter:004:draft`` → 第 4 章 · 起草), stage names, gate topics (``chapter.006.judge_pause``),
answers (``approve`` → 批准), promotion styles and scores, and the reasons ``next_step`` gives."""
from __future__ import annotations

import re

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from projects.labels import label, label_pattern_register, labels_register

CHAPTER_STEP = re.compile(r"^chapter:(\d{1,4}):([a-z-]+)$")
BOOK_STEP = re.compile(r"^(quickstart|volume|review|promote|voice):([a-z0-9_-]+)$")
CHAPTER_TOPIC = re.compile(r"^chapter\.(\d{1,4})\.([a-z_]+)$")
VOLUME_TOPIC = re.compile(r"^volume\.(\d{1,3})\.([a-z_]+)$")
NUMBERED = re.compile(r"^(chapter|vol)-(\d{1,4})$")
CALL_KEY = re.compile(r"^run\d+:(.+):(\d+):(\d+)$")  # LLMCall.call_key: run:stage:attempt:sequence

CHAPTER_STAGES = {  # a chapter run's stages (pipeline/runtime/runner.py) and the facts §1 step stages
    "draft": _("draft"),
    "summarize": _("summary"),
    "refine": _("polish"),
    "judge": _("judge"),
    "gate": _("waiting for a decision"),
    "commit": _("commit"),
    "maintain": _("tidy memory"),
    "title-fix": _("title fix"),
    "hook-fix": _("hook fix"),
    "review": _("review"),
}
BOOK_STEPS = {
    "quickstart": (_("Quick start"), {
        "world": _("world"), "characters": _("characters"), "style": _("style"),
        "f0": _("plan of the first three chapters"), "trial": _("trial chapter"), "results": _("trial evaluation"),
    }),
    "volume": (_("Volume plan"), {
        "outline": _("outline"), "validate": _("check and approval"), "commit": _("commit"),
        "characters": _("new characters"),
    }),
    "review": (_("Volume review"), {
        "collect": _("collect"), "audit": _("continuity audit"), "report": _("report"), "cleanup": _("tidy up"),
        "transition": _("on to the next volume"),
    }),
    "promote": (_("Promotion post"), {
        "titles": _("hooks"), "body": _("body"), "cta": _("call to action"), "hashtags": _("hashtags"),
        "platforms": _("platform versions"),
    }),
    "voice": (_("Voice sample"), {"style": _("style analysis")}),
}
OTHER_STAGES = {  # LLM stages of book runs (StageRun.stage) that are not step ids
    "outline": _("outline"), "plan": _("plan"), "consolidate": _("memory consolidation"),
    "weave": _("weaving in new characters"), "quickstart": _("quick start"), "default": _("default"),
    "promote": _("promotion"),
}


def step_label(code: str) -> str | None:
    """``chapter:004:draft`` → 第 4 章 · 起草; ``volume:outline`` → 卷规划 · 大纲."""
    if match := CHAPTER_STEP.match(code):
        stage = match.group(2)
        return gettext("Chapter %(n)d · %(stage)s") % {"n": int(match.group(1)),
                                                         "stage": CHAPTER_STAGES.get(stage, stage)}
    if match := BOOK_STEP.match(code):
        title, phases = BOOK_STEPS[match.group(1)]
        phase = match.group(2)
        return f"{title} · {phases.get(phase, phase)}"
    return None


def topic_label(code: str) -> str | None:
    """Gate topics (seed 003 QuestionSpec ``topic``) with numbers in them."""
    if match := CHAPTER_TOPIC.match(code):
        n, what = int(match.group(1)), match.group(2)
        if what == "judge_pause":
            return gettext("Chapter %(n)d: the judge paused it for a decision") % {"n": n}
        return gettext("Chapter %(n)d: %(what)s") % {"n": n, "what": what.replace("_", " ")}
    if match := VOLUME_TOPIC.match(code):
        n, what = int(match.group(1)), match.group(2)
        if what == "plan_approval":
            return gettext("Volume %(n)d: approve the plan") % {"n": n}
        return gettext("Volume %(n)d: %(what)s") % {"n": n, "what": what.replace("_", " ")}
    return None


def _numbered(part: str) -> str:
    """``chapter-004`` → 第 4 章, ``vol-01`` → 第 1 卷; anything else as it is."""
    match = NUMBERED.match(part)
    if not match:
        return part
    n = int(match.group(2))
    return (gettext("chapter %(n)d") if match.group(1) == "chapter" else gettext("volume %(n)d")) % {"n": n}


def reason_label(code: str) -> str | None:
    """The reason ``next_step`` gives (``writing:chapter-004``, ``no_plan:chapter-004:vol-01`` …)."""
    head, _sep, rest = code.partition(":")
    parts = [_numbered(p) for p in rest.split(":")] if rest else []
    if head == "waiting_for_answer":
        return gettext("waiting for an answer: %(topic)s") % {"topic": label("topic", rest)}
    if head == "error_retry":
        return gettext("stopped by an error; it can be retried")
    if head == "no_plan" and len(parts) >= 2:
        return gettext("%(chapter)s has no plan yet: plan %(volume)s") % {"chapter": parts[0], "volume": parts[1]}
    if head == "volume_end" and len(parts) >= 2:
        return gettext("%(volume)s ends with %(chapter)s: review it") % {"volume": parts[0], "chapter": parts[1]}
    if head in ("writing", "vol_planning", "vol_review") and parts:
        template = {"writing": gettext("next to write: %(what)s"), "vol_planning": gettext("%(what)s needs a plan"),
                    "vol_review": gettext("%(what)s is being reviewed")}[head]
        return template % {"what": parts[0]}
    if head in ("vol_planning", "no_plan"):
        return gettext("the next volume needs a plan")
    if head in ("queued", "running", "waiting", "done", "error", "cancelled") and parts:
        return gettext("%(kind)s run: %(status)s") % {"kind": label("run_kind", rest),
                                                      "status": label("run_status", head)}
    return None


def call_label(code: str) -> str | None:
    """``run3:promote:titles:1:2`` → 推广帖 · 钩子 · 第 1 次尝试 · 第 2 次调用."""
    match = CALL_KEY.match(code)
    if not match:
        return None
    return gettext("%(step)s · attempt %(attempt)s · call %(n)s") % {
        "step": label("step", match.group(1)), "attempt": match.group(2), "n": match.group(3)}


LINT_RULES = {  # the craft lints' rules (pipeline.chapter.craft.catalogue), issue #17
    "em_dash": _("Em dash"), "md_separator": _("Markdown separator"), "quote_format": _("Quote marks"),
    "chapter_heading": _("Chapter heading"), "narration_connector": _("Narration connector"),
    "blacklist": _("AI blacklist phrase"), "simile_density": _("Simile density"),
    "ellipsis_density": _("Ellipsis density"), "exclamation_density": _("Exclamation density"),
    "sentence_length_std_dev": _("Sentence length spread"), "sentence_length_run": _("Run of equal sentences"),
    "paragraph_length_cv": _("Paragraph length spread"), "paragraph_too_long": _("Paragraph too long"),
    "sentence_repetition": _("Repeated sentence"), "four_char_idiom_density": _("Four-character idiom density"),
    "vocabulary_diversity": _("Vocabulary diversity"), "sentence_pattern": _("AI sentence pattern"),
    "word_count": _("Word count"), "title": _("Chapter title"),
}


def register_pipeline_labels() -> None:
    label_pattern_register("call", call_label)
    labels_register("run_kind", {
        "chapter": _("chapter"), "quickstart": _("quick start"), "plan": _("volume plan"),
        "review": _("volume review"), "rewrite": _("rewrite"), "promotion": _("promotion post"),
        "style": _("style analysis"),
    })
    labels_register("run_status", {
        "queued": _("queued"), "running": _("running"), "waiting": _("waiting"), "error": _("error"),
        "done": _("done"), "cancelled": _("cancelled"),
        # StageRun statuses and seed 001 step statuses
        "succeeded": _("done"), "failed": _("failed"), "pending": _("not yet"), "completed": _("done"),
        "skipped": _("skipped"),
    })
    labels_register("step", {**CHAPTER_STAGES, **OTHER_STAGES})
    label_pattern_register("step", step_label)
    labels_register("topic", {"init.platform_binding": _("Platform and genre")})
    labels_register("lint_rule", LINT_RULES)
    label_pattern_register("topic", topic_label)
    labels_register("answer", {
        "accept": _("Accept"), "revise": _("Revise"), "rewrite": _("Rewrite"),
        "approve": _("Approved"), "regenerate": _("Regenerate"),
    })
    labels_register("answer_help", {  # the options' descriptions, by option code
        "accept": _("Accept it as it is and commit the chapter"),
        "revise": _("Revise it with the notes, then judge it again"),
        "rewrite": _("Write the whole chapter again"),
        "approve": _("Approve this volume's plan and commit it"),
        "regenerate": _("Plan again with the notes"),
    })
    labels_register("style", {
        "professional": _("professional"), "casual": _("casual"), "humorous": _("humorous"),
        "inspirational": _("inspirational"), "educational": _("educational"),
    })
    labels_register("quality", {  # a promotion's quality scores (seed 001 control zone)
        "hook_strength": _("Hook strength"), "virality": _("Virality"), "readability": _("Readability"),
        "engagement": _("Engagement"), "platform_fit": _("Platform fit"),
        "emotional_resonance": _("Emotional resonance"),
    })
    labels_register("reason", {
        "init:no_quickstart": _("a new project: start with the quick start"),
        "quickstart:restart_from_world": _("the quick start goes on"),
        "waiting:cost_cap": _("waiting: tonight's cost cap is reached"),
        "external:waiting_for_import": _("waiting for an outside executor's result"),
        "waiting": _("waiting"),
    })
    label_pattern_register("reason", reason_label)
    labels_register("stop_reason", {  # pipeline.nightly.batch_end.StopReason
        "done": _("all chapters written"), "gate": _("a question waits"), "error": _("an error"),
        "end_of_plan": _("the plan ends: plan the next volume"), "cost_cap": _("cost cap reached"),
        "cancelled": _("cancelled"), "busy": _("another run was working"), "not_writable": _("not writing"),
        "autopilot_off": _("autopilot off"), "nothing_requested": _("no chapters requested"),
    })
    labels_register("batch_status", {"running": _("running"), "done": _("done"), "stopped": _("stopped early"),
                                     "skipped": _("skipped")})
