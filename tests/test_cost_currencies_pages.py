"""Costs on the pages say their currency (#19): the runs list, the chapter's pipeline log and the
cost chart show CNY as CNY, never as dollars; amounts in several currencies are not added up, and
a step on a model without a price is "unknown", not 0."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from pipeline.models import PipelineRun, RunKind, RunStatus, StageRun
from pipeline.web.selectors import ChapterMetric
from pipeline.web.views.dashboard import _cost_chart
from projects.sample_project import sample_project_create
from tests.conftest import member_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(make_user):
    return sample_project_create(owner=make_user("owner"))


def run_with(project, chapter: int, *costs: tuple[str, str, bool]) -> PipelineRun:
    run = PipelineRun.objects.create(project=project, kind=RunKind.CHAPTER, chapter=chapter, status=RunStatus.DONE,
                                     stage="commit")
    for index, (amount, currency, known) in enumerate(costs):
        StageRun.objects.create(run=run, stage=["draft", "judge", "refine"][index], status="succeeded",
                                cost_usd=Decimal(amount), currency=currency, cost_known=known)
    return run


def test_the_runs_list_says_the_currency_and_never_adds_two(project, make_user):
    run_with(project, 1, ("0.5", "CNY", True), ("0.25", "CNY", True))
    run_with(project, 2, ("0.5", "CNY", True), ("0.01", "USD", True), ("0", "USD", False))
    page = member_client(project, make_user, "viewer", language="en").get(reverse("runs", args=[project.slug]))
    body = page.content.decode()
    assert "CNY 0.7500" in body
    assert "several currencies" in body and "+ unknown (1 step)" in body
    assert "$" not in body.split("<table", 1)[1].split("</table>", 1)[0]


def test_the_cost_chart_is_titled_with_its_currency_and_mixed_costs_are_not_summed():
    cny = [ChapterMetric(number=n, cost=0.3, currencies=("CNY",)) for n in (1, 2)]
    assert "CNY" in _cost_chart([1, 2], cny) and "$" not in _cost_chart([1, 2], cny)
    mixed = [ChapterMetric(number=1, cost=0.3, currencies=("CNY",)), ChapterMetric(number=2, cost=0.1,
                                                                                 currencies=("USD",))]
    assert "CNY, USD" in _cost_chart([1, 2], mixed) and "<rect" not in _cost_chart([1, 2], mixed)
