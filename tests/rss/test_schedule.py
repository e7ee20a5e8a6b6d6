"""The adaptive polling schedule: fixed sequences of outcomes give exact, hand-checked times."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modules.rss.ingest.schedule import (
    FORBIDDEN_WAIT_S,
    RETRY_AFTER_CEILING_S,
    RETRY_AFTER_FLOOR_S,
    Decision,
    Outcome,
    OutcomeKind,
    ScheduleParams,
    decide,
    feed_params,
    interarrival_ewma,
    push_wait,
    rate_limit_wait,
)

NOW = datetime(2024, 3, 6, 12, 0, tzinfo=UTC)  # a Wednesday, noon
EXACT = ScheduleParams(jitter=0)
NOT_MODIFIED = Outcome("not_modified")
NEW = Outcome("new_entries", new_entries=3)


def after(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def run(outcomes: list[Outcome], previous: float | None = None) -> list[Decision]:
    """Feed a sequence of outcomes through decide, carrying interval_s like the scheduler does."""
    decisions = []
    for outcome in outcomes:
        decision = decide(previous, outcome, now=NOW, params=EXACT)
        decisions.append(decision)
        previous = decision.interval_s
    return decisions


# --- adaptive factor -------------------------------------------------------------------------


def test_first_decision_starts_from_initial_interval() -> None:
    decision = decide(None, NOT_MODIFIED, now=NOW, params=EXACT)
    assert decision == Decision(900 * 1.25, after(900 * 1.25), "not-modified", None)


def test_run_of_not_modified_grows_by_up_factor_until_max() -> None:
    decisions = run([NOT_MODIFIED] * 25)
    expected, intervals = 900.0, []
    for _ in decisions:
        expected = min(expected * 1.25, 86400)
        intervals.append(expected)
    assert [d.interval_s for d in decisions] == intervals
    assert [d.next_poll_at for d in decisions] == [after(i) for i in intervals]
    # 900 × 1.25^21 is the first value past 24 h; from then on it stays at the ceiling.
    assert intervals[19] < 86400 and intervals[20:] == [86400.0] * 5


def test_new_entries_shrink_by_down_factor_until_min() -> None:
    decisions = run([NEW] * 20, previous=86400)
    intervals = [d.interval_s for d in decisions]
    assert intervals[:3] == [64800.0, 48600.0, 36450.0]
    assert intervals[-1] == 300.0 and min(intervals) == 300.0
    assert {d.reason for d in decisions} == {"new-entries"}


def test_alternating_outcomes_multiply_step_by_step() -> None:
    decisions = run([NEW, NOT_MODIFIED, NEW, Outcome("no_new")], previous=900)
    assert [d.interval_s for d in decisions] == [675.0, 843.75, 632.8125, 791.015625]
    assert [d.reason for d in decisions] == ["new-entries", "not-modified", "new-entries", "no-new-entries"]


def test_previous_interval_outside_bounds_is_clamped() -> None:
    assert decide(10, NEW, now=NOW, params=EXACT).interval_s == 300
    assert decide(10**9, NOT_MODIFIED, now=NOW, params=EXACT).interval_s == 86400


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["error", "rate_limited"])
def test_errors_back_off_exponentially_capped_at_an_hour(kind: OutcomeKind) -> None:
    delays = [
        (decide(2000, Outcome(kind, consecutive_errors=n), now=NOW, params=EXACT).next_poll_at - NOW)
        for n in range(1, 10)
    ]
    minutes = [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert delays == [timedelta(minutes=m) for m in minutes]


def test_error_backoff_keeps_the_learned_interval_for_recovery() -> None:
    decisions = run(
        [Outcome("error", consecutive_errors=n) for n in (1, 2, 3)] + [NOT_MODIFIED], previous=2000
    )
    assert [d.interval_s for d in decisions] == [2000, 2000, 2000, 2500]
    assert [d.reason for d in decisions] == ["error-backoff"] * 3 + ["not-modified"]


def test_zero_or_huge_error_counter_is_safe() -> None:
    first = decide(900, Outcome("error", consecutive_errors=0), now=NOW, params=EXACT)
    assert first.next_poll_at == after(60)
    huge = decide(900, Outcome("error", consecutive_errors=10**6), now=NOW, params=EXACT)
    assert huge.next_poll_at == after(3600)


@pytest.mark.parametrize("retry_after", [60, 7200, 86400 * 3])
def test_retry_after_is_honoured_exactly_even_with_jitter(retry_after: float) -> None:
    outcome = Outcome("rate_limited", retry_after_s=retry_after, consecutive_errors=5)
    decision = decide(900, outcome, now=NOW, rng=random.Random(7))
    assert decision.next_poll_at == after(retry_after)
    assert decision.reason == "retry-after" and decision.interval_s == 900


def test_retry_after_on_plain_error_503_is_honoured() -> None:
    decision = decide(900, Outcome("error", retry_after_s=120, consecutive_errors=3), now=NOW, params=EXACT)
    assert decision.next_poll_at == after(120) and decision.reason == "retry-after"


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [
        (0, RETRY_AFTER_FLOOR_S),
        (-30, RETRY_AFTER_FLOOR_S),
        (5, RETRY_AFTER_FLOOR_S),
        (1e12, RETRY_AFTER_CEILING_S),
    ],
)
def test_retry_after_sanity_floor_and_ceiling(retry_after: float, expected: float) -> None:
    decision = decide(900, Outcome("rate_limited", retry_after_s=retry_after), now=NOW, params=EXACT)
    assert decision.next_poll_at == after(expected)


def test_gone_returns_max_interval_as_a_safe_default() -> None:
    decision = decide(1234, Outcome("gone"), now=NOW, rng=random.Random(1))
    assert decision == Decision(1234, after(86400), "gone", None)


# --- publisher and HTTP floors -----------------------------------------------------------------


def test_ttl_is_a_floor_on_the_interval() -> None:
    decision = decide(900, Outcome("new_entries", new_entries=1, ttl_minutes=60), now=NOW, params=EXACT)
    assert decision.interval_s == 3600 and decision.next_poll_at == after(3600)
    assert decision.reason == "new-entries+ttl-floor"


def test_ttl_below_the_interval_changes_nothing() -> None:
    decision = decide(4000, Outcome("not_modified", ttl_minutes=60), now=NOW, params=EXACT)
    assert decision.interval_s == 5000 and decision.reason == "not-modified"


def test_ttl_floor_never_exceeds_max() -> None:
    decision = decide(900, Outcome("not_modified", ttl_minutes=7 * 24 * 60), now=NOW, params=EXACT)
    assert decision.interval_s == 86400 and decision.reason == "not-modified+ttl-floor"


def test_max_age_floor_and_the_larger_floor_wins() -> None:
    only_max_age = decide(900, Outcome("not_modified", max_age_s=7200), now=NOW, params=EXACT)
    assert (only_max_age.interval_s, only_max_age.reason) == (7200, "not-modified+max-age-floor")
    both = decide(900, Outcome("not_modified", max_age_s=7200, ttl_minutes=180), now=NOW, params=EXACT)
    assert (both.interval_s, both.reason) == (10800, "not-modified+ttl-floor")


# --- skipHours / skipDays ----------------------------------------------------------------------


def skipping(hours: Iterable[int] = (), days: Iterable[str] = ()) -> Outcome:
    return Outcome("not_modified", skip_hours=frozenset(hours), skip_days=frozenset(days))


def at_override(seconds: float, outcome: Outcome) -> Decision:
    """An override pins the delay, so the skip-window arithmetic can be checked exactly."""
    return decide(None, outcome, now=NOW, params=EXACT, override_interval_s=seconds)


def test_skip_hour_starting_exactly_at_the_poll_time_shifts_to_its_end() -> None:
    decision = at_override(3600, skipping({13}))  # lands on 13:00:00, the first second of hour 13
    assert decision.next_poll_at == datetime(2024, 3, 6, 14, 0, tzinfo=UTC)
    assert decision.reason == "override+skip-window"
    assert decision.interval_s == 3600  # shifting never feeds back into the interval


def test_poll_just_before_or_at_the_end_of_a_skip_hour_is_not_shifted() -> None:
    assert at_override(3599, skipping({13})).next_poll_at == datetime(2024, 3, 6, 12, 59, 59, tzinfo=UTC)
    end = at_override(7200, skipping({13}))
    assert end.next_poll_at == datetime(2024, 3, 6, 14, 0, tzinfo=UTC) and end.reason == "override"


def test_consecutive_skip_hours_across_midnight() -> None:
    decision = at_override(11.5 * 3600, skipping({22, 23, 0, 1}))  # lands 23:30
    assert decision.next_poll_at == datetime(2024, 3, 7, 2, 0, tzinfo=UTC)


def test_skip_day_covering_the_whole_next_day() -> None:
    decision = at_override(86400, skipping(days={"Thursday"}))  # lands Thursday 12:00
    assert decision.next_poll_at == datetime(2024, 3, 8, 0, 0, tzinfo=UTC)  # Friday 00:00
    with_hour = at_override(86400, skipping({0}, {"Thursday"}))
    assert with_hour.next_poll_at == datetime(2024, 3, 8, 1, 0, tzinfo=UTC)


def test_day_names_are_case_insensitive_and_unknown_values_ignored() -> None:
    decision = at_override(86400, skipping({24, -1}, {"thursday", "Caturday"}))
    assert decision.next_poll_at == datetime(2024, 3, 8, 0, 0, tzinfo=UTC)


def test_all_hours_or_all_days_skipped_is_ignored_instead_of_looping() -> None:
    all_hours = at_override(3600, skipping(set(range(24))))
    assert all_hours.next_poll_at == after(3600) and all_hours.reason == "override"
    every_day = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
    assert at_override(3600, skipping(days=every_day)).next_poll_at == after(3600)
    # All days ignored, but the hours still apply.
    assert at_override(3600, skipping({13}, every_day)).next_poll_at == after(7200)


def test_skip_windows_also_delay_retries() -> None:
    outcome = Outcome("rate_limited", retry_after_s=3600, skip_hours=frozenset({13}))
    decision = decide(900, outcome, now=NOW, params=EXACT)
    assert decision.next_poll_at == after(7200) and decision.reason == "retry-after+skip-window"


# --- EWMA ----------------------------------------------------------------------------------------

T0 = datetime(2024, 3, 6, 6, 0, tzinfo=UTC)
HOURLY_ISH = (T0, T0 + timedelta(hours=1), T0 + timedelta(hours=3), T0 + timedelta(hours=4))
# gaps 3600, 7200, 3600:  e = 3600 → 0.3·7200 + 0.7·3600 = 4680 → 0.3·3600 + 0.7·4680 = 4356
HAND_EWMA = 4356.0


def test_interarrival_ewma_hand_computed() -> None:
    assert interarrival_ewma(HOURLY_ISH, 0.3) == pytest.approx(HAND_EWMA)


def test_interarrival_ewma_ignores_order_batches_and_old_history() -> None:
    shuffled = (HOURLY_ISH[2], HOURLY_ISH[0], HOURLY_ISH[3], HOURLY_ISH[1])
    assert interarrival_ewma(shuffled, 0.3) == pytest.approx(HAND_EWMA)
    # A batch stamped with one time is one arrival.
    assert interarrival_ewma((*HOURLY_ISH, HOURLY_ISH[3], HOURLY_ISH[1]), 0.3) == pytest.approx(HAND_EWMA)
    # Only the newest 20 distinct times count: an ancient 21st changes nothing...
    twenty = tuple(T0 + timedelta(minutes=10 * i + i * i) for i in range(20))
    ancient = datetime(2001, 1, 1, tzinfo=UTC)
    assert interarrival_ewma((ancient, *twenty), 0.3) == interarrival_ewma(twenty, 0.3)
    # ...while as one of 20 it dominates.
    assert interarrival_ewma((ancient, *twenty[1:]), 0.3) != interarrival_ewma(twenty[1:], 0.3)


def test_interarrival_ewma_needs_two_times_and_accepts_naive_as_utc() -> None:
    assert interarrival_ewma((), 0.3) is None
    assert interarrival_ewma((T0, T0), 0.3) is None
    naive = HOURLY_ISH[1].replace(tzinfo=None)
    assert interarrival_ewma((HOURLY_ISH[0], naive), 0.3) == 3600


def test_decide_blends_the_ewma_hand_computed() -> None:
    now = HOURLY_ISH[-1] + timedelta(minutes=10)  # 600 s of silence: less than the EWMA
    decision = decide(900, Outcome("not_modified", entry_times=HOURLY_ISH), now=now, params=EXACT)
    # 900 × 1.25 = 1125, then 0.5 · 4356 + 0.5 · 1125
    assert decision.interval_s == pytest.approx(2740.5)
    assert decision.ewma_s == pytest.approx(HAND_EWMA)
    assert decision.reason == "not-modified+ewma"


def test_ewma_target_is_clamped_before_blending() -> None:
    minutes_apart = tuple(T0 + timedelta(seconds=30 * i) for i in range(5))
    now = minutes_apart[-1] + timedelta(seconds=10)
    decision = decide(900, Outcome("new_entries", entry_times=minutes_apart), now=now, params=EXACT)
    assert decision.ewma_s == pytest.approx(30)
    assert decision.interval_s == pytest.approx(0.5 * 300 + 0.5 * 675)


def test_a_feed_gone_quiet_stops_pulling_the_interval_down() -> None:
    busy = tuple(T0 + timedelta(minutes=10 * i) for i in range(5))  # every 10 minutes ...
    now = busy[-1] + timedelta(days=10)  # ... then ten days of silence
    decision = decide(900, Outcome("not_modified", entry_times=busy), now=now, params=EXACT)
    silence = 10 * 86400
    target = min(0.3 * silence + 0.7 * 600, 86400)
    assert decision.ewma_s == pytest.approx(600)
    assert decision.interval_s == pytest.approx(0.5 * target + 0.5 * 1125)


def test_future_dated_entries_are_ignored() -> None:
    future = NOW + timedelta(days=365)
    decision = decide(900, Outcome("not_modified", entry_times=(NOW - timedelta(hours=1), future)), now=NOW)
    assert decision.ewma_s is None and "+ewma" not in decision.reason


# --- jitter ----------------------------------------------------------------------------------


def test_jitter_stays_within_15_percent_and_actually_spreads() -> None:
    rng = random.Random(20240306)
    delays = [
        (decide(900, NOT_MODIFIED, now=NOW, rng=rng).next_poll_at - NOW).total_seconds() for _ in range(2000)
    ]
    assert all(1125 * 0.85 <= d <= 1125 * 1.15 for d in delays)
    assert min(delays) < 1125 * 0.87 and max(delays) > 1125 * 1.13


def test_error_backoff_is_jittered_too() -> None:
    rng = random.Random(3)
    delays = {
        (
            decide(900, Outcome("error", consecutive_errors=3), now=NOW, rng=rng).next_poll_at - NOW
        ).total_seconds()
        for _ in range(200)
    }
    assert all(240 * 0.85 <= d <= 240 * 1.15 for d in delays) and len(delays) > 100


def test_seeded_rng_is_deterministic() -> None:
    first = decide(900, NEW, now=NOW, rng=random.Random(42))
    assert decide(900, NEW, now=NOW, rng=random.Random(42)) == first
    assert decide(900, NEW, now=NOW, rng=random.Random(43)) != first


# --- override ----------------------------------------------------------------------------------


def test_override_fixes_the_interval_over_adaptation_and_ttl() -> None:
    outcome = Outcome("new_entries", new_entries=5, ttl_minutes=120, entry_times=HOURLY_ISH)
    decision = decide(5000, outcome, now=NOW, params=EXACT, override_interval_s=1800)
    assert (decision.interval_s, decision.next_poll_at, decision.reason) == (1800, after(1800), "override")


def test_override_still_obeys_errors_and_bounds() -> None:
    error = decide(
        5000, Outcome("error", consecutive_errors=2), now=NOW, params=EXACT, override_interval_s=1800
    )
    assert (error.interval_s, error.next_poll_at, error.reason) == (1800, after(120), "error-backoff")
    assert decide(None, NEW, now=NOW, params=EXACT, override_interval_s=10).interval_s == 300


# --- input validation ----------------------------------------------------------------------------


def test_naive_now_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        decide(900, NEW, now=datetime(2024, 1, 1))


def test_non_utc_now_is_converted() -> None:
    local = NOW.astimezone(timezone(timedelta(hours=5)))
    decision = decide(900, NEW, now=local, params=EXACT)
    assert decision.next_poll_at == after(675) and decision.next_poll_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "bad",
    [{"min_s": 0}, {"min_s": 10, "max_s": 5}, {"jitter": 1.0}, {"ewma_alpha": 0}, {"backoff_cap_s": 10}],
)
def test_nonsensical_params_are_rejected(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="invalid ScheduleParams"):
        ScheduleParams(**bad)


# --- invariants ----------------------------------------------------------------------------------

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
datetimes_utc = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
outcomes = st.builds(
    Outcome,
    kind=st.sampled_from(
        ["not_modified", "new_entries", "no_new", "error", "rate_limited", "forbidden", "gone"]
    ),
    new_entries=st.integers(0, 100),
    retry_after_s=st.none() | st.floats(-1e3, 1e13),
    ttl_minutes=st.none() | st.integers(0, 10**6),
    max_age_s=st.none() | st.floats(0, 1e9),
    skip_hours=st.frozensets(st.integers(0, 23)),
    skip_days=st.frozensets(st.sampled_from(WEEKDAYS)),
    entry_times=st.lists(datetimes_utc, max_size=25).map(tuple),
    consecutive_errors=st.integers(0, 10**4),
    not_before_s=st.none() | st.floats(-1e3, 1e13),
)


@given(
    previous=st.none() | st.floats(-1e9, 1e12),
    outcome=outcomes,
    now=datetimes_utc,
    override=st.none() | st.floats(0, 1e7),
    seed=st.integers(0, 2**32),
)
def test_invariants(
    previous: float | None, outcome: Outcome, now: datetime, override: float | None, seed: int
) -> None:
    params = ScheduleParams()
    decision = decide(previous, outcome, now=now, override_interval_s=override, rng=random.Random(seed))
    assert params.min_s <= decision.interval_s <= params.max_s
    assert decision.next_poll_at > now
    assert decision.next_poll_at.utcoffset() == timedelta(0)
    latest = max(RETRY_AFTER_CEILING_S, params.max_s * (1 + params.jitter)) + 8 * 86400
    assert decision.next_poll_at <= now + timedelta(seconds=latest)
    if outcome.kind == "forbidden" and outcome.retry_after_s is None:
        assert decision.next_poll_at >= now + timedelta(seconds=FORBIDDEN_WAIT_S)
    if outcome.kind != "gone" and outcome.not_before_s is not None and outcome.not_before_s > 0:
        wait = min(outcome.not_before_s, RETRY_AFTER_CEILING_S)
        assert decision.next_poll_at >= now + timedelta(seconds=wait)
    if outcome.kind in ("error", "rate_limited", "forbidden") and outcome.retry_after_s is not None:
        assert decision.next_poll_at >= now + timedelta(
            seconds=min(outcome.retry_after_s, RETRY_AFTER_CEILING_S)
        )
    if outcome.kind != "gone" and len(outcome.skip_hours) < 24:
        assert decision.next_poll_at.hour not in outcome.skip_hours
    if outcome.kind != "gone" and len(outcome.skip_days) < 7:
        assert WEEKDAYS[decision.next_poll_at.weekday()] not in outcome.skip_days


successes = st.builds(
    Outcome,
    kind=st.sampled_from(["not_modified", "new_entries", "no_new"]),
    ttl_minutes=st.none() | st.integers(0, 10**6),
    max_age_s=st.none() | st.floats(0, 1e9),
    entry_times=st.lists(datetimes_utc, max_size=25).map(tuple),
)


@given(previous=st.floats(300, 86400), outcome=successes, now=datetimes_utc)
def test_without_jitter_or_skips_a_success_polls_after_exactly_the_interval(
    previous: float, outcome: Outcome, now: datetime
) -> None:
    decision = decide(previous, outcome, now=now, params=EXACT)
    assert decision.next_poll_at == now + timedelta(seconds=decision.interval_s)


# --- issue 27: 403, rate-limit headers, per-feed clamps, push only ------------------------------------------


def test_a_403_waits_at_least_four_hours_unless_the_server_names_a_time() -> None:
    """Seeds 000/003: a 403 backs off to 4 hours minimum, or respects Retry-After."""
    first = decide(900, Outcome("forbidden", consecutive_errors=1), now=NOW, params=EXACT)
    assert (first.reason, first.next_poll_at, first.interval_s) == ("forbidden", after(FORBIDDEN_WAIT_S), 900)
    named = decide(900, Outcome("forbidden", retry_after_s=600, consecutive_errors=1), now=NOW, params=EXACT)
    assert (named.reason, named.next_poll_at) == ("forbidden+retry-after", after(600))
    jittered = decide(900, Outcome("forbidden", consecutive_errors=1), now=NOW, rng=random.Random(1))
    assert after(FORBIDDEN_WAIT_S) <= jittered.next_poll_at <= after(FORBIDDEN_WAIT_S * 1.15)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "3600"}, 3600.0),  # seconds to wait
        (
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW.timestamp()) + 120)},
            120.0,
        ),  # instant
        ({"x-ratelimit-remaining": "5", "x-ratelimit-reset": "3600"}, None),  # some left
        ({"x-ratelimit-remaining": "0"}, None),  # no reset named
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "soon"}, None),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW.timestamp()) - 5)}, None),  # past
    ],
)
def test_rate_limit_headers(headers: dict[str, str], expected: float | None) -> None:
    assert rate_limit_wait(headers, NOW) == expected


def test_a_spent_rate_limit_holds_the_next_poll_until_it_resets() -> None:
    spent = decide(900, Outcome("not_modified", not_before_s=7200), now=NOW, params=EXACT)
    assert (spent.next_poll_at, spent.reason) == (after(7200), "not-modified+rate-limit")
    assert spent.interval_s == 900 * EXACT.up  # the carried interval is not the server's reset
    sooner = decide(900, Outcome("not_modified", not_before_s=60), now=NOW, params=EXACT)
    assert sooner.reason == "not-modified"  # the reset comes before the next poll anyway


def test_a_feeds_own_interval_clamps() -> None:
    params = ScheduleParams(jitter=0, min_s=300, max_s=86400)
    assert feed_params(params, None, None) is params
    narrow = feed_params(params, 3600, 7200)
    assert (narrow.min_s, narrow.max_s) == (3600, 7200)
    assert decide(None, NEW, now=NOW, params=narrow).interval_s == 3600  # 900 × 0.75, clamped up
    assert decide(7000, NOT_MODIFIED, now=NOW, params=narrow).interval_s == 7200
    above = feed_params(params, 100_000, None)
    assert (above.min_s, above.max_s) == (100_000, 100_000)  # a minimum above the global maximum wins


def test_push_only_feeds_are_not_polled_while_the_lease_lasts() -> None:
    until = NOW + timedelta(days=9)
    assert push_wait(until, NOW, safety_s=86400, push_only=False) == 86400
    assert push_wait(until, NOW, safety_s=86400, push_only=True) == 9 * 86400
    assert push_wait(NOW + timedelta(hours=1), NOW, safety_s=86400, push_only=True) == 86400
