"""mod_rss storage: feeds, poll state and leases, entries with lineage, tombstones, raw fetches.

Every function takes a connection so callers decide the transaction: entries and their events are
written in one transaction by the poll job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import asyncpg

from host import outbox
from host.errors import UserError
from host.events import Event
from modules.rss import publish
from modules.rss.model import Entry

FEED_COLUMNS = (
    "id, url, title, site_url, description, format, folder, enabled, interval_override_s, retention_days, "
    "lookback_hours, full_text, dead, stale, created_at"
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


async def list_feeds(conn: asyncpg.Connection, folder: str | None = None) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT {", ".join("f." + c.strip() for c in FEED_COLUMNS.split(","))},
                   p.next_poll_at, p.last_polled_at, p.last_status, p.last_success_at, p.last_error, p.consecutive_errors,
                   p.total_errors, p.interval_s, p.interval_reason,
                   (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = f.id) AS entries
            FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id
            WHERE $1::text IS NULL OR f.folder = $1 OR f.folder LIKE $1 || '/%'
            ORDER BY f.folder NULLS FIRST, f.id""",
        folder,
    )
    return [dict(r) for r in rows]


async def remove_feed(conn: asyncpg.Connection, feed_id: int) -> None:
    await conn.execute("DELETE FROM mod_rss.feeds WHERE id = $1", feed_id)


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
            "UPDATE mod_rss.poll_state SET next_poll_at = now(), consecutive_errors = 0 WHERE feed_id = $1",
            feed_id,
        )
    if "interval" in changes:
        await conn.execute("UPDATE mod_rss.poll_state SET next_poll_at = now() WHERE feed_id = $1", feed_id)
    return await get_feed(conn, feed_id)


# -- for the CLI: fetch now, read, mark ----------------------------------------------------------
async def claim_feeds(
    conn: asyncpg.Connection, feed_ids: Sequence[int], *, host_id: str, lease_s: int, now: datetime
) -> list[Claim]:
    """Lease these feeds now, due or not (`rss add` / `rss import` fetch new feeds at once), under the
    same rules as `claim_due`: enabled, not dead, not leased by another poll."""
    rows = await conn.fetch(
        f"""WITH wanted AS (
                SELECT p.feed_id FROM mod_rss.poll_state p JOIN mod_rss.feeds f ON f.id = p.feed_id
                WHERE p.feed_id = ANY($2::bigint[]) AND f.enabled AND NOT f.dead
                  AND (p.lease_until IS NULL OR p.lease_until < $1)
                FOR UPDATE OF p SKIP LOCKED)
            UPDATE mod_rss.poll_state p SET lease_until = $1 + make_interval(secs => $3), leased_by = $4
            FROM wanted, mod_rss.feeds f WHERE p.feed_id = wanted.feed_id AND f.id = p.feed_id
            RETURNING {_CLAIM_COLUMNS}""",
        now,
        list(feed_ids),
        float(lease_s),
        host_id,
    )
    return sorted((_claim(r) for r in rows), key=lambda c: c.feed.id)


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


# -- polling -------------------------------------------------------------------------------------
async def claim_due(
    conn: asyncpg.Connection, *, host_id: str, limit: int, lease_s: int, now: datetime
) -> list[Claim]:
    """Lease due feeds to this host. SKIP LOCKED plus the lease means no feed is fetched twice at once,
    and a host killed mid-poll only delays its feeds until the lease expires."""
    rows = await conn.fetch(
        f"""WITH due AS (
                SELECT p.feed_id FROM mod_rss.poll_state p JOIN mod_rss.feeds f ON f.id = p.feed_id
                WHERE f.enabled AND NOT f.dead AND p.next_poll_at <= $1 AND (p.lease_until IS NULL OR p.lease_until < $1)
                ORDER BY p.next_poll_at LIMIT $2
                FOR UPDATE OF p SKIP LOCKED)
            UPDATE mod_rss.poll_state p SET lease_until = $1 + make_interval(secs => $3), leased_by = $4
            FROM due, mod_rss.feeds f WHERE p.feed_id = due.feed_id AND f.id = p.feed_id
            RETURNING {_CLAIM_COLUMNS}""",
        now,
        limit,
        float(lease_s),
        host_id,
    )
    return [_claim(r) for r in rows]


_CLAIM_COLUMNS = f"""{", ".join("f." + c.strip() for c in FEED_COLUMNS.split(","))}, p.etag, p.last_modified,
    p.interval_s, p.successful_polls, p.consecutive_errors, p.ttl_minutes, p.skip_hours, p.skip_days"""


def _claim(r: asyncpg.Record) -> Claim:
    return Claim(
        FeedRow.from_record(r),
        r["etag"],
        r["last_modified"],
        r["interval_s"],
        r["successful_polls"],
        r["consecutive_errors"],
        r["ttl_minutes"],
        list(r["skip_hours"]),
        list(r["skip_days"]),
    )


@dataclass(frozen=True, slots=True)
class RawSaved:
    raw_id: int
    same_as_last: bool  # byte-identical to this feed's previous 200, which parsed fine: nothing to parse


async def save_raw(
    conn: asyncpg.Connection,
    *,
    feed_id: int,
    url: str,
    status: int,
    headers: dict[str, str],
    body: bytes,
    keep: int,
) -> RawSaved:
    """Store the exact response (content-addressed) before parsing, keeping the last `keep` per feed."""
    digest = hashlib.sha256(body).hexdigest()
    last = await conn.fetchrow(
        """SELECT body_sha256, parse_error FROM mod_rss.raw_fetches WHERE feed_id = $1
           ORDER BY fetched_at DESC, id DESC LIMIT 1""",
        feed_id,
    )
    if not await conn.fetchval(
        "SELECT 1 FROM mod_rss.raw_blobs WHERE sha256 = $1", digest
    ):  # don't resend known bytes
        await conn.execute(
            "INSERT INTO mod_rss.raw_blobs (sha256, body, size) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING",
            digest,
            body,
            len(body),
        )
    raw_id: int = await conn.fetchval(
        "INSERT INTO mod_rss.raw_fetches (feed_id, url, status, headers, body_sha256) VALUES ($1, $2, $3, $4, $5) RETURNING id",
        feed_id,
        url,
        status,
        headers,
        digest,
    )
    await conn.execute(
        """DELETE FROM mod_rss.raw_fetches WHERE feed_id = $1 AND id NOT IN (
               SELECT id FROM mod_rss.raw_fetches WHERE feed_id = $1 ORDER BY fetched_at DESC, id DESC LIMIT $2)""",
        feed_id,
        max(keep, 1),
    )
    return RawSaved(
        raw_id, last is not None and last["body_sha256"] == digest and last["parse_error"] is None
    )


async def mark_parse_error(conn: asyncpg.Connection, raw_id: int, error: str) -> None:
    await conn.execute("UPDATE mod_rss.raw_fetches SET parse_error = $2 WHERE id = $1", raw_id, error)


async def delete_orphan_blobs(conn: asyncpg.Connection) -> int:
    result: str = await conn.execute(
        """DELETE FROM mod_rss.raw_blobs b WHERE NOT EXISTS (SELECT 1 FROM mod_rss.raw_fetches r WHERE r.body_sha256 = b.sha256)"""
    )
    return int(result.split()[-1])


@dataclass(slots=True)
class EntryChanges:
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    tombstoned: int = 0
    new_times: list[datetime] = field(default_factory=list)


_ENTRY_FIELDS = tuple(f.name for f in fields(Entry))


def _entry_record(e: Entry, feed_id: int, now: datetime) -> dict[str, Any]:
    """A JSON-ready row; a shallow copy (dataclasses.asdict deep-copies and was 4× slower here)."""
    d = {name: getattr(e, name) for name in _ENTRY_FIELDS}
    d["enclosures"] = [{"url": x.url, "type": x.type, "length": x.length} for x in e.enclosures]
    d["message_id"] = str(publish.message_id(feed_id, e.guid))
    for key in ("published", "updated"):
        d[key] = d[key].isoformat() if d[key] is not None else None
    d["effective_at"] = (e.published if e.published is not None and not e.future_dated else now).isoformat()
    return d


_RECORDSET = """r(guid text, guid_source text, message_id uuid, title text, link text, authors jsonb, categories jsonb,
    enclosures jsonb, image text, duration_seconds integer, published timestamptz, updated timestamptz,
    date_uncertain boolean, future_dated boolean, summary_html text, content_html text, content_text text,
    word_count integer, reading_time_minutes integer, partial_content boolean, content_hash text, effective_at timestamptz)"""


async def apply_entries(
    conn: asyncpg.Connection,
    *,
    feed: FeedRow,
    entries: Sequence[Entry],
    now: datetime,
    first_poll: bool,
    lookback_hours: int,
) -> EntryChanges:
    """Insert new entries, revise changed ones, touch the rest, and queue one event per new or revised entry.

    Runs inside the caller's transaction, so entries and their events commit (or roll back) together.
    """
    changes = EntryChanges()
    if not entries:
        return changes
    guids = [e.guid for e in entries]
    known = {
        r["guid"]: r
        for r in await conn.fetch(
            "SELECT guid, content_hash, revision, first_seen FROM mod_rss.entries WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed.id,
            guids,
        )
    }
    dead = {
        r["guid"]
        for r in await conn.fetch(
            "SELECT guid FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed.id,
            guids,
        )
    }
    fresh = [e for e in entries if e.guid not in known and e.guid not in dead]
    revised = [e for e in entries if e.guid in known and known[e.guid]["content_hash"] != e.content_hash]
    changes.tombstoned = sum(1 for e in entries if e.guid in dead)
    seen = [e.guid for e in entries if e.guid in known]
    changes.unchanged = len(seen) - len(revised)
    if seen:
        await conn.execute(
            "UPDATE mod_rss.entries SET last_seen = $3, seen_count = seen_count + 1 WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed.id,
            seen,
            now,
        )
    events: list[Event] = []
    if fresh:
        records = [_entry_record(e, feed.id, now) for e in fresh]
        inserted = {
            r["guid"]
            for r in await conn.fetch(
                f"""INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, link, authors, categories,
                        enclosures, image, duration_seconds, published, updated, date_uncertain, future_dated, summary_html,
                        content_html, content_text, word_count, reading_time_minutes, partial_content, content_hash,
                        first_seen, last_seen, effective_at)
                    SELECT $1, r.guid, r.guid_source, r.message_id, r.title, r.link,
                           ARRAY(SELECT jsonb_array_elements_text(r.authors)), ARRAY(SELECT jsonb_array_elements_text(r.categories)),
                           r.enclosures, r.image, r.duration_seconds, r.published, r.updated, r.date_uncertain, r.future_dated,
                           r.summary_html, r.content_html, r.content_text, r.word_count, r.reading_time_minutes,
                           r.partial_content, r.content_hash, $3, $3, r.effective_at
                    FROM jsonb_to_recordset($2::jsonb) AS {_RECORDSET}
                    ON CONFLICT (feed_id, guid) DO NOTHING RETURNING guid""",
                feed.id,
                records,
                now,
            )
        }
        for e in fresh:
            if e.guid not in inserted:
                continue
            realtime = publish.is_realtime(
                first_poll=first_poll, published=e.published, now=now, lookback_hours=lookback_hours
            )
            message = publish.build_message(
                e, feed_id=feed.id, feed_title=feed.title, first_seen=now, realtime=realtime
            )
            events.append(publish.created_event(message))
            changes.new_times.append(e.published or now)
        changes.new = len(inserted)
    for e in revised:
        row = known[e.guid]
        rec = _entry_record(e, feed.id, now)
        await conn.execute(
            f"""UPDATE mod_rss.entries SET title = r.title, link = r.link,
                    authors = ARRAY(SELECT jsonb_array_elements_text(r.authors)),
                    categories = ARRAY(SELECT jsonb_array_elements_text(r.categories)), enclosures = r.enclosures,
                    image = r.image, duration_seconds = r.duration_seconds, published = r.published, updated = r.updated,
                    date_uncertain = r.date_uncertain, future_dated = r.future_dated, summary_html = r.summary_html,
                    content_html = r.content_html, content_text = r.content_text, word_count = r.word_count,
                    reading_time_minutes = r.reading_time_minutes, partial_content = r.partial_content,
                    content_hash = r.content_hash, revision = revision + 1
                FROM jsonb_to_recordset($3::jsonb) AS {_RECORDSET}
                WHERE feed_id = $1 AND mod_rss.entries.guid = $2""",
            feed.id,
            e.guid,
            [rec],
        )
        message = publish.build_message(
            e,
            feed_id=feed.id,
            feed_title=feed.title,
            first_seen=row["first_seen"],
            realtime=False,
            revision=row["revision"] + 1,
        )
        events.append(publish.updated_event(message, e.content_hash))
    changes.updated = len(revised)
    await outbox.enqueue_many(conn, events)
    return changes


async def finish_poll(
    conn: asyncpg.Connection, feed_id: int, fields: dict[str, Any], *, failed: bool = False
) -> None:
    """Release the lease and record the poll's outcome (columns of poll_state)."""
    fields = {**fields, "lease_until": None, "leased_by": None}
    sets = ", ".join(f"{k} = ${i + 2}" for i, k in enumerate(fields))
    if failed:
        sets += ", total_errors = total_errors + 1"
    await conn.execute(f"UPDATE mod_rss.poll_state SET {sets} WHERE feed_id = $1", feed_id, *fields.values())


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


# -- cleanup -------------------------------------------------------------------------------------
async def expire_entries(conn: asyncpg.Connection, *, default_days: int) -> int:
    """Delete entries past their feed's retention, leaving tombstones so they never return as new."""
    rows = await conn.fetch(
        """WITH gone AS (
               DELETE FROM mod_rss.entries e USING mod_rss.feeds f
               WHERE f.id = e.feed_id AND e.effective_at < now() - make_interval(days => coalesce(f.retention_days, $1))
               RETURNING e.feed_id, e.guid)
           INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone
           ON CONFLICT DO NOTHING RETURNING 1""",
        default_days,
    )
    return len(rows)


async def delete_entry(conn: asyncpg.Connection, entry_id: int) -> None:
    """Delete one entry and leave its tombstone."""
    await conn.execute(
        """WITH gone AS (DELETE FROM mod_rss.entries WHERE id = $1 RETURNING feed_id, guid)
           INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone ON CONFLICT DO NOTHING""",
        entry_id,
    )
