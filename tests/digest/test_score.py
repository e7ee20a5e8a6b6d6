"""Importance components and the weighted sum (pure)."""

from __future__ import annotations

import math

import pytest

from modules.digest.score import importance as imp


def test_authority_is_tier_base_times_feed_health() -> None:
    assert imp.authority(1, None) == 95 and imp.authority(None, None) == 65  # unknown → T3
    assert imp.authority(2, 0.5) == 40 and imp.authority(5, 1.0) == 30


def test_recency_decays_and_uncertain_dates_lose_20_percent() -> None:
    assert imp.recency(0, date_uncertain=False) == 100
    assert imp.recency(24, date_uncertain=False) == pytest.approx(100 * math.exp(-0.72))
    assert imp.recency(24, date_uncertain=True) == pytest.approx(0.8 * 100 * math.exp(-0.72))


def test_corroboration_counts_sources_and_rewards_three_tiers() -> None:
    assert imp.corroboration(1, [3]) == 25 and imp.corroboration(3, [1, 1, 2]) == 75
    assert imp.corroboration(3, [1, 2, 3]) == 85 and imp.corroboration(5, [1, 2, 3]) == 100


def test_depth_buckets_signals_and_partial_cap() -> None:
    assert imp.depth(150, (), partial=False) == 20
    assert imp.depth(600, ("data", "structure"), partial=False) == 100
    assert imp.depth(1200, ("data",), partial=False) == 100
    assert imp.depth(300, ("data", "citations"), partial=False) == 75
    assert imp.depth(1200, ("data",), partial=True) == 40


def test_weighted_sum_and_sections() -> None:
    c = imp.Components(authority=80, recency=100, corroboration=50, relevance=50, depth=40)
    assert c.total == pytest.approx(0.25 * 80 + 0.2 * 100 + 0.2 * 50 + 0.2 * 50 + 0.15 * 40)
    assert [imp.section_for(s) for s in (70, 69.9, 40, 39.9)] == ["top", "noteworthy", "noteworthy", "also"]


@pytest.mark.parametrize("text", ["T6", "t0", "gold", ""])
def test_unknown_tier_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        imp.parse_tier(text)
    assert imp.parse_tier("t2") == imp.parse_tier("2") == 2
