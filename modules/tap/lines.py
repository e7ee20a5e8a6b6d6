"""What the tap writes where (pure): an entry event → its NDJSON line and file; a fetch → its blob path."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from host.events import iso_z
from host.module import ReceivedEvent

# JSON leaves these unescaped, but str.splitlines() and some NDJSON readers split lines on them.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def entries_path(at: datetime) -> str:
    """Files rotate by the UTC date of the event: entries/2026-11-26.ndjson."""
    return f"entries/{at.astimezone(UTC).date().isoformat()}.ndjson"


def raw_path(fetch_id: int, fetched_at: datetime) -> str:
    """raw/<UTC date of the fetch>/<fetch id>.blob."""
    return f"raw/{fetched_at.astimezone(UTC).date().isoformat()}/{fetch_id}.blob"


def entry_line(event: ReceivedEvent, at: datetime) -> bytes:
    """One line: the event id, subject and time, then the event as published (type, message)."""
    record: dict[str, Any] = {"eventId": event.event_id, "subject": event.subject, "at": iso_z(at)}
    record.update(event.payload)
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS)
    return (text + "\n").encode()


def fetch_id(payload: dict[str, Any]) -> int | None:
    """The raw fetch an rss entry event was parsed from (`message.rss.fetchId`), if it says."""
    rss = (payload.get("message") or {}).get("rss") or {}
    value = rss.get("fetchId") if isinstance(rss, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
