"""Feeds and their poll state: subscriptions, per-feed settings, leases (claims) and poll outcomes.

Every function takes a connection so callers decide the transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from host.breaker import BreakerState
from host.errors import UserError
from host.workqueue import WorkQueue

FEED_COLUMNS = (
    "id, url, title, site_url, description, format, folder, enabled, interval_override_s, retention_days, "
    "lookback_hours, full_text, dead, stale, created_at, typical_order, min_interval_s, max_interval_s, "
    "push_only, backfill"
)
# Per-feed fields a user may change with `rss set` → their column.
EDITABLE = {
    "interval": "interval_override_s",
    "enabled": "enabled",
    "folder": "folder",
    "retention": "retention_days",
    "lookback": "lookback_hours",
    "title": "title",
    "full_text": "full_text",
    "min_interval": "min_interval_s",
    "max_interval": "max_interval_s",
    "push_only": "push_only",
    "backfill": "backfill",
}
# The true/false ones.
EDITABLE_FLAGS = frozenset({"enabled", "full_text", "push_only", "backfill"})
# The numeric ones: (lowest, highest, unit as the user gives it); the interval is stored in seconds.
EDITABLE_BOUNDS = {
    "interval": (1, 10080, "minutes"),
    "min_interval": (1, 10080, "minutes"),
    "max_interval": (1, 10080, "minutes"),
    "retention": (1, 36500, "days"),
    "lookback": (1, 168, "hours"),
}


@dataclass(slots=True)
class FeedRow:
    id: int
    url: str
    title: str
    site_url: str | None
    description: str
    format: str | None
    folder: str | None
    enabled: bool
    interval_override_s: int | None
    retention_days: int | None
    lookback_hours: int | None
    full_text: bool
    dead: bool
    stale: bool
    created_at: datetime
    typical_order: str | None  # newest_first | oldest_first | unordered (ingest.order), None = not known yet
    min_interval_s: int | None  # the feed's own interval clamps (seed 001 §8), None = the settings'
    max_interval_s: int | None
    push_only: bool  # no polling while a WebSub subscription is active (a poll when its lease ends)
    backfill: bool  # walk RFC 5005 archives when the feed links them

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> FeedRow:
        return cls(**{k: r[k] for k in cls.__slots__})


@dataclass(slots=True)
class Claim:
    """A feed leased to this host for one poll."""

    feed: FeedRow
    etag: str | None
    last_modified: str | None
    interval_s: float | None
    successful_polls: int
    consecutive_errors: int
    ttl_minutes: int | None
    skip_hours: list[int]
    skip_days: list[str]
    circuit: BreakerState = dataclasses.field(default_factory=BreakerState)
    last_wire_bytes: int | None = None  # the last 200 body as received: what a 304 saves
    warned: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # scope → conditions warned about
    response_ms_total: float = 0.0  # all polls' fetch times, for the mean response time
    responses: int = 0
    skipped_items: int = 0  # items left out for having nothing in them, lifetime (seed 002)


# -- feeds ---------------------------------------------------------------------------------------
async def add_feed(
    conn: asyncpg.Connection,
    *,
    url: str,
    title: str = "",
    site_url: str | None = None,
    description: str = "",
    format: str | None = None,
    folder: str | None = None,
    interval_override_s: int | None = None,
) -> tuple[FeedRow, bool]:
    """Insert a feed (and its poll state, due now). Returns (row, created); an existing URL is returned as is."""
    row = await conn.fetchrow(
        f"""INSERT INTO mod_rss.feeds (url, title, site_url, description, format, folder, interval_override_s)
            VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (url) DO NOTHING RETURNING {FEED_COLUMNS}""",
        url,
        title,
        site_url,
        description,
        format,
        folder,
        interval_override_s,
    )
    if row is None:
        existing = await conn.fetchrow(f"SELECT {FEED_COLUMNS} FROM mod_rss.feeds WHERE url = $1", url)
        assert existing is not None
        return FeedRow.from_record(existing), False
    await conn.execute("INSERT INTO mod_rss.poll_state (feed_id) VALUES ($1)", row["id"])
    return FeedRow.from_record(row), True


async def get_feed(conn: asyncpg.Connection, ref: str | int) -> FeedRow:
    """A feed by id or URL, or one clear error."""
    if isinstance(ref, int) or str(ref).isdigit():
        row = await conn.fetchrow(f"SELECT {FEED_COLUMNS} FROM mod_rss.feeds WHERE id = $1", int(ref))
    else:
        row = await conn.fetchrow(f"SELECT {FEED_COLUMNS} FROM mod_rss.feeds WHERE url = $1", str(ref))
    if row is None:
        raise UserError(f"no feed {ref!r}", "list feeds with `feedeater rss list`")
    return FeedRow.from_record(row)


async def list_feeds(
    conn: asyncpg.Connection, folder: str | None = None, *, feed_id: int | None = None
) -> list[dict[str, Any]]:
    """Feeds with their poll state and entry count (all, a folder and its subfolders, or one feed)."""
    rows = await conn.fetch(
        f"""SELECT {", ".join("f." + c.strip() for c in FEED_COLUMNS.split(","))},
                   p.next_poll_at, p.last_polled_at, p.last_status, p.last_success_at, p.last_error, p.consecutive_errors,
                   p.total_errors, p.interval_s, p.interval_reason,
                   p.circuit, p.circuit_opened_at,
                   (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = f.id) AS entries
            FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id
            WHERE ($1::text IS NULL OR f.folder = $1 OR f.folder LIKE $1 || '/%') AND ($2::bigint IS NULL OR f.id = $2)
            ORDER BY f.folder NULLS FIRST, f.id""",
        folder,
        feed_id,
    )
    return [dict(r) for r in rows]


async def remove_feed(conn: asyncpg.Connection, feed_id: int) -> None:
    await conn.execute("DELETE FROM mod_rss.feeds WHERE id = $1", feed_id)


async def poll_soon(conn: asyncpg.Connection, feed_ids: Sequence[int]) -> None:
    """Make feeds due now: the next poll job tick fetches them (a reader app's "refresh")."""
    if feed_ids:
        await conn.execute(
            "UPDATE mod_rss.poll_state SET next_poll_at = now() WHERE feed_id = ANY($1::bigint[])",
            list(feed_ids),
        )


async def update_feed(conn: asyncpg.Connection, feed_id: int, changes: dict[str, Any]) -> FeedRow:
    sets = ", ".join(f"{EDITABLE[k]} = ${i + 2}" for i, k in enumerate(changes))
    row = await conn.fetchrow(
        f"UPDATE mod_rss.feeds SET {sets}, updated_at = now() WHERE id = $1 RETURNING {FEED_COLUMNS}",
        feed_id,
        *changes.values(),
    )
    if row is None:
        raise UserError(f"no feed {feed_id}", "list feeds with `feedeater rss list`")
    if changes.get("enabled"):  # re-enabling revives a dead feed and polls it soon
        await conn.execute("UPDATE mod_rss.feeds SET dead = false, stale = false WHERE id = $1", feed_id)
        await conn.execute(
            """UPDATE mod_rss.poll_state SET next_poll_at = now(), consecutive_errors = 0,
                   circuit = 'closed', circuit_history = 0, circuit_opens = 0 WHERE feed_id = $1""",
            feed_id,
        )
    if changes.keys() & {"interval", "min_interval", "max_interval", "push_only"}:  # the schedule changed
        await conn.execute("UPDATE mod_rss.poll_state SET next_poll_at = now() WHERE feed_id = $1", feed_id)
    return await get_feed(conn, feed_id)


async def retry_blocked(conn: asyncpg.Connection) -> int:
    """Feeds whose last poll the address policy refused are due now, their error count and circuit reset:
    the refusal was this host's setting, not the feed's fault (rss.allow_private_networks turned on)."""
    done = await conn.execute(
        """UPDATE mod_rss.poll_state SET next_poll_at = now(), consecutive_errors = 0, circuit = 'closed',
               circuit_history = 0, circuit_opens = 0
           WHERE last_error LIKE 'blocked: address %' AND consecutive_errors > 0"""
    )
    return int(done.split()[-1])


# -- polling -------------------------------------------------------------------------------------
POLL_QUEUE = WorkQueue(
    table="mod_rss.poll_state",
    key="feed_id",
    join="JOIN mod_rss.feeds f ON f.id = q.feed_id",
    due="f.enabled AND NOT f.dead AND q.next_poll_at <= $1",
    order="q.next_poll_at",
    returning=", ".join("f." + c.strip() for c in FEED_COLUMNS.split(","))
    + ", q.etag, q.last_modified, q.interval_s, q.successful_polls, q.consecutive_errors, q.ttl_minutes,"
    " q.skip_hours, q.skip_days, q.circuit, q.circuit_history, q.circuit_opens, q.last_wire_bytes, q.warned,"
    " q.response_ms_total, q.responses, q.skipped_items",
    returning_from=", mod_rss.feeds f",
    returning_where="AND f.id = q.feed_id",
)


# The same claim for feeds named by id, due or not: `rss add` / `rss import` fetch new feeds at once.
CHOSEN_QUEUE = dataclasses.replace(
    POLL_QUEUE, due="f.enabled AND NOT f.dead AND q.feed_id = ANY($4::bigint[])"
)


async def claim_due(
    conn: asyncpg.Connection, *, host_id: str, limit: int, lease_s: int, now: datetime
) -> list[Claim]:
    """Lease due feeds to this host: no feed is fetched twice at once, and a host killed mid-poll only
    delays its feeds until the lease expires."""
    return _claims(await POLL_QUEUE.claim(conn, now=now, limit=limit, lease_s=lease_s, owner=host_id))


async def claim_feeds(
    conn: asyncpg.Connection, feed_ids: Sequence[int], *, host_id: str, lease_s: int, now: datetime
) -> list[Claim]:
    """Lease these feeds now, due or not, under the poll job's rules (enabled, not dead, not leased)."""
    rows = await CHOSEN_QUEUE.claim(
        conn, now=now, limit=len(feed_ids), lease_s=lease_s, owner=host_id, params=[list(feed_ids)]
    )
    return sorted(_claims(rows), key=lambda c: c.feed.id)


async def renew_leases(
    conn: asyncpg.Connection, feed_ids: Sequence[int], *, host_id: str, lease_s: int
) -> int:
    """Keep this host's claims while their polls run (a slow server outlasts a short lease)."""
    return await POLL_QUEUE.renew(conn, feed_ids, lease_s=lease_s, owner=host_id)


def _claims(rows: Sequence[asyncpg.Record]) -> list[Claim]:
    return [
        Claim(
            FeedRow.from_record(r),
            r["etag"],
            r["last_modified"],
            r["interval_s"],
            r["successful_polls"],
            r["consecutive_errors"],
            r["ttl_minutes"],
            list(r["skip_hours"]),
            list(r["skip_days"]),
            BreakerState(r["circuit"], r["circuit_history"], r["circuit_opens"]),
            r["last_wire_bytes"],
            dict(r["warned"]),
            r["response_ms_total"],
            r["responses"],
            r["skipped_items"],
        )
        for r in rows
    ]


async def feed_counts(conn: asyncpg.Connection, now: datetime) -> dict[str, int]:
    """Feeds by state for the gauges: due now (the poll queue's depth), circuit open, stale, dead, all."""
    row = await conn.fetchrow(
        """SELECT count(*) FILTER (WHERE f.enabled AND NOT f.dead AND p.next_poll_at <= $1) AS due,
                  count(*) FILTER (WHERE p.circuit = 'open') AS circuit_open,
                  count(*) FILTER (WHERE f.stale) AS stale,
                  count(*) FILTER (WHERE f.dead) AS dead,
                  count(*) AS total
           FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id""",
        now,
    )
    assert row is not None
    return dict(row)


def _finish_sql(columns: Sequence[str], *, failed: bool) -> str:
    """The UPDATE that releases a feed's lease and records its poll ($1 = feed id, then `columns`)."""
    sets = ", ".join(f"{k} = ${i + 2}" for i, k in enumerate([*columns, "lease_until", "leased_by"]))
    if failed:
        sets += ", total_errors = total_errors + 1"
    return f"UPDATE mod_rss.poll_state SET {sets} WHERE feed_id = $1"


async def finish_poll(
    conn: asyncpg.Connection, feed_id: int, fields: dict[str, Any], *, failed: bool = False
) -> None:
    """Release the lease and record the poll's outcome (columns of poll_state)."""
    await conn.execute(_finish_sql(list(fields), failed=failed), feed_id, *fields.values(), None, None)


async def finish_polls(conn: asyncpg.Connection, polls: Sequence[tuple[int, dict[str, Any]]]) -> None:
    """`finish_poll` for many successful polls (feed id, fields): one pipelined round trip per column set."""
    by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for feed_id, fields in sorted(polls, key=lambda poll: poll[0]):  # one lock order for every writer
        by_columns.setdefault(tuple(fields), []).append((feed_id, *fields.values(), None, None))
    for columns, rows in by_columns.items():
        await conn.executemany(_finish_sql(columns, failed=False), rows)


async def update_feed_meta(conn: asyncpg.Connection, feed_id: int, fields: dict[str, Any]) -> None:
    """Parsed or protocol-driven feed changes (title, site link, url after a 301, dead/stale flags).

    A permanent redirect onto a URL another feed already has is not applied (the URL is unique)."""
    if "url" in fields and await conn.fetchval(
        "SELECT 1 FROM mod_rss.feeds WHERE url = $1 AND id <> $2", fields["url"], feed_id
    ):
        fields = {k: v for k, v in fields.items() if k != "url"}
    if not fields:
        return
    sets = ", ".join(f"{k} = ${i + 2}" for i, k in enumerate(fields))
    await conn.execute(
        f"UPDATE mod_rss.feeds SET {sets}, updated_at = now() WHERE id = $1", feed_id, *fields.values()
    )
