"""Inline SVG charts drawn on the server: polylines and bars from lists of numbers, no JS library.
Values are numbers we computed and labels are escaped, so the markup is safe to mark safe."""
from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT, PAD = 640, 180, 28
COLOURS = ("#b4432f", "#2f6fb4", "#3f8f4a", "#8e5bb0", "#c08a1e", "#2a9d9d", "#6b6b6b", "#d1607a", "#444")


def _scale(values: list[float], lo: float | None, hi: float | None) -> tuple[float, float]:
    lo = min(values) if lo is None else lo
    hi = max(values) if hi is None else hi
    return (lo, hi if hi > lo else lo + 1)


def line_chart(xs: list[int], series: dict[str, list[float | None]], *, title: str, lo: float | None = None,
               hi: float | None = None, codes: dict[str, str] | None = None) -> SafeString:
    """One polyline per series over the chapter numbers ``xs``; gaps (None) are skipped. Series are
    named by their labels; ``codes`` maps a label to its raw code, kept in the legend's tooltip."""
    values = [v for points in series.values() for v in points if v is not None]
    if not xs or not values:
        return mark_safe(f'<p class="muted">{escape(title)}: —</p>')
    lo, hi = _scale(values, lo, hi)
    step = (WIDTH - 2 * PAD) / max(1, len(xs) - 1)

    def y(v: float) -> float:
        return HEIGHT - PAD - (v - lo) / (hi - lo) * (HEIGHT - 2 * PAD)

    parts = [_frame(title, lo, hi, xs)]
    legend = []
    for index, (name, points) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        drawn = [(PAD + i * step, y(v), xs[i], v) for i, v in enumerate(points) if v is not None]
        coords = " ".join(f"{px:.1f},{py:.1f}" for px, py, _x, _v in drawn)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{coords}"/>')
        parts.extend(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{colour}"><title>{x}: {v:.3g}</title></circle>'
                     for px, py, x, v in drawn)
        code = (codes or {}).get(name)
        coded = f' title="{escape(code)}" data-code="{escape(code)}"' if code else ""
        legend.append(f'<span class="legend" style="--c:{colour}"{coded}>{escape(name)}</span>')
    return mark_safe(_svg(title, parts) + f'<div class="legends">{"".join(legend)}</div>')


def bar_chart(xs: list[int], values: list[float], *, title: str, unit: str = "") -> SafeString:
    if not xs:
        return mark_safe(f'<p class="muted">{escape(title)}: —</p>')
    lo, hi = 0.0, max(values) or 1.0
    width = (WIDTH - 2 * PAD) / len(xs)
    parts = [_frame(title, lo, hi, xs, unit)]
    for i, v in enumerate(values):
        h = (v - lo) / (hi - lo) * (HEIGHT - 2 * PAD)
        parts.append(f'<rect x="{PAD + i * width:.1f}" y="{HEIGHT - PAD - h:.1f}" width="{max(1.0, width - 1):.1f}" '
                     f'height="{h:.1f}" fill="{COLOURS[1]}"><title>{xs[i]}: {v:.4g}{escape(unit)}</title></rect>')
    return mark_safe(_svg(title, parts))


def _frame(title: str, lo: float, hi: float, xs: list[int], unit: str = "") -> str:
    bottom = HEIGHT - PAD
    return (f'<line x1="{PAD}" y1="{bottom}" x2="{WIDTH - PAD}" y2="{bottom}" stroke="#999"/>'
            f'<text x="2" y="{PAD}" class="axis">{hi:.3g}{escape(unit)}</text>'
            f'<text x="2" y="{bottom}" class="axis">{lo:.3g}</text>'
            f'<text x="{PAD}" y="{HEIGHT - 6}" class="axis">{xs[0]}</text>'
            f'<text x="{WIDTH - PAD}" y="{HEIGHT - 6}" class="axis" text-anchor="end">{xs[-1]}</text>')


def _svg(title: str, parts: list[str]) -> str:
    return (f'<figcaption>{escape(title)}</figcaption><svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">'
            f'<title>{escape(title)}</title>{"".join(parts)}</svg>')
