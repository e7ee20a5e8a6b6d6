"""Read models for the web console: a page of feeds with their health and schedule, one feed's fetch
history, schedule decisions and entries by day, an entry with its content. Reads only; pages are bounded (LIMIT) so a page
costs the same at 2,000 feeds and 100,000 entries as at ten."""

from __future__ import annotations

from typing import Any

import asyncpg

from host.errors import UserError

_FEED_ROW = """f.id, f.url, f.title, f.site_url, f.folder, f.enabled, f.dead, f.stale, f.full_text,
       f.interval_override_s, f.retention_days, f.lookback_hours, f.format, f.description, f.created_at,
       p.next_poll_at, p.last_polled_at, p.last_status, p.last_success_at, p.last_error, p.last_error_at,
       p.consecutive_errors, p.total_errors, p.successful_polls, p.interval_s, p.interval_reason, p.ewma_s,
       p.etag, p.last_modified, p.ttl_minutes"""


async def folders(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Every folder path with its feed count and failing count (the tree is built from the paths)."""
    rows = await conn.fetch(
        """SELECT coalesce(f.folder, '') AS folder, count(*) AS feeds,
                  count(*) FILTER (WHERE p.consecutive_errors > 0 OR f.dead) AS failing
           FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id GROUP BY 1 ORDER BY 1"""
    )
    return [dict(r) for r in rows]


async def feed_page(
    conn: asyncpg.Connection, *, folder: str | None, failing: bool, offset: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """One page of feeds (in a folder and its subfolders, or all), with entry counts; and the total."""
    where = """($1::text IS NULL OR f.folder = $1 OR f.folder LIKE $1 || '/%' OR ($1 = '' AND f.folder IS NULL))
               AND (NOT $2 OR p.consecutive_errors > 0 OR f.dead)"""
    total = await conn.fetchval(
        f"SELECT count(*) FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id WHERE {where}",
        folder,
        failing,
    )
    rows = await conn.fetch(
        f"""SELECT {_FEED_ROW}, (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = f.id) AS entries
            FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id
            WHERE {where} ORDER BY f.folder NULLS FIRST, lower(f.title), f.id OFFSET $3 LIMIT $4""",
        folder,
        failing,
        offset,
        limit,
    )
    return [dict(r) for r in rows], int(total)


async def feed(conn: asyncpg.Connection, feed_id: int) -> dict[str, Any]:
    row = await conn.fetchrow(
        f"""SELECT {_FEED_ROW}, (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = f.id) AS entries
            FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id WHERE f.id = $1""",
        feed_id,
    )
    if row is None:
        raise UserError(f"no feed {feed_id}", "it may have been removed")
    return dict(row)


async def fetches(conn: asyncpg.Connection, feed_id: int, limit: int = 20) -> list[dict[str, Any]]:
    """The stored raw responses, newest first: status, size, validators, parse error."""
    rows = await conn.fetch(
        """SELECT r.id, r.fetched_at, r.url, r.status, b.size, r.parse_error,
                  r.headers ->> 'etag' AS etag, r.headers ->> 'last-modified' AS last_modified,
                  r.headers ->> 'content-type' AS content_type, r.body_sha256
           FROM mod_rss.raw_fetches r JOIN mod_rss.raw_blobs b ON b.sha256 = r.body_sha256
           WHERE r.feed_id = $1 ORDER BY r.fetched_at DESC LIMIT $2""",
        feed_id,
        limit,
    )
    return [dict(r) for r in rows]


async def schedule_log(conn: asyncpg.Connection, feed_id: int) -> list[dict[str, Any]]:
    """The scheduler's last decisions for a feed (rss/0017 keeps 20), newest first, with the wait chosen."""
    rows = await conn.fetch(
        """SELECT seq, polled_at, status, error, interval_s, ewma_s, reason, next_poll_at,
                  extract(epoch FROM next_poll_at - polled_at)::float8 AS wait_s
           FROM mod_rss.schedule_log WHERE feed_id = $1 ORDER BY seq DESC""",
        feed_id,
    )
    return [dict(r) for r in rows]


async def per_day(conn: asyncpg.Connection, feed_id: int, days: int = 30) -> list[tuple[str, int]]:
    """Entries per UTC day over the last `days` days, oldest first, zeros included."""
    rows = await conn.fetch(
        """SELECT d::date AS day, count(e.id) AS n
           FROM generate_series((now() AT TIME ZONE 'UTC')::date - ($2 - 1), (now() AT TIME ZONE 'UTC')::date,
                                interval '1 day') AS d
           LEFT JOIN mod_rss.entries e ON e.feed_id = $1
                AND e.effective_at >= d AT TIME ZONE 'UTC' AND e.effective_at < (d + interval '1 day') AT TIME ZONE 'UTC'
           GROUP BY d ORDER BY d""",
        feed_id,
        days,
    )
    return [(r["day"].strftime("%m-%d"), int(r["n"])) for r in rows]


async def entry(conn: asyncpg.Connection, entry_id: int) -> dict[str, Any]:
    """Everything the entry page shows: content (sanitized at parse time), enclosures, lineage, text
    source, read/starred state (store.reading's, the one every front door shares)."""
    row = await conn.fetchrow(
        """SELECT e.*, f.title AS feed_title, f.url AS feed_url, t.text_source, t.article_fetched_at,
                  t.best_title, t.best_authors, s.read_at, s.starred_at
           FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
           JOIN mod_rss.entry_text t ON t.entry_id = e.id
           LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id WHERE e.id = $1""",
        entry_id,
    )
    if row is None:
        raise UserError(f"no entry {entry_id}", "it may have expired (retention) or its feed was removed")
    return dict(row)


async def entry_revisions(conn: asyncpg.Connection, entry_id: int) -> list[dict[str, Any]]:
    """The entry's earlier versions (rss/0018 keeps the last 10), newest first."""
    rows = await conn.fetch(
        """SELECT revision, replaced_at, title, link, content_text, word_count, content_hash
           FROM mod_rss.entry_revisions WHERE entry_id = $1 ORDER BY revision DESC""",
        entry_id,
    )
    return [dict(r) for r in rows]
