"""Adaptive polling schedule: when to fetch a feed next (design doc §4.6 / §6).

`decide` is a pure function of the previous interval, what the last fetch saw and the clock,
so the whole policy is testable with fixed inputs and a seeded `random.Random`.

Policy, in order:

1. Errors. Retry-After (429/503) pauses exactly that long, but never less than
   `RETRY_AFTER_FLOOR_S` (a 0 or past-date value must not cause a hot loop) and never more than
   `RETRY_AFTER_CEILING_S` (a larger value is almost surely a misparsed header; one extra request a
   month later is harmless). Without Retry-After, and for other errors, back off
   `backoff_base_s × 2^(consecutive_errors-1)` capped at `backoff_cap_s` (1, 2, 4 … 60 minutes).
   Errors never change the carried interval, so recovery resumes the learned cadence.
2. "gone" (410): the caller marks the feed dead; we still return `now + max_s` as a safe default.
   "forbidden" (403): the server refuses us; wait Retry-After when it names a time, else at least
   `FORBIDDEN_WAIT_S` (4 h, seeds 000/003), more when the error backoff is already longer.
3. A per-feed override fixes the base interval (clamped to [min_s, max_s]); adaptation and the
   ttl/max-age floors are skipped because the operator chose the cadence. Errors, skip windows and
   jitter still apply.
4. Otherwise, from the previous interval (initial_s on the first decision): 304 or nothing new → ×up,
   new entries → ×down, clamp; blend with the inter-arrival EWMA of the feed's entries (a silence
   longer than the EWMA counts as one more gap, so a feed gone quiet slows down); floor at RSS ttl /
   Cache-Control max-age (never above max_s). The floors are part of the carried interval.
5. Jitter (±`jitter` of the delay, error backoff included; Retry-After is exempt because the server
   named the time), then shift out of skipHours/skipDays (retries too; only "gone" is not shifted).
   Jitter comes first so the result is always outside a quiet window.
6. A server that says its rate limit is spent (X-RateLimit-Remaining: 0) is not asked again before its
   X-RateLimit-Reset, whatever the outcome (`Outcome.not_before_s`).

Per feed, `feed_params` narrows the clamps to the feed's own min/max interval (seed 001 §8).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Literal

from host.backoff import Backoff

EWMA_WINDOW = 20  # recent publication times used for the inter-arrival EWMA (§6.3)
RETRY_AFTER_FLOOR_S = 60.0
RETRY_AFTER_CEILING_S = 30 * 86400.0
FORBIDDEN_WAIT_S = 4 * 3600.0  # a 403 is not asked again sooner (CordFeeder design: "back off to 4 hours")
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

OutcomeKind = Literal["not_modified", "new_entries", "no_new", "error", "rate_limited", "forbidden", "gone"]


@dataclass(frozen=True, slots=True)
class ScheduleParams:
    initial_s: float = 900
    min_s: float = 300
    max_s: float = 86400
    up: float = 1.25
    down: float = 0.75
    ewma_alpha: float = 0.3
    blend_lambda: float = 0.5
    jitter: float = 0.15
    backoff_base_s: float = 60
    backoff_cap_s: float = 3600  # errors: 1, 2, 4 … minutes, capped

    def __post_init__(self) -> None:
        """Reject settings that would break the invariants (poll in the future, interval in range)."""
        problems = [
            name
            for name, ok in (
                ("0 < min_s <= max_s", 0 < self.min_s <= self.max_s),
                ("up >= 1", self.up >= 1),
                ("0 < down <= 1", 0 < self.down <= 1),
                ("0 < ewma_alpha <= 1", 0 < self.ewma_alpha <= 1),
                ("0 <= blend_lambda <= 1", 0 <= self.blend_lambda <= 1),
                ("0 <= jitter < 1", 0 <= self.jitter < 1),
                ("0 < backoff_base_s <= backoff_cap_s", 0 < self.backoff_base_s <= self.backoff_cap_s),
            )
            if not ok
        ]
        if problems:
            raise ValueError(f"invalid ScheduleParams: need {', '.join(problems)}")


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    new_entries: int = 0
    retry_after_s: float | None = None  # 429/503 Retry-After
    ttl_minutes: int | None = None  # RSS <ttl>
    max_age_s: float | None = None  # Cache-Control max-age
    skip_hours: frozenset[int] = frozenset()  # 0..23 (UTC)
    skip_days: frozenset[str] = frozenset()  # "Monday".."Sunday"
    entry_times: tuple[datetime, ...] = ()  # publication times of recent entries (any order)
    consecutive_errors: int = 0  # including this one, for kind error/rate_limited/forbidden
    not_before_s: float | None = None  # the server's rate limit is spent until then (X-RateLimit-Reset)


@dataclass(frozen=True, slots=True)
class Decision:
    interval_s: float  # base interval carried into the next decision (no jitter/skip/backoff)
    next_poll_at: datetime  # UTC
    reason: str  # e.g. "not-modified+ewma+skip-window"
    ewma_s: float | None  # inter-arrival EWMA of entry_times (None if < 2 distinct times)


def decide(
    previous_interval_s: float | None,
    outcome: Outcome,
    *,
    now: datetime,
    params: ScheduleParams = ScheduleParams(),
    override_interval_s: float | None = None,
    rng: random.Random | None = None,
) -> Decision:
    """Choose the next poll time after a fetch with `outcome` (see the module docstring)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    now = now.astimezone(UTC)
    rng = random.Random() if rng is None else rng
    # Clock-skewed publishers date entries in the future; those say nothing about cadence.
    times = tuple(t for t in map(_as_utc, outcome.entry_times) if t <= now)
    ewma = interarrival_ewma(times, params.ewma_alpha)
    carried = _clamp(
        override_interval_s
        if override_interval_s is not None
        else (params.initial_s if previous_interval_s is None else previous_interval_s),
        params,
    )

    if outcome.kind == "gone":
        return Decision(carried, now + timedelta(seconds=params.max_s), "gone", ewma)

    if outcome.kind == "forbidden":
        if outcome.retry_after_s is not None:
            pause = min(max(outcome.retry_after_s, RETRY_AFTER_FLOOR_S), RETRY_AFTER_CEILING_S)
            return _finish(carried, now, pause, "forbidden+retry-after", outcome, ewma)
        backoff = Backoff(params.backoff_base_s, params.backoff_cap_s).delay(outcome.consecutive_errors)
        pause = max(FORBIDDEN_WAIT_S, backoff) * (1 + rng.uniform(0, params.jitter))  # jitter only upwards
        return _finish(carried, now, pause, "forbidden", outcome, ewma)

    if outcome.kind in ("error", "rate_limited"):
        if outcome.retry_after_s is not None:
            pause = min(max(outcome.retry_after_s, RETRY_AFTER_FLOOR_S), RETRY_AFTER_CEILING_S)
            return _finish(carried, now, pause, "retry-after", outcome, ewma)
        backoff = Backoff(params.backoff_base_s, params.backoff_cap_s).delay(outcome.consecutive_errors)
        return _finish(carried, now, _jittered(backoff, params, rng), "error-backoff", outcome, ewma)

    if override_interval_s is not None:
        return _finish(carried, now, _jittered(carried, params, rng), "override", outcome, ewma)

    interval, reason = _adapt(carried, outcome, now, times, ewma, params)
    return _finish(interval, now, _jittered(interval, params, rng), reason, outcome, ewma)


def feed_params(params: ScheduleParams, min_s: float | None, max_s: float | None) -> ScheduleParams:
    """The feed's own interval clamps (seed 001 §8) in place of the global ones; a feed minimum above the
    maximum raises the maximum with it."""
    if min_s is None and max_s is None:
        return params
    low = params.min_s if min_s is None else min_s
    high = max(params.max_s if max_s is None else max_s, low)
    return replace(
        params, min_s=low, max_s=high, backoff_base_s=min(params.backoff_base_s, params.backoff_cap_s)
    )


def rate_limit_wait(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds until the server's rate limit resets when it says none is left (X-RateLimit-Remaining: 0):
    X-RateLimit-Reset as epoch seconds (GitHub style) or as seconds to wait; None otherwise."""
    remaining = headers.get("x-ratelimit-remaining", "").strip()
    reset = headers.get("x-ratelimit-reset", "").strip()
    if remaining != "0" or not reset:
        return None
    try:
        value = float(reset)
    except ValueError:
        return None
    if value > 1e9:  # an instant, not a duration
        value -= now.timestamp()
    return value if value > 0 else None


def interarrival_ewma(times: Sequence[datetime], alpha: float) -> float | None:
    """EWMA (seconds) of the gaps between the last `EWMA_WINDOW` distinct publication times.

    Identical timestamps are one arrival (a batch published at once), otherwise a feed that stamps
    every item with the same date would look like it publishes continuously. The EWMA starts at the
    oldest gap, so the newest gaps weigh most.
    """
    recent = sorted({_as_utc(t) for t in times})[-EWMA_WINDOW:]
    if len(recent) < 2:
        return None
    gaps = [(b - a).total_seconds() for a, b in pairwise(recent)]
    ewma = gaps[0]
    for gap in gaps[1:]:
        ewma = alpha * gap + (1 - alpha) * ewma
    return ewma


def _adapt(
    interval: float,
    outcome: Outcome,
    now: datetime,
    times: tuple[datetime, ...],
    ewma: float | None,
    params: ScheduleParams,
) -> tuple[float, str]:
    """The adaptive part for a successful fetch: factor, EWMA blend, publisher/HTTP floors."""
    if outcome.kind == "new_entries":
        interval, reason = _clamp(interval * params.down, params), "new-entries"
    else:
        reason = "not-modified" if outcome.kind == "not_modified" else "no-new-entries"
        interval = _clamp(interval * params.up, params)

    if ewma is not None:
        # The silence since the newest entry is a lower bound on the next gap. Once it exceeds
        # the EWMA, count it as one more gap: a feed that went quiet must stop pulling the interval
        # towards its old busy cadence.
        silence = (now - max(times)).total_seconds()
        target = params.ewma_alpha * silence + (1 - params.ewma_alpha) * ewma if silence > ewma else ewma
        blended = params.blend_lambda * _clamp(target, params) + (1 - params.blend_lambda) * interval
        interval, reason = _clamp(blended, params), reason + "+ewma"

    floors = [
        (min(seconds, params.max_s), suffix)
        for seconds, suffix in (
            (None if outcome.ttl_minutes is None else outcome.ttl_minutes * 60.0, "+ttl-floor"),
            (outcome.max_age_s, "+max-age-floor"),
        )
        if seconds is not None
    ]
    if floors:
        floor, suffix = max(floors)
        if floor > interval:
            interval, reason = floor, reason + suffix
    return interval, reason


def _finish(
    interval: float, now: datetime, delay_s: float, reason: str, outcome: Outcome, ewma: float | None
) -> Decision:
    """Place the poll `delay_s` after `now`, not before the server's rate limit resets, shifted out of the
    publisher's quiet windows."""
    at = now + timedelta(seconds=delay_s)
    if outcome.not_before_s is not None and outcome.not_before_s > delay_s:
        at = now + timedelta(seconds=min(outcome.not_before_s, RETRY_AFTER_CEILING_S))
        reason += "+rate-limit"
    shifted = _skip_windows(at, outcome.skip_hours, outcome.skip_days)
    return Decision(interval, shifted, reason + ("+skip-window" if shifted != at else ""), ewma)


def _skip_windows(at: datetime, skip_hours: frozenset[int], skip_days: frozenset[str]) -> datetime:
    """Move `at` forward to the first instant outside skipHours/skipDays (UTC).

    Out-of-range values are ignored, and so is a set that covers every hour (or every day): taken
    literally it forbids polling forever, which no publisher can mean. With at least one free
    hour and one free day the loop ends within 8 days of steps.
    """
    hours = {h for h in skip_hours if 0 <= h <= 23}
    days = {_DAY_NAMES.index(d.capitalize()) for d in skip_days if d.capitalize() in _DAY_NAMES}
    hours = set() if len(hours) == 24 else hours
    days = set() if len(days) == 7 else days
    while True:
        if at.weekday() in days:
            at = at.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        elif at.hour in hours:
            at = at.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        else:
            return at


def _jittered(delay_s: float, params: ScheduleParams, rng: random.Random) -> float:
    """Spread polls by ±jitter so feeds that fail or start together do not stay in lockstep."""
    return delay_s * (1 + rng.uniform(-params.jitter, params.jitter))


def _clamp(seconds: float, params: ScheduleParams) -> float:
    return min(max(seconds, params.min_s), params.max_s)


def _as_utc(t: datetime) -> datetime:
    """Feeds often give naive dates; by convention those are UTC."""
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)


PUSH_REASON = "+websub-safety-check"


def push_wait(push_until: datetime, now: datetime, *, safety_s: float, push_only: bool) -> float:
    """How long a successful poll's next visit waits while the hub pushes (until `push_until`, the lease's
    end): the safety check's interval, or for a push-only feed (seed 001 §8) no polling until the lease
    ends (a lost subscription is noticed then, and polling resumes)."""
    return max((push_until - now).total_seconds(), safety_s) if push_only else safety_s


def push_safety_check(decision: Decision, kind: OutcomeKind, *, now: datetime, safety_s: float) -> Decision:
    """While a WebSub subscription is active the hub brings new entries: a successful poll's next visit
    becomes a slow safety check. The carried interval is kept, so polling resumes the learned cadence
    when push fails; errors keep their own backoff (they say nothing about the hub)."""
    if kind in ("error", "rate_limited", "gone"):
        return decision
    at = max(decision.next_poll_at, now.astimezone(UTC) + timedelta(seconds=safety_s))
    return Decision(decision.interval_s, at, decision.reason + PUSH_REASON, decision.ewma_s)
