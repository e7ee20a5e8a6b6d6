"""Importance scoring (pure): authority × health, recency, corroboration, relevance, depth; weighted sum.

importance = 0.25·authority + 0.20·recency + 0.20·corroboration + 0.20·relevance + 0.15·depth
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass

TIER_BASE = {1: 95.0, 2: 80.0, 3: 65.0, 4: 50.0, 5: 30.0}
UNKNOWN_TIER = 3
WEIGHTS = {"authority": 0.25, "recency": 0.20, "corroboration": 0.20, "relevance": 0.20, "depth": 0.15}
NEUTRAL_RELEVANCE = 50.0
TOP_MIN, NOTEWORTHY_MIN = 70.0, 40.0  # step 6: Top Stories ≥ 70, Noteworthy 40–69, Also Mentioned below


@dataclass(frozen=True, slots=True)
class Components:
    authority: float
    recency: float
    corroboration: float
    relevance: float
    depth: float

    @property
    def total(self) -> float:
        return round(sum(getattr(self, k) * w for k, w in WEIGHTS.items()), 2)


def parse_tier(text: str) -> int:
    """'T2', 't2' or '2' → 2; ValueError otherwise (the CLI turns it into one line)."""
    t = text.strip().upper().removeprefix("T")
    if t not in {"1", "2", "3", "4", "5"}:
        raise ValueError(text)
    return int(t)


def authority(tier: int | None, health: float | None) -> float:
    """Tier base score × feed health (successful / total polls; 1.0 when unknown)."""
    base = TIER_BASE[tier or UNKNOWN_TIER]
    return base * (1.0 if health is None else max(0.0, min(1.0, health)))


def recency(hours_old: float, *, date_uncertain: bool) -> float:
    score = 100.0 * math.exp(-0.03 * max(0.0, hours_old))
    return score * 0.8 if date_uncertain else score


def corroboration(sources: int, tiers: Collection[int]) -> float:
    score = min(100.0, 25.0 * sources)
    if len(set(tiers)) >= 3:
        score += 10.0
    return min(100.0, score)


def depth(word_count: int, signals: Collection[str], *, partial: bool) -> float:
    if word_count < 200:
        score = 20.0
    elif word_count < 500:
        score = 50.0
    elif word_count < 1000:
        score = 75.0
    else:
        score = 100.0
    score += 15.0 * ("data" in signals) + 10.0 * ("structure" in signals) + 10.0 * ("citations" in signals)
    return min(40.0 if partial else 100.0, score)


def section_for(score: float) -> str:
    return "top" if score >= TOP_MIN else "noteworthy" if score >= NOTEWORTHY_MIN else "also"
