"""Reading what was fetched: entries newest first with their read/starred state, one entry, marking.

The state lives in `mod_rss.entry_state` (no row: unread, not starred), apart from the entries the poll
job rewrites.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from host.errors import UserError

# Title, authors and date are entry_text's best_*: the feed's, else what the article page says (rss/0006).
_ENTRY_LIST = """SELECT e.id, e.message_id, e.feed_id, f.title AS feed_title, t.best_title AS title, e.link,
           t.best_published AS published, e.effective_at, e.reading_time_minutes, s.read_at, s.starred_at
    FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
    JOIN mod_rss.entry_text t ON t.entry_id = e.id
    LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id"""


async def list_entries(
    conn: asyncpg.Connection,
    *,
    feed_id: int | None = None,
    since: datetime | None = None,
    unread: bool = False,
    starred: bool = False,
    before: tuple[datetime, int] | None = None,
    limit: int = 20,
) -> list[dict[str, Any]]:
    """Entries newest first (effective time: published, else first seen), with read/starred state.

    `before` (effective_at, id) of the previous page's last entry continues after it (keyset paging).
    Only the filters given become SQL conditions: `$1 IS NULL OR ...` in a generic plan (asyncpg
    prepares statements) keeps the planner from using the (feed_id, effective_at, id) index."""
    conds: list[str] = []
    args: list[Any] = []

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if feed_id is not None:
        conds.append(f"e.feed_id = {arg(feed_id)}")
    if since is not None:
        conds.append(f"e.effective_at >= {arg(since)}")
    if before is not None:
        conds.append(f"(e.effective_at, e.id) < ({arg(before[0])}, {arg(before[1])})")
    conds += ["s.read_at IS NULL"] if unread else []
    conds += ["s.starred_at IS NOT NULL"] if starred else []
    where = f"WHERE {' AND '.join(conds)}" if conds else ""
    rows = await conn.fetch(
        f"{_ENTRY_LIST} {where} ORDER BY e.effective_at DESC, e.id DESC LIMIT {arg(limit)}", *args
    )
    return [dict(r) for r in rows]


async def get_entry(conn: asyncpg.Connection, entry_id: int | uuid.UUID) -> dict[str, Any]:
    """One entry to read, by id or message id: metadata, plain text, enclosures, state; or one clear error."""
    key = "e.message_id" if isinstance(entry_id, uuid.UUID) else "e.id"
    row = await conn.fetchrow(
        f"""SELECT e.id, e.feed_id, f.title AS feed_title, t.best_title AS title, e.link,
                  t.best_published AS published, e.effective_at, t.best_authors AS authors, e.categories,
                  e.enclosures, e.content_text, e.reading_time_minutes, e.message_id, s.read_at, s.starred_at
           FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
           JOIN mod_rss.entry_text t ON t.entry_id = e.id
           LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id
           WHERE {key} = $1""",
        entry_id,
    )
    if row is None:
        raise UserError(f"no entry {entry_id}", "list entries with `feedeater rss entries`")
    return dict(row)


async def position(conn: asyncpg.Connection, entry_id: int) -> tuple[datetime, int]:
    """An entry's place in the newest-first order (effective_at, id): `rss entries --before ID` continues
    after it."""
    at = await conn.fetchval("SELECT effective_at FROM mod_rss.entries WHERE id = $1", entry_id)
    if at is None:
        raise UserError(f"no entry {entry_id}", "give an id from `feedeater rss entries`")
    return at, entry_id


async def feed_entry_ids(conn: asyncpg.Connection, feed_id: int) -> list[int]:
    return [r["id"] for r in await conn.fetch("SELECT id FROM mod_rss.entries WHERE feed_id = $1", feed_id)]


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
