"""A sample of everything the web pages show, built through the services with the offline LLM
(eager Celery): the demo novel with a committed chapter (evaluation, summary, log), a promotion post
and chapter 2 paused by the judge after one revision (an open NOVEL_ASK question, a revised draft);
a new project whose quick start was answered (trial chapter) and whose volume plan is staged; and a
project whose run failed (ERROR_RETRY). Used by tests/test_human_words.py and test_gate_review.py."""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.chapter.pause import chapter_pause_resolve
from pipeline.questions.answers import gate_answer_submit
from pipeline.models import GateQuestion, GateStatus, PipelineRun, RunKind, RunStatus
from pipeline.book.orchestrator import advance
from pipeline.promotion.run import promotion_start
from pipeline.runtime.runs import chapter_run_start
from pipeline.book.voice import style_analysis_start
from projects.models import Membership, OrchestratorState, Project, Role
from projects.sample_project import sample_project_create
from projects.services.voice import voice_sample_save
from projects.services.projects import project_create

VOICE_SAMPLE = ("雪下了一整夜。林枫推开门，冷风灌进来，吹得灯火一阵乱晃。"
                "他没有回头，只是把手里的刀又握紧了些，像握住最后一点暖意。\n"
                "“你真要走？”苏婉站在廊下，声音很轻。\n“不走，宗门就完了。”林枫说。\n"
                "院子里的老槐树被雪压弯了枝，偶尔落下一团雪，砸在石阶上，发出闷闷的一声。远处的山门隐在夜色里，只剩一盏孤灯。\n"
                "苏婉走下台阶，把一件旧斗篷披在他肩上。斗篷是师父留下的，边角磨得发白，领口还缝着一道歪歪扭扭的补丁。\n"
                "林枫点了点头。他知道这句话有多重，也知道自己多半做不到。可他还是点了头，认真，笨拙，不留余地。\n"
                "他走出山门的时候，雪已经停了。天边露出一线灰白，照着他脚下那条谁也没走过的路，路上只有他一个人的脚印。风从背后吹来，他没有回头。\n")
BRIEF = "北境少年林枫在雪原上救下一位神秘老人，卷入星火宗覆灭的旧案，一路南下追查预言的真相。"


@dataclass
class SamplePages:
    demo: Project  # chapter 1 committed, chapter 2 paused by the judge (revised once), a promotion
    paused_question: GateQuestion
    promotion: PipelineRun
    planned: Project  # quick start answered and committed, a volume plan staged for approval
    failed: Project  # a chapter run in error


def paused_demo(settings, owner) -> tuple[Project, GateQuestion]:
    """The demo novel with chapter 1 committed and chapter 2 paused by the judge after a revision."""
    settings.NOVELSITE_OFFLINE = {}
    demo = sample_project_create(owner=owner)
    chapter_run_start(project_id=demo.pk)  # normal scores: committed
    settings.NOVELSITE_OFFLINE = {"score_mode": "low"}  # overall in [2, 3): a person decides
    run = chapter_run_start(project_id=demo.pk)
    first = GateQuestion.objects.get(run=run, status=GateStatus.OPEN)
    chapter_pause_resolve(question_id=first.pk, choice="revise", notes="让老人的身份更早露出破绽", user=owner)
    question = GateQuestion.objects.get(run=run, status=GateStatus.OPEN)  # paused again, on the revised draft
    demo.refresh_from_db()
    return demo, question


def sample_pages(settings, owner, *, members: dict | None = None) -> SamplePages:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    demo, question = paused_demo(settings, owner)
    settings.NOVELSITE_OFFLINE = {}
    promotion = promotion_start(project_id=demo.pk, target={"chapter": 1}, platform="xiaohongshu", user=owner)
    # a voice sample and the style analyst's run beside the book (issue #17 §3)
    voice_sample_save(project=demo, editor=owner, text=VOICE_SAMPLE, source_type="reference")
    style_analysis_start(project_id=demo.pk, user=owner)

    planned = project_create(owner=owner, slug="planned", title="雪原长夜", brief=BRIEF)
    advance(project_id=planned.pk, user=owner)  # the quick start stops at platform and genre
    binding = GateQuestion.objects.get(project=planned, status=GateStatus.OPEN)
    gate_answer_submit(question_id=binding.pk, answers={"platform": "qidian", "genre": "xuanhuan"}, user=owner)
    advance(project_id=planned.pk, user=owner)  # volume:outline: staged, waits for approval

    failed = sample_project_create(owner=owner, slug="failed")
    PipelineRun.objects.create(project=failed, kind=RunKind.CHAPTER, chapter=1, status=RunStatus.ERROR, stage="draft",
                               error="模型服务暂时不可用（重试已用完）")
    Project.objects.filter(pk=failed.pk).update(orchestrator_state=OrchestratorState.ERROR_RETRY,
                                                 inflight_chapter=1, pipeline_stage="drafting")
    for project in (demo, planned, failed):
        for role, user in (members or {}).items():
            Membership.objects.get_or_create(project=project, user=user, defaults={"role": Role(role)})
        project.refresh_from_db()
    return SamplePages(demo, question, promotion.__class__.objects.get(pk=promotion.pk), planned, failed)
