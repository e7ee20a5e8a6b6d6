"""One structured line per feed per poll run (pure; seed 004 §2.5): what the poll did, for log analysis.

The poll logs it at INFO with these fields as the record's extras; with JSON logging (stderr not a
terminal) that is one JSON object per line, which `jq 'select(.run_id == 42)'` groups by run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from host.events import iso_z
from modules.rss.ingest.schedule import Decision


def fields(
    *,
    run_id: str,
    feed_id: int,
    url: str,
    status: int | str | None,
    counts: Mapping[str, int],
    size: int,
    seconds: float,
    decision: Decision,
    now: datetime,
    error: str | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "run_id": run_id,
        "feed_id": feed_id,
        "url": url,
        "status": status,
        "new": counts.get("new", 0),
        "updated": counts.get("updated", 0),
        "unchanged": counts.get("unchanged", 0),
        "bytes": size,
        "duration_ms": round(seconds * 1000),
        "next_poll": iso_z(decision.next_poll_at),
        "next_poll_in_s": round((decision.next_poll_at - now).total_seconds()),
        "reason": decision.reason,
    }
    if error:
        out["error"] = error
    return out


def message(f: Mapping[str, Any]) -> str:
    """The human part of the line: `feed 7: 200, 3 new, 1 updated, 40 unchanged; next poll in 15 min (ewma)`."""
    head = f"feed {f['feed_id']}: {f['status']}"
    if f.get("error"):
        head += f" ({f['error']})"
    counts = f"{f['new']} new, {f['updated']} updated, {f['unchanged']} unchanged"
    return f"{head}, {counts}; next poll in {f['next_poll_in_s'] / 60:.0f} min ({f['reason']})"
