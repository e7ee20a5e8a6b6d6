"""Human output (pure): display widths of wide characters, "…" truncation, tables, humanized times.

Terminals give CJK and other East Asian wide characters two columns and combining marks none, so
`str.ljust` misaligns them; widths here follow `unicodedata.east_asian_width`.
"""

from __future__ import annotations

import os
import shutil
import sys
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

ELLIPSIS = "…"
DEFAULT_COLUMNS = 100  # when the terminal cannot say its size


def char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def width(text: str) -> int:
    """Columns `text` takes in a terminal."""
    return sum(char_width(ch) for ch in text)


def fit(text: str, limit: int | None) -> str:
    """`text` on one line, cut to `limit` columns with "…" when longer (None: never cut)."""
    flat = " ".join(text.split("\n")).replace("\t", " ").replace("\r", "")
    if limit is None or width(flat) <= limit:
        return flat
    out, used = [], 0
    for ch in flat:
        w = char_width(ch)
        if used + w > limit - 1:
            break
        out.append(ch)
        used += w
    return "".join(out).rstrip() + ELLIPSIS


def pad(text: str, columns: int) -> str:
    return text + " " * max(columns - width(text), 0)


def terminal_columns() -> int | None:
    """The width output must fit: COLUMNS when set, else the terminal's; None when stdout is not a
    terminal (a pipe, a file): scripts get every cell whole, `rss list | grep URL` must find the URL."""
    explicit = os.environ.get("COLUMNS", "")
    if explicit.isdigit() and int(explicit) > 0:
        return int(explicit)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((DEFAULT_COLUMNS, 24)).columns


def table(
    rows: Sequence[Sequence[Any]],
    header: Sequence[str],
    *,
    limits: Mapping[int, int] | None = None,
    total: int | None = None,
    whole: Collection[int] = (),
) -> str:
    """Aligned columns; `limits` caps given columns, and the widest column shrinks until the table fits
    `total` columns (default: the terminal). Cut cells end in "…". Columns in `whole` (URLs: a cut one
    can be neither opened nor copied) are never cut. Off a terminal nothing is cut."""
    cells = [list(map(str, header))] + [
        ["" if c is None else " ".join(str(c).split()) for c in r] for r in rows
    ]
    widths = [max(width(r[i]) for r in cells) for i in range(len(header))]
    columns = total if total is not None else terminal_columns()
    if columns is not None:
        widths = _fit_widths(widths, header, limits or {}, columns, whole)
    return "\n".join(
        "  ".join(pad(fit(c, w), w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def _fit_widths(
    widths: list[int], header: Sequence[str], limits: Mapping[int, int], columns: int, whole: Collection[int]
) -> list[int]:
    widths = list(widths)
    for i, cap in limits.items():
        if i not in whole:
            widths[i] = min(widths[i], max(cap, width(header[i])))
    budget = columns - 2 * (len(header) - 1)
    cuttable = [i for i in range(len(widths)) if i not in whole]
    while cuttable and sum(widths) > budget:
        widest = max(cuttable, key=lambda i: widths[i])
        floor = max(width(header[widest]), 8)
        if widths[widest] <= floor:
            break
        widths[widest] = max(floor, widths[widest] - (sum(widths) - budget))
    return widths


def when(value: datetime | None) -> str:
    """A UTC time to the minute: `2026-11-26 05:40Z`."""
    if value is None:
        return "-"
    return f"{value.astimezone(UTC):%Y-%m-%d %H:%MZ}"


def duration(seconds: float | None) -> str:
    """`45 s`, `12 min`, `12 h`, `3 d` (one unit, rounded)."""
    if seconds is None:
        return "-"
    s = abs(seconds)
    for unit, size, limit in (("s", 1, 90), ("min", 60, 90 * 60), ("h", 3600, 48 * 3600)):
        if s < limit:
            return f"{s / size:.0f} {unit}"
    return f"{s / 86400:.0f} d"


def relative(value: datetime | None, now: datetime | None = None) -> str:
    """`12 min ago` / `in 3 h`, for times near now; `never` for a last run, poll or use that has not been."""
    if value is None:
        return "never"
    delta = value - (now or datetime.now(UTC))
    return (
        f"in {duration(delta.total_seconds())}"
        if delta > timedelta(0)
        else f"{duration(-delta.total_seconds())} ago"
    )


def upcoming(value: datetime | None, now: datetime | None = None) -> str:
    """`in 3 h` for a time to come; `due now` once it has passed: a due feed waits for the next poll tick,
    and "2 min ago" read as if the poll had happened."""
    if value is None:
        return "-"
    return relative(value, now) if value > (now or datetime.now(UTC)) else "due now"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """`1 feed`, `2 feeds` (`nouns` for irregular plurals: `entry`/`entries`)."""
    return f"{n} {noun if n == 1 else nouns or noun + 's'}"


def size(n: float | None) -> str:
    """`512 B`, `1.5 KiB`, `10.0 MiB`."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024
    return f"{n:.1f} GiB"
