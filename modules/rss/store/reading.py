"""Reading what was fetched: entries newest first with their read/starred state, one entry, marking.

The state lives in `mod_rss.entry_state` (no row: unread, not starred), apart from the entries the poll
job rewrites.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from host.errors import UserError

_ENTRY_LIST = """SELECT e.id, e.feed_id, f.title AS feed_title, e.title, e.link, e.published, e.effective_at,
           e.reading_time_minutes, s.read_at, s.starred_at
    FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
    LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id"""


async def list_entries(
    conn: asyncpg.Connection,
    *,
    feed_id: int | None = None,
    since: datetime | None = None,
    unread: bool = False,
    starred: bool = False,
    limit: int = 20,
) -> list[dict[str, Any]]:
    """Entries newest first (effective time: published, else first seen), with read/starred state."""
    rows = await conn.fetch(
        f"""{_ENTRY_LIST}
            WHERE ($1::bigint IS NULL OR e.feed_id = $1) AND ($2::timestamptz IS NULL OR e.effective_at >= $2)
              AND (NOT $3 OR s.read_at IS NULL) AND (NOT $4 OR s.starred_at IS NOT NULL)
            ORDER BY e.effective_at DESC, e.id DESC LIMIT $5""",
        feed_id,
        since,
        unread,
        starred,
        limit,
    )
    return [dict(r) for r in rows]


async def get_entry(conn: asyncpg.Connection, entry_id: int) -> dict[str, Any]:
    """One entry to read: metadata, plain text, enclosures, state; or one clear error."""
    row = await conn.fetchrow(
        """SELECT e.id, e.feed_id, f.title AS feed_title, e.title, e.link, e.published, e.effective_at,
                  e.authors, e.categories, e.enclosures, e.content_text, e.reading_time_minutes, e.message_id,
                  s.read_at, s.starred_at
           FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
           LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id
           WHERE e.id = $1""",
        entry_id,
    )
    if row is None:
        raise UserError(f"no entry {entry_id}", "list entries with `feedeater rss entries`")
    return dict(row)


async def mark_entries(
    conn: asyncpg.Connection, entry_ids: Sequence[int], *, read: bool | None, starred: bool | None
) -> list[int]:
    """Set read and/or starred on entries (None leaves it); returns the ids that exist."""
    found = [
        r["id"]
        for r in await conn.fetch("SELECT id FROM mod_rss.entries WHERE id = ANY($1::bigint[])", entry_ids)
    ]
    await conn.execute(
        """INSERT INTO mod_rss.entry_state AS s (entry_id, read_at, starred_at)
           SELECT id, CASE WHEN $2 THEN now() END, CASE WHEN $3 THEN now() END FROM unnest($1::bigint[]) AS id
           ON CONFLICT (entry_id) DO UPDATE SET
               read_at = CASE WHEN $2 IS NULL THEN s.read_at WHEN $2 THEN coalesce(s.read_at, now()) END,
               starred_at = CASE WHEN $3 IS NULL THEN s.starred_at WHEN $3 THEN coalesce(s.starred_at, now()) END""",
        found,
        read,
        starred,
    )
    return sorted(found)
