"""Synthetic entries COPYed into mod_rss.entries: how the benchmarks load 100,000 of them in seconds."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

COLUMNS = [
    "feed_id",
    "guid",
    "guid_source",
    "message_id",
    "title",
    "content_text",
    "content_hash",
    "published",
    "first_seen",
    "last_seen",
    "effective_at",
]


def record(feed_id: int, n: int, title: str, text: str, content_hash: str, at: datetime) -> tuple[Any, ...]:
    """Entry number `n` (guid `g<n>`), published, first seen and effective at `at`."""
    guid = f"g{n}"
    return (
        feed_id,
        guid,
        "id",
        uuid.uuid5(uuid.NAMESPACE_URL, guid),
        title,
        text,
        content_hash,
        at,
        at,
        at,
        at,
    )


async def copy_entries(conn: asyncpg.Connection, records: Sequence[tuple[Any, ...]]) -> None:
    await conn.copy_records_to_table("entries", schema_name="mod_rss", columns=COLUMNS, records=records)
