"""Inline SVG charts drawn on the server: lines and bars from lists of numbers, no JS library, within
the CSP. Values are numbers we computed and labels are escaped, so the markup is safe to mark safe.

Made to be read: both axes are labelled, with several ticks at round values; numbers are written
plainly (14,800, 0.35, never 1.48e+04); every point and bar names its chapter and value on hover;
several series are drawn as small charts side by side rather than one tangle of lines."""
from __future__ import annotations

import math
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

COLOURS = ("#b4432f", "#2f6fb4", "#3f8f4a", "#8e5bb0", "#c08a1e", "#2a9d9d", "#6b6b6b", "#d1607a", "#444")


@dataclass(frozen=True)
class Frame:
    """The drawing area in viewBox units: the SVG scales to its box, so the text is sized for the
    width the chart is usually shown at."""

    width: int = 560
    height: int = 240
    left: int = 58
    right: int = 16
    top: int = 14
    bottom: int = 44
    font: int = 14

    @property
    def inner_width(self) -> float:
        return self.width - self.left - self.right

    @property
    def inner_height(self) -> float:
        return self.height - self.top - self.bottom


LARGE = Frame()
SMALL = Frame(width=300, height=170, left=40, right=10, top=10, bottom=34, font=13)


def plain_number(value: float, unit: str = "") -> str:
    """14800 → "14,800"; 0.35 → "0.35"; 3.0 → "3"; 0.00012 → "0.00012": never an exponent."""
    if value == 0:
        text = "0"
    elif abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}".rstrip("0").rstrip(".")
    else:
        decimals = max(2, -int(math.floor(math.log10(abs(value)))) + 1)
        text = f"{value:.{min(decimals, 8)}f}".rstrip("0").rstrip(".")
    return f"{unit}{text}" if unit == "$" else f"{text}{unit}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart)."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 10) for i in range(first, last + 1)]


def chapter_ticks(xs: list[int], count: int = 6) -> list[int]:
    """Up to ``count`` chapter numbers spread over ``xs``, the first and the last included."""
    if len(xs) <= count:
        return list(xs)
    picked = {xs[round(i * (len(xs) - 1) / (count - 1))] for i in range(count)}
    return sorted(picked)


def line_chart(xs: list[int], series: dict[str, list[float | None]], *, title: str, lo: float | None = None,
               hi: float | None = None, unit: str = "", codes: dict[str, str] | None = None,
               frame: Frame = LARGE) -> SafeString:
    """One line per series over the chapter numbers ``xs``; gaps (None) are skipped. Series are named
    by their labels; ``codes`` maps a label to its raw code, kept in the legend's tooltip."""
    values = [v for points in series.values() for v in points if v is not None]
    if not xs or not values:
        return _empty(title)
    ticks = nice_ticks(min(values) if lo is None else lo, max(values) if hi is None else hi)
    lo, hi = ticks[0], ticks[-1]
    step = frame.inner_width / max(1, len(xs) - 1)

    def x(i: int) -> float:
        return frame.left + i * step

    def y(v: float) -> float:
        return frame.top + frame.inner_height - (v - lo) / (hi - lo) * frame.inner_height

    parts = _axes(frame, xs, ticks, x_of=lambda n: x(xs.index(n)), y_of=y, unit=unit)
    legend = []
    for index, (name, points) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        drawn = [(x(i), y(v), xs[i], v) for i, v in enumerate(points) if v is not None]
        coords = " ".join(f"{px:.1f},{py:.1f}" for px, py, _n, _v in drawn)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>')
        parts.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.2" fill="{colour}">'
                     f'<title>{escape(_point_label(n, v, unit, name if len(series) > 1 else ""))}</title></circle>'
                     for px, py, n, v in drawn)
        code = (codes or {}).get(name)
        coded = f' title="{escape(code)}" data-code="{escape(code)}"' if code else ""
        legend.append(f'<span class="legend" style="--c:{colour}"{coded}>{escape(name)}</span>')
    legends = f'<div class="legends">{"".join(legend)}</div>' if len(series) > 1 else ""
    return mark_safe(_svg(title, parts, frame) + legends)


def small_multiples(xs: list[int], series: dict[str, list[float | None]], *, title: str, lo: float, hi: float,
                    codes: dict[str, str] | None = None) -> SafeString:
    """One small chart per series, same scale, side by side: eight dimensions stay readable."""
    charts = []
    for index, (name, points) in enumerate(series.items()):
        chart = line_chart(xs, {name: points}, title=name, lo=lo, hi=hi, frame=SMALL)
        code = (codes or {}).get(name, "")
        charts.append(f'<figure class="small" data-code="{escape(code)}" style="--c:{COLOURS[index % len(COLOURS)]}">'
                      f'{chart}</figure>')
    if not charts:
        return _empty(title)
    return mark_safe(f'<figcaption>{escape(title)}</figcaption><div class="small-multiples">{"".join(charts)}</div>')


def bar_chart(xs: list[int], values: list[float], *, title: str, unit: str = "", frame: Frame = LARGE) -> SafeString:
    if not xs:
        return _empty(title)
    ticks = nice_ticks(0.0, max(values) or 1.0)
    hi = ticks[-1]
    width = frame.inner_width / len(xs)

    def y(v: float) -> float:
        return frame.top + frame.inner_height - v / hi * frame.inner_height

    parts = _axes(frame, xs, ticks, x_of=lambda n: frame.left + (xs.index(n) + 0.5) * width, y_of=y, unit=unit)
    for i, v in enumerate(values):
        top = y(v)
        parts.append(f'<rect x="{frame.left + i * width + 0.5:.1f}" y="{top:.1f}" width="{max(1.0, width - 1):.1f}" '
                     f'height="{frame.top + frame.inner_height - top:.1f}" fill="{COLOURS[1]}">'
                     f'<title>{escape(_point_label(xs[i], v, unit))}</title></rect>')
    return mark_safe(_svg(title, parts, frame))


def _point_label(chapter: int, value: float, unit: str, series: str = "") -> str:
    text = _("Chapter %(n)s: %(value)s") % {"n": chapter, "value": plain_number(value, unit)}
    return f"{series} · {text}" if series else text


def _axes(frame: Frame, xs: list[int], ticks: list[float], *, x_of, y_of, unit: str) -> list[str]:
    bottom = frame.top + frame.inner_height
    parts = []
    for tick in ticks:
        ty = y_of(tick)
        parts.append(f'<line x1="{frame.left}" y1="{ty:.1f}" x2="{frame.width - frame.right}" y2="{ty:.1f}" '
                     f'class="grid"/>')
        parts.append(f'<text x="{frame.left - 6}" y="{ty + frame.font * 0.35:.1f}" class="axis" text-anchor="end" '
                     f'font-size="{frame.font}">{escape(plain_number(tick, unit))}</text>')
    for number in chapter_ticks(xs):
        tx = x_of(number)
        parts.append(f'<line x1="{tx:.1f}" y1="{bottom}" x2="{tx:.1f}" y2="{bottom + 5}" class="tick"/>')
        parts.append(f'<text x="{tx:.1f}" y="{bottom + frame.font + 6}" class="axis" text-anchor="middle" '
                     f'font-size="{frame.font}">{number}</text>')
    parts.append(f'<line x1="{frame.left}" y1="{bottom}" x2="{frame.width - frame.right}" y2="{bottom}" class="base"/>')
    parts.append(f'<text x="{frame.left + frame.inner_width / 2:.1f}" y="{frame.height - 4}" class="axis-title" '
                 f'text-anchor="middle" font-size="{frame.font}">{escape(_("Chapter"))}</text>')
    return parts


def _svg(title: str, parts: list[str], frame: Frame) -> str:
    return (f'<figcaption>{escape(title)}</figcaption><svg class="chart" viewBox="0 0 {frame.width} {frame.height}" '
            f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>{"".join(parts)}</svg>')


def _empty(title: str) -> SafeString:
    return mark_safe(f'<figcaption>{escape(title)}</figcaption><p class="muted">{escape(_("No chapter yet."))}</p>')
