"""One structured line per feed per poll run (pure; seed 004 §2.5): what the poll did, for log analysis.

The poll logs it at INFO with these fields as the record's extras; with JSON logging (stderr not a
terminal) that is one JSON object per line, which `jq 'select(.run_id == 42)'` groups by run.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from host.events import iso_z
from modules.rss.ingest.diff import REASONS
from modules.rss.ingest.schedule import Decision
from modules.rss.model import Intents


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
    cutoff: datetime,
    lookback_hours: int,
    lookback_source: str,
) -> dict[str, Any]:
    """Seed 004 §2.5: the cutoff and where the lookback came from, the document's items (dated, undated,
    skipped) and whether the fetch was an ETag/Last-Modified hit or a changed document; `raw_same`: the
    unchanged items parse did not normalize again (their raw hash was stored)."""
    out: dict[str, Any] = {
        "run_id": run_id,
        "feed_id": feed_id,
        "url": url,
        "status": status,
        "etag_hit": status == 304,
        "changed": status == 200 and not counts.get("same_body") and not counts.get("parse_errors"),
        "items": counts.get("items", 0),
        "dated": counts.get("dated", 0),
        "undated": counts.get("undated", 0),
        "skipped": counts.get("skipped", 0) + counts.get("filtered", 0),
        "new": counts.get("new", 0),
        "updated": counts.get("updated", 0),
        "unchanged": counts.get("unchanged", 0),
        "raw_same": counts.get("raw_same", 0),  # of the unchanged: known by their raw hash (not normalized)
        "cutoff": iso_z(cutoff),
        "lookback_hours": lookback_hours,
        "lookback": lookback_source,
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
    """The human part of the line: `feed 7: 200, 42 items (40 dated, 2 undated, 0 skipped), 3 new,
    1 updated, 38 unchanged; cutoff …Z (48 h, default); next poll in 15 min (new-entries+ewma)`."""
    head = f"feed {f['feed_id']}: {f['status']}"
    if f.get("error"):
        head += f" ({f['error']})"
    elif f["etag_hit"]:
        head += " not modified"
    elif f["changed"]:
        head += (
            f", {f['items']} items ({f['dated']} dated, {f['undated']} undated, {f['skipped']} skipped),"
            f" {f['new']} new, {f['updated']} updated, {f['unchanged']} unchanged"
        )
    else:
        head += " unchanged body"
    window = f"cutoff {f['cutoff']} ({f['lookback_hours']} h, {f['lookback']})"
    return f"{head}; {window}; next poll in {f['next_poll_in_s'] / 60:.0f} min ({f['reason']})"


def item_decisions(intents: Intents, inserted: Collection[str]) -> list[tuple[str, str]]:
    """(guid, what intake decided) for every item of one intake, for the DEBUG line per item."""
    out: list[tuple[str, str]] = []
    for new in intents.new:
        if new.entry.guid not in inserted:
            out.append((new.entry.guid, "new, but stored by a concurrent writer first (theirs to announce)"))
        else:
            out.append(
                (
                    new.entry.guid,
                    f"new: {'realtime' if new.realtime else 'not realtime'}, {REASONS[new.reason]}",
                )
            )
    out += [(r.entry.guid, f"revised to revision {r.revision}: MessageUpdated") for r in intents.revised]
    out += [(guid, "unchanged: nothing announced") for guid in intents.unchanged]
    out += [(guid, "deleted before (tombstone): not stored again") for guid in intents.gone]
    out += [(f.entry.guid, f"filtered by the processor {f.processor}: not stored") for f in intents.filtered]
    return out
