"""A reviewer decides with the chapter in front of them (#16): the gates page shows a paused
chapter's staged text (polished and draft), the judge's scores with reasons and evidence, the
deterministic findings it was given and the diff to the draft before a revision; the decision form
only for a role that may decide. The quick start's trial chapter is readable too."""
from __future__ import annotations

import pytest
from django.urls import reverse

from pipeline.runtime.blackboard import Blackboard
from pipeline.models import GateStatus
from projects.models import Membership, Role
from tests.sample_pages import BRIEF, paused_demo

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def paused(settings, make_user):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    owner = make_user("owner")
    demo, question = paused_demo(settings, owner)
    for role in ("reviewer", "viewer"):
        Membership.objects.create(project=demo, user=make_user(role), role=Role(role))
    return demo, question


def staged(question, key: str):
    zone, name = key.split(".")
    return Blackboard(question.run.blackboard).as_("skill").read_content(zone, name)


def test_the_paused_chapter_is_shown_with_the_reasons_and_findings(client, django_user_model, paused):
    demo, question = paused
    client.force_login(django_user_model.objects.get(username="reviewer"))
    body = client.get(reverse("gates", args=[demo.slug])).content.decode()
    refined = staged(question, "chapter.refined") or staged(question, "chapter.draft")
    first_paragraph = next(line.strip() for line in refined.split("\n") if line.strip())
    assert 'id="staged-chapter"' in body and first_paragraph in body
    assert 'id="judge-evaluation"' in body and "离线评审" in body and "（离线）" in body  # reason, evidence
    assert "情节逻辑" in body and 'data-code="plot_logic"' in body
    assert "加快中段节奏" in body  # the fixes the judge asks for
    assert 'id="checks"' in body and "评审前的检查" in body and "字数" in body  # the deterministic findings
    checks = staged(question, "evaluation.checks")
    for finding in checks["warnings"] + checks["violations"]:
        assert finding in body
    assert 'id="revision-diff"' in body and "让老人的身份更早露出破绽" in body  # revised once: diff and notes
    assert 'class="gate-form"' in body and 'value="accept"' in body and "按现状接受并提交本章" in body


def test_a_viewer_reads_it_but_gets_no_form_and_a_reviewer_decides(client, django_user_model, paused):
    demo, question = paused
    client.force_login(django_user_model.objects.get(username="viewer"))
    body = client.get(reverse("gates", args=[demo.slug])).content.decode()
    assert 'id="staged-chapter"' in body and 'class="gate-form"' not in body
    client.force_login(django_user_model.objects.get(username="reviewer"))
    response = client.post(reverse("gate-answer-web", args=[demo.slug, question.pk]), {"q-decision": "accept"})
    assert response.status_code == 302
    question.refresh_from_db()
    assert question.status == GateStatus.ANSWERED
    demo.refresh_from_db()
    assert demo.last_completed_chapter == 2
    answered = client.get(reverse("gates", args=[demo.slug])).content.decode()
    assert "接受" in answered and "{'decision'" not in answered


def test_the_quick_starts_trial_chapter_is_readable(client, settings, make_user):
    from pipeline.questions.answers import gate_answer_submit
    from pipeline.models import GateQuestion
    from pipeline.book.orchestrator import advance
    from projects.services.projects import project_create

    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.NOVELSITE_OFFLINE = {}
    owner = make_user("owner")
    client.force_login(owner)
    project = project_create(owner=owner, slug="snow", title="雪原长夜", brief=BRIEF)
    assert "还没有试写章" in client.get(reverse("trial", args=["snow"])).content.decode()
    advance(project_id=project.pk, user=owner)
    question = GateQuestion.objects.get(project=project, status=GateStatus.OPEN)
    gate_answer_submit(question_id=question.pk, answers={"platform": "qidian", "genre": "xuanhuan"}, user=owner)
    body = client.get(reverse("trial", args=["snow"])).content.decode()
    assert 'id="trial-chapter"' in body and 'id="trial-evaluation"' in body and "情节逻辑" in body
    assert "\n# " not in body and "<p># " not in body  # the title line is a heading, not Markdown text
