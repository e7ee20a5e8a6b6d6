"""Entries with lineage and tombstones: the writes that intake intents turn into."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

import asyncpg

from modules.rss.model import Entry, Intents, Known, message_id

_ENTRY_FIELDS = tuple(f.name for f in fields(Entry))


def _entry_record(e: Entry, feed_id: int, now: datetime) -> dict[str, Any]:
    """A JSON-ready row; a shallow copy (dataclasses.asdict deep-copies and was 4× slower here)."""
    d = {name: getattr(e, name) for name in _ENTRY_FIELDS}
    d["enclosures"] = [{"url": x.url, "type": x.type, "length": x.length} for x in e.enclosures]
    d["message_id"] = str(message_id(feed_id, e.guid))
    for key in ("published", "updated"):
        d[key] = d[key].isoformat() if d[key] is not None else None
    d["effective_at"] = (e.published if e.published is not None and not e.future_dated else now).isoformat()
    return d


_RECORDSET = """r(guid text, guid_source text, message_id uuid, title text, link text, authors jsonb, categories jsonb,
    enclosures jsonb, image text, duration_seconds integer, published timestamptz, updated timestamptz,
    date_uncertain boolean, future_dated boolean, summary_html text, content_html text, content_text text,
    word_count integer, reading_time_minutes integer, partial_content boolean, content_hash text, effective_at timestamptz,
    announced boolean, intake_reason text, raw_hash text)"""


# The feed's tombstones among these guids; each one still listed is marked so (at most once a day: a
# feed polled every minute does not rewrite its tombstones every minute), which keeps it from pruning.
# SKIP LOCKED: a push and a poll of one feed at once never wait on (or deadlock over) each other's marks.
_LISTED_TOMBSTONES = """WITH t AS (
        SELECT guid FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = ANY($2::text[])),
    listed AS (
        UPDATE mod_rss.tombstones SET listed_at = now() WHERE (feed_id, guid) IN (
            SELECT feed_id, guid FROM mod_rss.tombstones
            WHERE feed_id = $1 AND guid = ANY($2::text[]) AND listed_at < now() - interval '1 day'
            FOR UPDATE SKIP LOCKED))
    SELECT guid FROM t"""


async def load_known(
    conn: asyncpg.Connection, feed_id: int, guids: Sequence[str]
) -> tuple[dict[str, Known], set[str]]:
    """The stored state of these guids: entries we have, and tombstones of entries deleted before."""
    known = {
        r["guid"]: Known(r["content_hash"], r["revision"], r["first_seen"], r["id"])
        for r in await conn.fetch(
            "SELECT guid, content_hash, revision, first_seen, id FROM mod_rss.entries WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed_id,
            guids,
        )
    }
    tombstoned = {r["guid"] for r in await conn.fetch(_LISTED_TOMBSTONES, feed_id, guids)}
    return known, tombstoned


async def known_raw_hashes(conn: asyncpg.Connection, feed_id: int, limit: int) -> frozenset[str]:
    """The raw hashes of the feed's newest `limit` entries (by its (feed_id, effective_at) index): what a
    parse needs to skip its unchanged items (a feed lists its newest; older items are just parsed)."""
    rows = await conn.fetch(
        "SELECT raw_hash FROM mod_rss.entries WHERE feed_id = $1 ORDER BY effective_at DESC LIMIT $2",
        feed_id,
        limit,
    )
    return frozenset(h for (h,) in rows if h is not None)


async def write(conn: asyncpg.Connection, intents: Intents) -> dict[str, int]:
    """Write what the intents say (touch seen, insert new, revise changed); returns the guids inserted
    with their entry ids.

    Runs inside the caller's transaction so the caller can add the events to the same commit. An entry
    that a concurrent writer inserted first is skipped (ON CONFLICT) and not returned.
    """
    feed_id, now = intents.feed_id, intents.now
    if seen := intents.seen:
        await conn.execute(
            """UPDATE mod_rss.entries e SET last_seen = $3, seen_count = seen_count + 1, last_fetch_id = $4,
                      raw_hash = s.raw_hash
               FROM unnest($2::text[], $5::text[]) AS s(guid, raw_hash)
               WHERE e.feed_id = $1 AND e.guid = s.guid""",
            feed_id,
            seen,
            now,
            intents.fetch_id,
            [intents.raw_hashes.get(guid) for guid in seen],
        )
    inserted: dict[str, int] = {}
    if intents.new:
        records = [
            _entry_record(n.entry, feed_id, now) | {"announced": n.realtime, "intake_reason": n.reason}
            for n in intents.new
        ]
        inserted = {
            r["guid"]: r["id"]
            for r in await conn.fetch(
                f"""INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, link, authors, categories,
                        enclosures, image, duration_seconds, published, updated, date_uncertain, future_dated, summary_html,
                        content_html, content_text, word_count, reading_time_minutes, partial_content, content_hash,
                        first_seen, last_seen, effective_at, fetch_id, last_fetch_id, announced, intake_reason, raw_hash)
                    SELECT $1, r.guid, r.guid_source, r.message_id, r.title, r.link,
                           ARRAY(SELECT jsonb_array_elements_text(r.authors)), ARRAY(SELECT jsonb_array_elements_text(r.categories)),
                           r.enclosures, r.image, r.duration_seconds, r.published, r.updated, r.date_uncertain, r.future_dated,
                           r.summary_html, r.content_html, r.content_text, r.word_count, r.reading_time_minutes,
                           r.partial_content, r.content_hash, $3, $3, r.effective_at, $4, $4, r.announced, r.intake_reason,
                           r.raw_hash
                    FROM jsonb_to_recordset($2::jsonb) AS {_RECORDSET}
                    ON CONFLICT (feed_id, guid) DO NOTHING RETURNING guid, id""",
                feed_id,
                records,
                now,
                intents.fetch_id,
            )
        }
    if intents.revised:
        await conn.execute(
            f"""UPDATE mod_rss.entries SET title = r.title, link = r.link,
                    authors = ARRAY(SELECT jsonb_array_elements_text(r.authors)),
                    categories = ARRAY(SELECT jsonb_array_elements_text(r.categories)), enclosures = r.enclosures,
                    image = r.image, duration_seconds = r.duration_seconds, published = r.published, updated = r.updated,
                    date_uncertain = r.date_uncertain, future_dated = r.future_dated, summary_html = r.summary_html,
                    content_html = r.content_html, content_text = r.content_text, word_count = r.word_count,
                    reading_time_minutes = r.reading_time_minutes, partial_content = r.partial_content,
                    content_hash = r.content_hash, revision = revision + 1, last_fetch_id = $3, raw_hash = r.raw_hash
                FROM jsonb_to_recordset($2::jsonb) AS {_RECORDSET}
                WHERE feed_id = $1 AND mod_rss.entries.guid = r.guid""",
            feed_id,
            [_entry_record(r.entry, feed_id, now) for r in intents.revised],
            intents.fetch_id,
        )
    if intents.filtered:
        await conn.executemany(
            """INSERT INTO mod_rss.intake_skips AS s (feed_id, guid, reason, title, link, fetch_id, first_at, last_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
               ON CONFLICT (feed_id, guid) DO UPDATE SET reason = $3, title = $4, link = $5, fetch_id = $6, last_at = $7""",
            [
                (
                    feed_id,
                    f.entry.guid,
                    f"filtered by the processor {f.processor}",
                    f.entry.title,
                    f.entry.link,
                    intents.fetch_id,
                    now,
                )
                for f in intents.filtered
            ],
        )
    return inserted


EXPIRE_FEEDS_PER_BATCH = 500

# One batch of retention: the next `$3` feeds after id `$2`, each feed's old entries found through its
# (feed_id, effective_at) index, deleted with tombstones. Returns the batch's last feed id and the count (`n`).
_EXPIRE_BATCH = """WITH f AS (
        SELECT id, now() - make_interval(days => coalesce(retention_days, $1)) AS cutoff
        FROM mod_rss.feeds WHERE id > $2 ORDER BY id LIMIT $3),
    gone AS (
        DELETE FROM mod_rss.entries e USING f WHERE e.feed_id = f.id AND e.effective_at < f.cutoff
        RETURNING e.feed_id, e.guid),
    kept AS (
        INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone ON CONFLICT DO NOTHING)
    SELECT (SELECT max(id) FROM f) AS last, (SELECT count(*) FROM gone) AS n"""


async def expire_entries(pool: asyncpg.Pool, *, default_days: int) -> int:
    """Delete entries past their feed's retention, leaving tombstones so they never return as new.

    Feed by feed through the (feed_id, effective_at) index, `EXPIRE_FEEDS_PER_BATCH` feeds per
    transaction: the cost follows the entries that expire, not the size of the table (one DELETE joined
    over every feed scanned all of mod_rss.entries daily, in one transaction: bench/retention_cost.py)."""
    return await _feed_batches(pool, _EXPIRE_BATCH, default_days)


async def _feed_batches(pool: asyncpg.Pool, sql: str, days: int) -> int:
    """Run a per-feed batch statement (`$1` days, after feed id `$2`, `$3` feeds; answers `last` feed id
    and `n` rows) over every feed, one transaction per batch; returns the rows."""
    done, after = 0, 0
    while True:
        async with pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(sql, days, after, EXPIRE_FEEDS_PER_BATCH)
        assert row is not None
        if row["last"] is None:
            return done
        done, after = done + row["n"], row["last"]


# One batch of tombstone pruning, per feed like retention: a tombstone goes once no parse of its feed
# listed the guid for `$1` days — proven by a parse since: the feed's newest entry seen more than a day
# after `listed_at` (load_known would have moved `listed_at` had the guid been listed; two days here, for
# the host's and the database's clocks). A feed not parsed since, or without entries, keeps its
# tombstones. Through the (feed_id, listed_at) index.
_PRUNE_BATCH = """WITH f AS (
        SELECT id, least(now() - make_interval(days => $1), coalesce((
            SELECT e.last_seen - interval '2 days' FROM mod_rss.entries e WHERE e.feed_id = feeds.id
            ORDER BY e.effective_at DESC LIMIT 1), '-infinity')) AS before
        FROM mod_rss.feeds WHERE id > $2 ORDER BY id LIMIT $3),
    gone AS (
        DELETE FROM mod_rss.tombstones t USING f WHERE t.feed_id = f.id AND t.listed_at < f.before RETURNING 1)
    SELECT (SELECT max(id) FROM f) AS last, (SELECT count(*) FROM gone) AS n"""


async def prune_tombstones(pool: asyncpg.Pool, *, keep_days: int) -> int:
    """Delete the tombstones no longer needed (see _PRUNE_BATCH); returns how many."""
    return await _feed_batches(pool, _PRUNE_BATCH, keep_days)


async def delete_entry(conn: asyncpg.Connection, entry_id: int) -> None:
    """Delete one entry and leave its tombstone."""
    await conn.execute(
        """WITH gone AS (DELETE FROM mod_rss.entries WHERE id = $1 RETURNING feed_id, guid)
           INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone ON CONFLICT DO NOTHING""",
        entry_id,
    )
