"""The stored facts `rss why` explains from (reads only; the decision is modules/rss/explain/decision.py)."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import asyncpg

from modules.rss.store.raw import body_of


async def find_entry(
    conn: asyncpg.Connection, feed_id: int, *, guid: str, link: str | None, entry_id: int | None
) -> dict[str, Any] | None:
    """The feed's entry with this guid, else the newest with this link, entry id or message id."""
    message_id = None
    with contextlib.suppress(ValueError):
        message_id = uuid.UUID(guid)
    row = await conn.fetchrow(
        """SELECT id, guid, guid_source, link, title, message_id::text AS message_id, published, first_seen,
                  last_seen, seen_count, revision, fetch_id, last_fetch_id, announced, intake_reason,
                  content_hash
           FROM mod_rss.entries
           WHERE feed_id = $1 AND (guid = $2 OR link = $3 OR id = $4 OR message_id = $5)
           ORDER BY guid = $2 DESC, first_seen DESC LIMIT 1""",
        feed_id,
        guid,
        link,
        entry_id,
        message_id,
    )
    return dict(row) if row is not None else None


async def find_skip(
    conn: asyncpg.Connection, feed_id: int, *, guid: str, link: str | None
) -> dict[str, Any] | None:
    """A new item a processor kept out of storage (mod_rss.intake_skips)."""
    row = await conn.fetchrow(
        """SELECT guid, reason, title, fetch_id, first_at, last_at FROM mod_rss.intake_skips
           WHERE feed_id = $1 AND (guid = $2 OR link = $3) ORDER BY guid = $2 DESC, last_at DESC LIMIT 1""",
        feed_id,
        guid,
        link,
    )
    return dict(row) if row is not None else None


async def is_tombstoned(conn: asyncpg.Connection, feed_id: int, guid: str) -> bool:
    return bool(
        await conn.fetchval(
            "SELECT 1 FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = $2", feed_id, guid
        )
    )


async def poll_facts(conn: asyncpg.Connection, feed_id: int) -> dict[str, Any]:
    row = await conn.fetchrow(
        "SELECT successful_polls, next_poll_at, interval_reason FROM mod_rss.poll_state WHERE feed_id = $1",
        feed_id,
    )
    return (
        dict(row)
        if row is not None
        else {"successful_polls": 0, "next_poll_at": None, "interval_reason": None}
    )


async def latest_fetch(conn: asyncpg.Connection, feed_id: int) -> dict[str, Any] | None:
    """The feed's latest stored response with its body (what the feed lists now)."""
    row = await conn.fetchrow(
        """SELECT r.id, r.fetched_at, r.url, r.headers, r.parse_error, r.body_sha256, b.codec, b.body
           FROM mod_rss.raw_fetches r JOIN mod_rss.raw_blobs b ON b.sha256 = r.body_sha256
           WHERE r.feed_id = $1 ORDER BY r.fetched_at DESC, r.id DESC LIMIT 1""",
        feed_id,
    )
    return body_of(row)
