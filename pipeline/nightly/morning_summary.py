"""The morning summary of a project's nightly batch (issue #6): what the night wrote, what it cost,
why it stopped and which questions wait for a person. The dashboard reads
``batch_morning_summary``; members who opt in (``Membership.morning_summary_email``) get it by
e-mail once the batch ends (``batch_summary_email_send``, queued by ``batch_end``)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.utils import timezone

from pipeline.nightly.batch_end import StopReason, batch_summary_data, project_budget_parked_chapter, project_gates_open
from pipeline.models import BatchRun, BatchStatus
from projects.models import Membership, Project

REASON_TEXT = {
    StopReason.DONE: "已写完当晚计划的章数",
    StopReason.GATE: "停在一个需要人工决定的问题",
    StopReason.ERROR: "出错停止（重试次数用尽，修好原因后可重试）",
    StopReason.END_OF_PLAN: "已写到计划的最后一章，请规划下一卷",
    StopReason.COST_CAP: "达到当晚的费用上限（未完成的章节完整保留，下一晚继续）",
    StopReason.CANCELLED: "运行被取消",
    StopReason.BUSY: "项目正忙（有等待中的问题、错误或正在进行的运行）",
    StopReason.NOT_WRITABLE: "项目当前不在写作状态",
    StopReason.AUTOPILOT_OFF: "自动驾驶已关闭",
    StopReason.NOTHING_REQUESTED: "每晚章数设为 0",
}
STATUS_TEXT = {BatchStatus.RUNNING: "进行中", BatchStatus.DONE: "完成", BatchStatus.STOPPED: "提前停止",
               BatchStatus.SKIPPED: "跳过"}


@dataclass(frozen=True)
class GateWaiting:
    question_id: int
    step: str
    topic: str


@dataclass(frozen=True)
class MorningSummary:
    batch_id: int
    night: date
    status: str
    stop_reason: str  # a StopReason; empty while the batch runs
    stop_detail: str
    chapters_requested: int
    chapters: list[tuple[int, str]]  # (number, title) of the chapters the night committed
    cost_usd: Decimal
    cost_cap_usd: Decimal | None
    gates_waiting: list[GateWaiting]  # open now, not when the night ended
    budget_waiting_chapter: int | None  # parked at the cost cap now; the next night resumes it

    @property
    def reason_text(self) -> str:
        return REASON_TEXT.get(self.stop_reason, self.stop_reason)


def batch_morning_summary(*, project: Project) -> MorningSummary | None:
    """The project's latest nightly batch, or None before its first. An ended batch shows what it
    recorded when it ended; a running one is computed from its runs now. What waits for a person
    (open gates, a run parked at the cost cap) is read now, so an answered gate drops off."""
    batch = BatchRun.objects.filter(project=project).order_by("-date", "-pk").first()
    if batch is None:
        return None
    return _summary(batch)


def _summary(batch: BatchRun) -> MorningSummary:
    data = batch.summary if batch.status != BatchStatus.RUNNING and batch.summary else batch_summary_data(batch)
    gates = project_gates_open(batch.project_id)
    cap = data.get("cost_cap_usd")
    return MorningSummary(
        batch_id=batch.pk, night=batch.date, status=batch.status, stop_reason=batch.stop_reason,
        stop_detail=data.get("stop_detail", ""), chapters_requested=batch.chapters_requested,
        chapters=[(c["number"], c["title"]) for c in data.get("chapters", [])],
        cost_usd=Decimal(data.get("cost_usd") or 0), cost_cap_usd=None if cap is None else Decimal(cap),
        gates_waiting=[GateWaiting(q.pk, q.step, q.topic) for q in gates],
        budget_waiting_chapter=project_budget_parked_chapter(batch.project_id),
    )


def batch_summary_text(project: Project, summary: MorningSummary) -> tuple[str, str]:
    """The e-mail's subject (English prefix, for mail filters) and its body (Chinese)."""
    subject = (f"{settings.EMAIL_SUBJECT_PREFIX}Nightly batch {summary.night.isoformat()} · {project.title}: "
               f"{len(summary.chapters)} chapter(s), ${summary.cost_usd:.2f}")
    lines = [f"《{project.title}》{summary.night.isoformat()} 夜间自动写作小结", "",
             f"状态：{STATUS_TEXT.get(summary.status, summary.status)}" +
             (f"，{summary.reason_text}" if summary.stop_reason else ""),
             f"写成 {len(summary.chapters)} / {summary.chapters_requested} 章："]
    lines += [f"  第 {number} 章 {title}" for number, title in summary.chapters] or ["  （无）"]
    cap = f"（上限 ${summary.cost_cap_usd:.2f}）" if summary.cost_cap_usd is not None else ""
    lines += [f"费用：${summary.cost_usd:.4f}{cap}"]
    if summary.budget_waiting_chapter:
        lines += [f"第 {summary.budget_waiting_chapter} 章停在费用上限，下一晚从这里继续（也可手动恢复）。"]
    lines += ["等待处理的问题："]
    lines += [f"  {gate.step}：{gate.topic}" for gate in summary.gates_waiting] or ["  （无）"]
    if summary.stop_detail:
        lines += ["", f"详情：{summary.stop_detail}"]
    return subject, "\n".join(lines) + "\n"


def batch_summary_email_send(*, batch_id: int) -> int:
    """E-mail an ended batch's summary to the project's members who opted in and have an address;
    returns how many messages went out. Once per batch: the send is recorded in the summary, so a
    redelivered task sends nothing (a crash between the send and the record may send it twice)."""
    batch = BatchRun.objects.select_related("project").filter(pk=batch_id).first()
    if batch is None or batch.status == BatchStatus.RUNNING or batch.summary.get("emailed_at"):
        return 0
    members = (Membership.objects.filter(project_id=batch.project_id, morning_summary_email=True,
                                         user__is_active=True).exclude(user__email="")
               .select_related("user").order_by("pk"))
    recipients = sorted({member.user.email for member in members})
    sent = 0
    if recipients:
        subject, body = batch_summary_text(batch.project, _summary(batch))
        # one message each: members do not see each other's addresses
        messages = [EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [address]) for address in recipients]
        with mailers.default as connection:  # one connection for all of them
            sent = connection.send_messages(messages) or 0
    BatchRun.objects.filter(pk=batch.pk).update(summary={**batch.summary, "emailed_at": timezone.now().isoformat(
        timespec="seconds"), "emailed_to": len(recipients)})
    return sent
