"""Pure politeness decisions: the per-host token bucket and the circuit breaker, with an injected clock."""

from __future__ import annotations

import pytest

from host.breaker import BreakerParams, BreakerState, admit, record
from host.net.ratelimit import TokenBucket


def starts(bucket: TokenBucket, arrivals: list[float]) -> list[float]:
    return [bucket.reserve(t) for t in arrivals]


def test_bucket_lets_a_burst_through_then_paces_at_the_rate() -> None:
    bucket = TokenBucket(rate=2.0, burst=3, now=0.0)
    assert starts(bucket, [0.0] * 6) == [0.0, 0.0, 0.0, 0.5, 1.0, 1.5]


def test_bucket_refills_while_idle_but_never_above_the_burst() -> None:
    bucket = TokenBucket(rate=1.0, burst=2, now=0.0)
    assert starts(bucket, [0.0, 0.0]) == [0.0, 0.0]
    assert bucket.full_at() == 2.0
    assert starts(bucket, [100.0, 100.0, 100.0]) == [100.0, 100.0, 101.0]  # full after 100 s: 2, not 100


def test_bucket_bounds_starts_in_every_window() -> None:
    """However requests arrive, at most burst + rate × t start in any window of t seconds."""
    bucket = TokenBucket(rate=5.0, burst=4, now=0.0)
    arrivals = sorted([0.0] * 20 + [0.1 * i for i in range(30)] + [7.0] * 10)
    got = sorted(starts(bucket, arrivals))
    for i, first in enumerate(got):
        for window in (0.0, 0.5, 1.0, 3.0):
            inside = sum(1 for t in got[i:] if t - first <= window + 1e-9)
            assert inside <= 4 + 5.0 * window + 1e-9, (first, window, inside)


def test_bucket_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate=0, burst=1, now=0)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, burst=0, now=0)


P = BreakerParams(failures=3, window=5, cooldown_s=60, max_cooldown_s=200)


def run(outcomes: str, state: BreakerState = BreakerState()) -> list[tuple[str, float | None, str | None]]:
    """Feed 'x' (failed) / '.' (ok) attempts; returns (phase, cooldown, transition) after each."""
    out = []
    for ch in outcomes:
        verdict = record(state, ch == "x", P)
        state = verdict.state
        out.append((state.phase, verdict.cooldown_s, verdict.transition))
    return out


def test_consecutive_failures_open_the_circuit() -> None:
    assert run("xxx") == [("closed", None, None), ("closed", None, None), ("open", 60, "opened")]


def test_flapping_opens_it_too() -> None:
    """Failures in between successes add up within the window (seed 001 §7: error budget)."""
    assert run("x.x.x")[-1] == ("open", 60, "opened")
    assert run("x...x...x")[-1] == ("closed", None, None)  # spread wider than the window: no


def test_failed_probes_double_the_cooldown_up_to_the_cap_and_success_closes() -> None:
    got = run("xxx" + "xxx.")
    assert [c for _, c, _ in got[2:6]] == [60, 120, 200, 200]
    assert got[3][2] is None  # a failed probe keeps it open without a new "opened" transition
    assert got[-1] == ("closed", None, "closed")


def test_a_circuit_open_for_years_keeps_its_capped_cooldown() -> None:
    """The cool-down is host.backoff's: a long-dead host's 1,100th failed probe doubled a float into an
    OverflowError before the breaker used the one backoff policy."""
    verdict = record(BreakerState("open", 0b11111, opens=1100), True, BreakerParams())
    assert (verdict.state.opens, verdict.cooldown_s) == (1101, BreakerParams().max_cooldown_s)


def test_a_closed_circuit_after_a_probe_starts_with_a_clean_history() -> None:
    state = BreakerState()
    for ch in "xxx.":
        state = record(state, ch == "x", P).state
    assert state == BreakerState()
    assert run("xx", state)[-1] == ("closed", None, None)


def test_breaker_params_are_checked() -> None:
    with pytest.raises(ValueError):
        BreakerParams(failures=6, window=5)
    with pytest.raises(ValueError):
        BreakerParams(window=31, failures=1)


def test_admission_refuses_while_open_then_lets_one_probe_through() -> None:
    opened = BreakerState("open", 0b111, 1)
    assert admit(BreakerState(), now=0, retry_at=0, probing=False) == "pass"
    assert admit(opened, now=59.9, retry_at=60, probing=False) == "refuse"
    assert admit(opened, now=60, retry_at=60, probing=False) == "probe"
    assert admit(opened, now=61, retry_at=60, probing=True) == "refuse"  # one probe at a time
