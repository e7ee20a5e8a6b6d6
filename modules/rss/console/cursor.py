"""Keyset cursors for entry lists (pure): `<effective time ISO>_<id>`, the last row shown."""

from __future__ import annotations

from datetime import datetime


def encode(effective_at: datetime, entry_id: int) -> str:
    return f"{effective_at.isoformat()}_{entry_id}"


def decode(raw: str | None) -> tuple[datetime, int] | None:
    """None for no cursor or a malformed one (the list then starts at the newest entry)."""
    if not raw:
        return None
    when, _, ident = raw.rpartition("_")
    try:
        at = datetime.fromisoformat(when)
        return (at, int(ident)) if at.tzinfo is not None else None
    except ValueError:
        return None
