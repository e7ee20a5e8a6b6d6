"""The digest's feed-health section from rss_public.feed_health rows (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

UNHEALTHY_BELOW = 0.5


def report(feeds: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    polled = [f for f in feeds if f["enabled"] and f["polls_ok"] + f["polls_failed"] > 0]
    ok = sum(f["polls_ok"] for f in polled)
    failed = sum(f["polls_failed"] for f in polled)
    unhealthy = [
        f["title"] or f["url"]
        for f in polled
        if f["dead"] or f["stale"] or f["health"] < UNHEALTHY_BELOW or f["consecutive_errors"] >= 3
    ]
    return {
        "feeds": len(polled),
        "success_rate": ok / (ok + failed) if ok + failed else 1.0,
        "errors": failed,
        "unhealthy": unhealthy,
    }
