"""Circuit breaker decisions (pure): when to stop trying something that keeps failing, and when to probe.

The breaker counts failures among the last `window` attempts rather than only failures in a row, so a
flapping source (error, ok, error, ok …) opens it too (seed 001 §7: "open circuit if over error budget").
Open: no attempts until the cool-down ends; the next attempt is the half-open probe. A probe that succeeds
closes the circuit and forgets the history; one that fails opens it again with twice the cool-down
(capped). The caller stores `BreakerState` (a feed's poll state, a host's entry in memory) and turns the
returned cool-down into a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from host.backoff import Backoff

Phase = Literal["closed", "open"]


@dataclass(frozen=True, slots=True)
class BreakerParams:
    failures: int = 5  # failures among the last `window` attempts that open the circuit
    window: int = 10
    cooldown_s: float = 3600.0
    max_cooldown_s: float = 86400.0

    def __post_init__(self) -> None:
        if not (1 <= self.failures <= self.window <= 30 and 0 < self.cooldown_s <= self.max_cooldown_s):
            raise ValueError("BreakerParams: need 1 <= failures <= window <= 30 and 0 < cooldown <= max")


@dataclass(frozen=True, slots=True)
class BreakerState:
    phase: Phase = "closed"
    history: int = 0  # bit i set: the (i+1)-th most recent attempt failed
    opens: int = 0  # openings since the last success (each doubles the cool-down)

    def recent_failures(self, window: int) -> int:
        return (self.history & ((1 << window) - 1)).bit_count()


@dataclass(frozen=True, slots=True)
class Verdict:
    state: BreakerState
    cooldown_s: float | None  # set when the circuit (re)opened: no attempt before now + cooldown_s
    transition: Literal["opened", "closed"] | None


def record(state: BreakerState, failed: bool, params: BreakerParams = BreakerParams()) -> Verdict:
    """The breaker after one attempt; an attempt while open is the probe."""
    history = ((state.history << 1) | int(failed)) & ((1 << params.window) - 1)
    if not failed:
        if state.phase == "open":
            return Verdict(BreakerState(), None, "closed")
        return Verdict(BreakerState("closed", history, 0), None, None)
    probe_failed = state.phase == "open"
    if probe_failed or (history.bit_count() >= params.failures):
        opens = state.opens + 1
        cooldown = Backoff(params.cooldown_s, params.max_cooldown_s).delay(opens)
        return Verdict(BreakerState("open", history, opens), cooldown, None if probe_failed else "opened")
    return Verdict(BreakerState("closed", history, state.opens), None, None)


Admission = Literal["pass", "probe", "refuse"]


def admit(state: BreakerState, *, now: float, retry_at: float, probing: bool) -> Admission:
    """May an attempt start now? Closed: pass. Open: refuse until `retry_at`, then let exactly one probe
    through (`probing` is set while it runs; others are refused until its result is recorded)."""
    if state.phase == "closed":
        return "pass"
    return "probe" if now >= retry_at and not probing else "refuse"
