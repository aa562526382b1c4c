"""The relationship graph of the world page: inline SVG drawn on the server (no JS library, within
the CSP), like the dashboard's charts. Characters sit on a circle in the order of their display
names; each relationship is an arrow from who to whom, warm when positive, cold when negative,
thicker the stronger it is, with "who → whom: number" on hover. Names are escaped; everything else
is numbers computed here, so the markup is safe to mark safe."""
from __future__ import annotations

import math

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from projects.services.relationships import relationships_are_pairs

SIZE = 640
RADIUS = 230
NODE = 9
FONT = 15
COLOURS = {"warm": "#c0502f", "cold": "#2f6fb4", "none": "#888888"}


def _tone(value: float) -> str:
    return "warm" if value > 0 else "cold" if value < 0 else "none"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def relationship_graph_svg(data, *, names: dict[str, str]) -> SafeString:
    """The graph of ``data`` (``{who: {whom: number}}``), or "" for any other shape or no data.
    ``names`` maps character ids to display names; ids in the data with no character are drawn
    under their id."""
    if not relationships_are_pairs(data) or not (names or data):
        return mark_safe("")
    ids = set(names) | set(data) | {whom for towards in data.values() for whom in towards}
    order = sorted(ids, key=lambda slug: (names.get(slug, slug), slug))
    centre = SIZE / 2
    spots = {}
    for index, slug in enumerate(order):
        angle = -math.pi / 2 + 2 * math.pi * index / len(order)
        spots[slug] = (centre + RADIUS * math.cos(angle), centre + RADIUS * math.sin(angle), angle)
    edges = [_edge(spots, who, whom, value, names) for who, towards in data.items()
             for whom, value in towards.items() if who != whom]
    nodes = [_node(spots[slug], names.get(slug, slug), slug) for slug in order]
    title = escape(_("Relationships"))
    markers = "".join(
        f'<marker id="arrow-{tone}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
        for tone, colour in COLOURS.items())
    return mark_safe(
        f'<svg class="chart relationship-graph" viewBox="0 0 {SIZE} {SIZE}" role="img" aria-label="{title}">'
        f'<title>{title}</title><defs>{markers}</defs><g class="edges">{"".join(edges)}</g>'
        f'<g class="nodes">{"".join(nodes)}</g></svg>')


def _edge(spots, who: str, whom: str, value: float, names: dict[str, str]) -> str:
    """A slightly curved arrow, so that A→B and B→A are two lines side by side."""
    x1, y1, _a = spots[who]
    x2, y2, _b = spots[whom]
    length = math.hypot(x2 - x1, y2 - y1) or 1
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    x1, y1, x2, y2 = x1 + ux * (NODE + 2), y1 + uy * (NODE + 2), x2 - ux * (NODE + 4), y2 - uy * (NODE + 4)
    bend = min(40.0, length * 0.12)  # to the right of the direction of travel
    cx, cy = (x1 + x2) / 2 - uy * bend, (y1 + y2) / 2 + ux * bend
    tone = _tone(value)
    width = 1.5 + 3.5 * min(abs(value), 100) / 100
    label = f"{names.get(who, who)} → {names.get(whom, whom)}: {_number(value)}"
    return (f'<path class="edge {tone}" d="M{x1:.1f},{y1:.1f} Q{cx:.1f},{cy:.1f} {x2:.1f},{y2:.1f}" fill="none" '
            f'stroke="{COLOURS[tone]}" stroke-width="{width:.1f}" marker-end="url(#arrow-{tone})" '
            f'data-from="{escape(who)}" data-to="{escape(whom)}" data-value="{_number(value)}">'
            f'<title>{escape(label)}</title></path>')


def _node(spot, name: str, slug: str) -> str:
    x, y, angle = spot
    # the name outside the circle: to the right on the right half, to the left on the left half
    tx, ty = x + math.cos(angle) * (NODE + 8), y + math.sin(angle) * (NODE + 8) + FONT / 3
    anchor = "start" if math.cos(angle) > 0.2 else "end" if math.cos(angle) < -0.2 else "middle"
    if anchor == "middle":
        ty += FONT * (0.6 if math.sin(angle) > 0 else -0.3)
    return (f'<g class="node" data-id="{escape(slug)}"><circle cx="{x:.1f}" cy="{y:.1f}" r="{NODE}" fill="#fff" '
            f'stroke="#444" stroke-width="2"><title>{escape(name)} ({escape(slug)})</title></circle>'
            f'<text x="{tx:.1f}" y="{ty:.1f}" text-anchor="{anchor}" font-size="{FONT}" fill="#222">'
            f'{escape(name)}</text></g>')
