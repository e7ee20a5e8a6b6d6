"""A token bucket per host name (pure: the caller passes the clock's readings).

`reserve` hands out start times instead of refusing: tokens may go negative, so concurrent callers queue
in arrival order, each `1/rate` after the previous one once the burst is spent. Over any window of `t`
seconds at most `burst + rate × t` reservations start. `wait` + `take` refuse instead (console logins).
"""

from __future__ import annotations


class TokenBucket:
    __slots__ = ("_stamp", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a token bucket needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = float(burst)
        self._tokens = float(burst)
        self._stamp = now

    def _refill(self, now: float) -> None:
        if now > self._stamp:
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now

    def reserve(self, now: float) -> float:
        """Take one token; returns when the request may start (`now` when a token is there)."""
        self._refill(now)
        self._tokens -= 1
        return now if self._tokens >= 0 else now - self._tokens / self.rate

    def wait(self, now: float) -> float:
        """Seconds until a token is there (0: one is there now); takes nothing. For callers that refuse
        instead of queueing: `take` only after every bucket involved said 0."""
        self._refill(now)
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.rate

    def take(self, now: float) -> None:
        self._refill(now)
        self._tokens -= 1

    def full_at(self) -> float:
        """When the bucket is full again: from then on it is indistinguishable from a new one."""
        return self._stamp + (self.burst - self._tokens) / self.rate
