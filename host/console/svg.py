"""Small inline SVG charts (pure): a sparkline and a bar chart, no script, no external assets.

Values come from our own queries, labels are escaped; the markup is safe to insert as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup


def sparkline(values: Sequence[float], *, width: int = 240, height: int = 40, label: str = "") -> Markup:
    """A polyline over `values` (oldest first), scaled to the largest; flat at the bottom when all zero."""
    if not values:
        values = [0.0]
    top = max(values) or 1.0
    step = width / max(len(values) - 1, 1)
    points = " ".join(
        f"{i * step:.1f},{height - 2 - (v / top) * (height - 4):.1f}" for i, v in enumerate(values)
    )
    return Markup(
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>'
        f'<polyline fill="none" stroke="currentColor" stroke-width="1.5" points="{points}"/></svg>'
    )


def bars(
    series: Sequence[tuple[str, int]], *, width: int = 600, height: int = 120, label: str = ""
) -> Markup:
    """Vertical bars, one per (label, count), each with a tooltip; labels every few bars on the axis."""
    n = max(len(series), 1)
    top = max((c for _, c in series), default=0) or 1
    slot = width / n
    chart = height - 16
    parts = []
    for i, (name, count) in enumerate(series):
        h = count / top * (chart - 2)
        x = i * slot
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{chart - h:.1f}" width="{max(slot - 2, 1):.1f}" height="{h:.1f}">'
            f"<title>{escape(name)}: {count}</title></rect>"
        )
        if i % max(n // 6, 1) == 0:
            parts.append(f'<text x="{x:.1f}" y="{height - 2}">{escape(name)}</text>')
    return Markup(
        f'<svg class="bars" viewBox="0 0 {width} {height}" width="100%" height="{height}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>{"".join(parts)}</svg>'
    )
