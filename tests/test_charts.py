"""The dashboard's charts are readable: round ticks on both axes, plain numbers, chapter and value
on hover, the score dimensions as small charts rather than one tangle of lines."""
from __future__ import annotations

import re

import pytest
from django.utils import translation

from pipeline.web.views.charts import bar_chart, chapter_ticks, line_chart, nice_ticks, plain_number, small_multiples


@pytest.mark.parametrize(("value", "unit", "text"), [
    (14800, "", "14,800"), (14800.4, "", "14,800"), (0.35, "", "0.35"), (3.0, "", "3"), (0, "", "0"),
    (0.00012, "$", "$0.00012"), (0.123456, "$", "$0.12"), (12.5, "", "12.5"), (1234567, "", "1,234,567"),
])
def test_numbers_are_written_plainly(value, unit, text):
    assert plain_number(value, unit) == text
    assert "e+" not in plain_number(value * 1e6) and "e-" not in plain_number(value / 1e6 if value else 0)


def test_ticks_are_round_and_cover_the_values():
    assert nice_ticks(0, 5) == [0, 1, 2, 3, 4, 5]
    assert nice_ticks(0, 14800) == [0, 5000, 10000, 15000]
    ticks = nice_ticks(0.013, 0.087)
    assert ticks[0] <= 0.013 and ticks[-1] >= 0.087 and 4 <= len(ticks) <= 7
    assert chapter_ticks(list(range(1, 61))) == [1, 13, 25, 36, 48, 60]
    assert chapter_ticks([3, 4]) == [3, 4]


def _texts(svg: str) -> list[str]:
    return re.findall(r'class="axis"[^>]*>([^<]*)<', svg)


def test_a_chart_has_labelled_axes_with_several_ticks_and_values_on_hover():
    with translation.override("en"):
        html = str(bar_chart(list(range(1, 31)), [14800 + 10 * i for i in range(30)], title="Tokens per chapter"))
    labels = _texts(html)
    assert "15,000" in labels and "0" in labels and len(labels) >= 8  # y ticks and chapter ticks
    assert "1" in labels and "30" in labels
    assert "Chapter" in html  # the x axis says what it counts
    assert "<title>Chapter 7: 14,860</title>" in html
    assert "e+" not in html


def test_the_dimensions_are_small_charts_each_with_its_name():
    series = {f"dim{i}": [3.0 + i / 10, 4.0] for i in range(8)}
    html = str(small_multiples([1, 2], series, title="Score by dimension", lo=0, hi=5,
                               codes={f"dim{i}": f"code{i}" for i in range(8)}))
    assert html.count('<svg class="chart"') == 8
    assert html.count("<polyline") == 8  # one line each, not eight in one chart
    assert 'data-code="code3"' in html


def test_no_chapter_yet_is_said_in_words():
    with translation.override("zh-hans"):
        assert "还没有章节" in str(line_chart([], {}, title="总分"))
