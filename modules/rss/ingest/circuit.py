"""Circuit breakers of the poll (decisions in host/breaker.py, pure): per feed around a poll's outcome, and
the parameters of the fetcher's per-host breaker.

A failed poll may open the circuit: the feed is then not claimed before the cool-down ends (its
`next_poll_at` moves), and that next poll is the probe. `fields` gives the poll_state columns to write.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from host.breaker import BreakerParams, record
from modules.rss import metrics, store
from modules.rss.ingest.schedule import Decision

log = logging.getLogger("feedeater.rss.poll")


def params(settings: Any) -> BreakerParams | None:
    """The breaker's parameters from the rss settings; None when `circuit_failures` is 0 (no breaker)."""
    failures = int(settings["circuit_failures"])
    if failures == 0:
        return None
    window = int(settings["circuit_window"])
    return BreakerParams(
        failures=min(failures, window),
        window=window,
        cooldown_s=float(settings["circuit_cooldown_minutes"]) * 60,
    )


def host_params(settings: Any) -> BreakerParams | None:
    """The fetcher's per-host breaker: `host_circuit_failures` failures in a row (None when 0)."""
    failures = int(settings["host_circuit_failures"])
    if failures == 0:
        return None
    cooldown = float(settings["host_circuit_cooldown_seconds"])
    return BreakerParams(
        failures=failures, window=failures, cooldown_s=cooldown, max_cooldown_s=max(cooldown, 3600)
    )


def fields(
    claim: store.Claim, decision: Decision, *, failed: bool, now: datetime, params: BreakerParams | None
) -> dict[str, Any]:
    """poll_state columns after this poll (scheduled by `decision`): the breaker's state and, when it
    opened, the later poll time."""
    if params is None:
        return {}
    verdict = record(claim.circuit, failed, params)
    out: dict[str, Any] = {
        "circuit": verdict.state.phase,
        "circuit_history": verdict.state.history,
        "circuit_opens": verdict.state.opens,
    }
    if verdict.transition is not None:
        metrics.CIRCUIT.labels(verdict.transition).inc()
    if verdict.transition == "closed":
        log.info("feed %s: probe succeeded; circuit closed", claim.feed.id)
        out["circuit_opened_at"] = None
    if verdict.cooldown_s is not None:
        probe_at = max(decision.next_poll_at, now + timedelta(seconds=verdict.cooldown_s))
        out |= {"next_poll_at": probe_at, "interval_reason": decision.reason + "+circuit-open"}
        if verdict.transition == "opened":
            out["circuit_opened_at"] = now
            log.warning(
                "feed %s: %d of its last %d polls failed; circuit open, one probe at %s",
                claim.feed.id,
                verdict.state.recent_failures(params.window),
                params.window,
                probe_at.isoformat(timespec="seconds"),
            )
    return out
