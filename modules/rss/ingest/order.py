"""How a feed orders its entries, from their dates (pure; seed 004 §2.4).

Most feeds list newest first, some oldest first (archives, podcasts in episode order), some neither.
Knowing it puts undated entries in their place: new entries are stored and announced oldest first.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

Order = Literal["newest_first", "oldest_first", "unordered"]

MIN_STEPS = 2  # fewer dated neighbours than this tell nothing
TOLERANCE = 0.1  # share of steps that may go the other way (a pinned post on top of a newest-first feed)


def typical_order(dates: Sequence[datetime | None]) -> Order | None:
    """The order of the dated entries in document order, or None when too few are dated to tell.

    Equal neighbours (same day, no time) count for neither direction."""
    known = [d for d in dates if d is not None]
    older = sum(1 for a, b in itertools.pairwise(known) if b < a)
    newer = sum(1 for a, b in itertools.pairwise(known) if b > a)
    steps = older + newer
    if steps < MIN_STEPS:
        return None
    if newer <= steps * TOLERANCE:
        return "newest_first"
    if older <= steps * TOLERANCE:
        return "oldest_first"
    return "unordered"


def chronological(dates: Sequence[datetime | None], order: str | None) -> list[int]:
    """Indices of entries (given their dates in document order) oldest first, knowing the feed's order.

    Newest-first documents are reversed and oldest-first ones kept, so undated entries keep their place
    among their neighbours; an unordered feed is sorted by date with undated entries last (first seen
    now); an unknown order keeps the document's."""
    indices = list(range(len(dates)))
    if order == "newest_first":
        return indices[::-1]
    if order == "unordered":
        return sorted(indices, key=lambda i: _sort_key(dates[i]))
    return indices


def _sort_key(date: datetime | None) -> tuple[bool, float]:
    return (date is None, date.timestamp() if date is not None else 0.0)
