"""mod_rss.backfill: one archive walk per feed, resumable at `next_url` (SQL only)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from host.workqueue import WorkQueue

_COLUMNS = "feed_id, rel, next_url, pages_done, max_pages, visited"


@dataclass(frozen=True, slots=True)
class Walk:
    feed_id: int
    rel: str
    next_url: str
    pages_done: int
    max_pages: int
    visited: tuple[str, ...]

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> Walk:
        return cls(
            r["feed_id"], r["rel"], r["next_url"], r["pages_done"], r["max_pages"], tuple(r["visited"])
        )


QUEUE = WorkQueue(
    table="mod_rss.backfill",
    key="feed_id",
    due="q.state = 'queued' AND q.next_url IS NOT NULL AND q.due_at <= coalesce($1::timestamptz, now())",
    order="q.due_at",
    returning=", ".join(f"q.{c.strip()}" for c in _COLUMNS.split(",")),
)
ONE = dataclasses.replace(QUEUE, due="q.state = 'queued' AND q.next_url IS NOT NULL AND q.feed_id = $4")


async def offer(conn: asyncpg.Connection, feed_id: int, rel: str, url: str, *, max_pages: int) -> None:
    """Queue a feed's archive walk from `url` unless it has one (walked once, never again)."""
    await conn.execute(
        """INSERT INTO mod_rss.backfill (feed_id, rel, next_url, max_pages) VALUES ($1, $2, $3, $4)
           ON CONFLICT (feed_id) DO NOTHING""",
        feed_id,
        rel,
        url,
        max_pages,
    )


async def request(conn: asyncpg.Connection, feed_id: int, rel: str, url: str, *, max_pages: int) -> None:
    """Walk (again) from `url`, by hand (`feedeater rss backfill`)."""
    await conn.execute(
        """INSERT INTO mod_rss.backfill (feed_id, rel, next_url, max_pages) VALUES ($1, $2, $3, $4)
           ON CONFLICT (feed_id) DO UPDATE SET rel = $2, next_url = $3, max_pages = $4, state = 'queued',
               pages_done = 0, entries_new = 0, visited = '{}', attempts = 0, last_error = NULL,
               due_at = now(), requested_at = now(), finished_at = NULL, lease_until = NULL, leased_by = NULL""",
        feed_id,
        rel,
        url,
        max_pages,
    )


async def page_done(
    conn: asyncpg.Connection, walk: Walk, *, next_url: str | None, new: int, finished: bool
) -> None:
    """One page stored (same transaction as its entries): move on to `next_url`, or finish (at the end
    of the chain or at the page bound; then `next_url` shows where a longer walk would go on)."""
    await conn.execute(
        """UPDATE mod_rss.backfill SET pages_done = pages_done + 1, visited = visited || $2::text,
               next_url = $3, entries_new = entries_new + $4, attempts = 0, last_error = NULL,
               state = CASE WHEN $5 THEN 'done' ELSE state END, finished_at = CASE WHEN $5 THEN now() END,
               lease_until = CASE WHEN $5 THEN NULL ELSE lease_until END
           WHERE feed_id = $1""",
        walk.feed_id,
        walk.next_url,
        next_url,
        new,
        finished,
    )


async def page_failed(
    conn: asyncpg.Connection, feed_id: int, error: str, *, retry_at: datetime, give_up: bool
) -> None:
    await conn.execute(
        """UPDATE mod_rss.backfill SET attempts = attempts + 1, last_error = $2, due_at = $3,
               state = CASE WHEN $4 THEN 'failed' ELSE state END, lease_until = NULL, leased_by = NULL
           WHERE feed_id = $1""",
        feed_id,
        error[:500],
        retry_at,
        give_up,
    )


async def attempts(conn: asyncpg.Connection, feed_id: int) -> int:
    """How often the walk's current page failed."""
    return int(await conn.fetchval("SELECT attempts FROM mod_rss.backfill WHERE feed_id = $1", feed_id) or 0)


async def release(conn: asyncpg.Connection, feed_id: int) -> None:
    await conn.execute(
        "UPDATE mod_rss.backfill SET lease_until = NULL, leased_by = NULL WHERE feed_id = $1", feed_id
    )


async def status(conn: asyncpg.Connection, feed_id: int) -> dict[str, Any] | None:
    row = await conn.fetchrow(
        """SELECT rel, next_url, state, pages_done, max_pages, entries_new, last_error, requested_at, finished_at
           FROM mod_rss.backfill WHERE feed_id = $1""",
        feed_id,
    )
    return None if row is None else dict(row)
