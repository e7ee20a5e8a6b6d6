"""Trend indicators against the previous digest of the same type (pure).

A topic matches a previous one when their top terms overlap (Jaccard ≥ 0.3). New with 3+ articles →
[EMERGING]; grown by 50 %+ → [TRENDING]; shrunk by 50 %+ → [FADING]. Previous topics with no match that
had 3+ articles are reported as declining in the feed-health section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MATCH_MIN = 0.3


@dataclass(frozen=True, slots=True)
class Previous:
    label: str
    terms: frozenset[str]
    count: int


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def match(terms: frozenset[str], previous: Sequence[Previous]) -> Previous | None:
    best = max(previous, key=lambda p: _jaccard(terms, p.terms), default=None)
    return best if best is not None and _jaccard(terms, best.terms) >= MATCH_MIN else None


def indicator(count: int, before: Previous | None, *, has_previous_digest: bool) -> str | None:
    if not has_previous_digest:
        return None  # nothing to compare with: no trend claims
    if before is None:
        return "EMERGING" if count >= 3 else None
    if count >= before.count * 1.5:
        return "TRENDING"
    if count <= before.count * 0.5:
        return "FADING"
    return None


def declining(current: Sequence[frozenset[str]], previous: Sequence[Previous]) -> list[str]:
    """Labels of previous topics (3+ articles) that no current topic continues."""
    return [
        p.label
        for p in previous
        if p.count >= 3 and not any(_jaccard(c, p.terms) >= MATCH_MIN for c in current)
    ]
