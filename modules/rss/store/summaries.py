"""mod_rss.feed_summaries: which feeds have entries past their last context, the entries a summary reads,
and the bookkeeping after one (SQL only; the cadence and the window's size are decided by the caller)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from host.workqueue import WorkQueue


@dataclass(frozen=True, slots=True)
class Candidate:
    feed_id: int
    title: str
    description: str
    summarized_at: datetime | None
    new_entries: int
    entries_per_day: float  # over the last `volume_days`


@dataclass(frozen=True, slots=True)
class WindowEntry:
    entry_id: int
    message_id: uuid.UUID
    title: str
    published: datetime  # effective_at: published, or first seen when undated
    text: str  # best text (article when extracted, else feed content), cut to the caller's length


async def candidates(conn: asyncpg.Connection, now: datetime, *, volume_days: int) -> list[Candidate]:
    """Feeds with entries above their summary watermark and no live lease, with their volume over the
    last `volume_days`."""
    rows = await conn.fetch(
        """SELECT f.id, f.title, f.description, s.summarized_at, n.new_entries, r.recent
           FROM mod_rss.feeds f
           LEFT JOIN mod_rss.feed_summaries s ON s.feed_id = f.id
           CROSS JOIN LATERAL (SELECT count(*) AS new_entries FROM mod_rss.entries e
                               WHERE e.feed_id = f.id AND e.id > coalesce(s.last_entry_id, 0)) n
           CROSS JOIN LATERAL (SELECT count(*) AS recent FROM mod_rss.entries e
                               WHERE e.feed_id = f.id AND e.effective_at > $1::timestamptz - make_interval(days => $2)
                                 AND e.effective_at <= $1) r
           WHERE n.new_entries > 0 AND (s.lease_until IS NULL OR s.lease_until < $1)
           ORDER BY f.id""",
        now,
        volume_days,
    )
    return [
        Candidate(
            r["id"],
            r["title"],
            r["description"],
            r["summarized_at"],
            r["new_entries"],
            r["recent"] / volume_days,
        )
        for r in rows
    ]


LEASES = WorkQueue(
    table="mod_rss.feed_summaries",
    key="feed_id",
    # re-checked under the row lock: another host may have summarized the feed since we looked
    due="q.feed_id = ANY($4::bigint[]) AND EXISTS (SELECT 1 FROM mod_rss.entries e"
    " WHERE e.feed_id = q.feed_id AND e.id > coalesce(q.last_entry_id, 0))",
    order="q.feed_id",
    returning="q.feed_id",
)


async def lease(
    conn: asyncpg.Connection, feed_ids: list[int], *, host_id: str, lease_s: int, now: datetime
) -> set[int]:
    """Reserve feeds for this host so two hosts never summarize one feed at once."""
    await conn.execute(
        "INSERT INTO mod_rss.feed_summaries (feed_id) SELECT unnest($1::bigint[]) ON CONFLICT DO NOTHING",
        feed_ids,
    )
    rows = await LEASES.claim(
        conn, now=now, limit=len(feed_ids), lease_s=lease_s, owner=host_id, params=[feed_ids]
    )
    return {r["feed_id"] for r in rows}


async def window(
    conn: asyncpg.Connection,
    feed_id: int,
    now: datetime,
    *,
    max_entries: int,
    min_entries: int,
    days: int,
    text_chars: int,
) -> tuple[list[WindowEntry], int]:
    """The feed's entries of the last `days` (at least `min_entries`, at most `max_entries`), newest first,
    and its newest entry id (the new watermark), read in one statement so an entry committed in between is
    counted as new next time rather than skipped."""
    rows = await conn.fetch(
        """SELECT e.id, e.message_id, e.title, e.effective_at, left(t.best_text, $4) AS text,
                  (SELECT max(id) FROM mod_rss.entries WHERE feed_id = $1) AS newest_id
           FROM mod_rss.entries e JOIN mod_rss.entry_text t ON t.entry_id = e.id
           WHERE e.feed_id = $1
           ORDER BY e.effective_at DESC, e.id DESC
           LIMIT least($3, greatest($5, (SELECT count(*) FROM mod_rss.entries
                                         WHERE feed_id = $1 AND effective_at > $2::timestamptz - make_interval(days => $6))))""",
        feed_id,
        now,
        max_entries,
        text_chars,
        min_entries,
        days,
    )
    entries = [WindowEntry(r["id"], r["message_id"], r["title"], r["effective_at"], r["text"]) for r in rows]
    return entries, rows[0]["newest_id"] if rows else 0


async def history(
    conn: asyncpg.Connection, feed_id: int, leave_out: Sequence[int], *, limit: int
) -> list[str]:
    """Title and text start of the feed's newest `limit` entries other than `leave_out`."""
    rows = await conn.fetch(
        """SELECT e.title || ' ' || left(t.best_text, 500) AS text
           FROM mod_rss.entries e JOIN mod_rss.entry_text t ON t.entry_id = e.id
           WHERE e.feed_id = $1 AND e.id <> ALL($2::bigint[])
           ORDER BY e.effective_at DESC LIMIT $3""",
        feed_id,
        list(leave_out),
        limit,
    )
    return [r["text"] for r in rows]


async def summarized(
    conn: asyncpg.Connection,
    feed_id: int,
    *,
    newest_id: int,
    now: datetime,
    entries_per_day: float,
    cadence: str,
    method: str,
    entries_used: int,
) -> None:
    """The feed's summary was stored: move its watermark and release its lease."""
    await conn.execute(
        """UPDATE mod_rss.feed_summaries SET last_entry_id = $2, summarized_at = $3, entries_per_day = $4,
               cadence = $5, method = $6, entries_used = $7, lease_until = NULL, leased_by = NULL
           WHERE feed_id = $1""",
        feed_id,
        newest_id,
        now,
        entries_per_day,
        cadence,
        method,
        entries_used,
    )
