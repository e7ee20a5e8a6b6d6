"""The one backoff policy (pure)."""

from __future__ import annotations

import random

import pytest

from host.backoff import Backoff


def test_doubles_from_base_and_stops_at_the_cap() -> None:
    b = Backoff(base_s=1, cap_s=10)
    assert [b.delay(n) for n in (0, 1, 2, 3, 4, 5, 10_000)] == [1, 1, 2, 4, 8, 10, 10]


def test_a_longer_retry_after_wins_up_to_its_own_cap() -> None:
    b = Backoff(base_s=1, cap_s=10, retry_after_cap_s=100)
    assert b.delay(1, retry_after_s=50) == 50
    assert b.delay(1, retry_after_s=10_000) == 100
    assert b.delay(5, retry_after_s=0.5) == 10  # a shorter Retry-After never shortens the backoff
    assert Backoff(1, 10).delay(1, retry_after_s=50) == 10  # default: capped like the backoff


def test_jitter_stays_within_its_band() -> None:
    b = Backoff(base_s=100, cap_s=100, jitter=0.1)
    rng = random.Random(7)
    delays = {b.delay(3, rng=rng) for _ in range(200)}
    assert all(90 <= d <= 110 for d in delays) and len(delays) > 100


@pytest.mark.parametrize("base,cap,jitter", [(0, 1, 0), (2, 1, 0), (1, 2, 1.0), (1, 2, -0.1)])
def test_nonsense_policies_are_refused(base: float, cap: float, jitter: float) -> None:
    with pytest.raises(ValueError):
        Backoff(base, cap, jitter=jitter)
