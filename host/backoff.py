"""One backoff policy for everything that retries: AI calls, embeddings, article fetches, feed errors,
the outbox relay, supervised services, bus redelivery and circuit-breaker cool-downs.

Exponential from `base_s`, doubling per failed attempt, capped at `cap_s`; a server's Retry-After is
honoured when it asks for longer, up to `retry_after_cap_s` (a misread header must not park work for
months). Pure, so every caller's schedule is tested without waiting.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_MAX_EXPONENT = 62  # 2**62 × any sane base is past every cap; keeps the float finite


@dataclass(frozen=True, slots=True)
class Backoff:
    base_s: float
    cap_s: float
    retry_after_cap_s: float | None = None  # None: Retry-After is capped at cap_s
    jitter: float = 0.0  # ± fraction, so many clients that failed together don't retry together

    def __post_init__(self) -> None:
        if not 0 < self.base_s <= self.cap_s:
            raise ValueError(f"backoff needs 0 < base_s <= cap_s, got {self.base_s}, {self.cap_s}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {self.jitter}")

    def delay(
        self, attempt: int, retry_after_s: float | None = None, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based; 0 counts as 1)."""
        exponent = min(max(attempt, 1) - 1, _MAX_EXPONENT)
        delay = min(self.cap_s, self.base_s * 2.0**exponent)
        if self.jitter:
            delay *= (rng or random).uniform(1 - self.jitter, 1 + self.jitter)
        if retry_after_s is not None:
            ceiling = self.cap_s if self.retry_after_cap_s is None else self.retry_after_cap_s
            delay = max(delay, min(retry_after_s, ceiling))
        return delay
