"""Entries with lineage and tombstones: the writes that intake intents turn into."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import asyncpg

from modules.rss.model import Entry, Intents, Known, message_id

# An entry's stored fields as typed parallel arrays for `unnest` (asyncpg sends them in binary). This
# replaced one jsonb document of all rows: PostgreSQL parsed and unescaped ~5 KB of JSON per entry and
# the host encoded it (bench/insert_cost.py).
_TYPES = (
    ("guid", "text"),
    ("guid_source", "text"),
    ("message_id", "uuid"),
    ("title", "text"),
    ("link", "text"),
    ("authors", "text"),  # these three: JSON text (asyncpg would read a list in an array as a dimension)
    ("categories", "text"),
    ("enclosures", "text"),
    ("image", "text"),
    ("duration_seconds", "int"),
    ("published", "timestamptz"),
    ("updated", "timestamptz"),
    ("date_uncertain", "bool"),
    ("future_dated", "bool"),
    ("summary_html", "text"),
    ("content_html", "text"),
    ("content_text", "text"),
    ("word_count", "int"),
    ("reading_time_minutes", "int"),
    ("partial_content", "bool"),
    ("content_hash", "text"),
    ("raw_hash", "text"),
)
_INTAKE = (("effective_at", "timestamptz"), ("announced", "bool"), ("intake_reason", "text"))


def _unnest(types: Sequence[tuple[str, str]], first: int) -> str:
    """`unnest($first::t[], …) AS r(name, …)` over these columns."""
    arrays = ", ".join(f"${first + i}::{t}[]" for i, (_, t) in enumerate(types))
    return f"unnest({arrays}) AS r({', '.join(name for name, _ in types)})"


def _columns(entries: Sequence[Entry], feed_id: int) -> list[list[Any]]:
    """The arrays of `_TYPES`, one element per entry (`entries` is not empty: write() skips none)."""
    rows = [
        (
            e.guid,
            e.guid_source,
            message_id(feed_id, e.guid),
            e.title,
            e.link,
            json.dumps(e.authors),
            json.dumps(e.categories),
            json.dumps([{"url": x.url, "type": x.type, "length": x.length} for x in e.enclosures]),
            e.image,
            e.duration_seconds,
            e.published,
            e.updated,
            e.date_uncertain,
            e.future_dated,
            e.summary_html,
            e.content_html,
            e.content_text,
            e.word_count,
            e.reading_time_minutes,
            e.partial_content,
            e.content_hash,
            e.raw_hash,
        )
        for e in entries
    ]
    return [list(column) for column in zip(*rows, strict=True)]


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
        r["guid"]: Known(r["content_hash"], r["revision"], r["first_seen"], r["id"], r["raw_hash"])
        for r in await conn.fetch(
            "SELECT guid, content_hash, revision, first_seen, id, raw_hash FROM mod_rss.entries WHERE feed_id = $1 AND guid = ANY($2::text[])",
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
        new = [n.entry for n in intents.new]
        inserted = {
            r["guid"]: r["id"]
            for r in await conn.fetch(
                f"""INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, link, authors, categories,
                        enclosures, image, duration_seconds, published, updated, date_uncertain, future_dated, summary_html,
                        content_html, content_text, word_count, reading_time_minutes, partial_content, content_hash,
                        first_seen, last_seen, effective_at, fetch_id, last_fetch_id, announced, intake_reason, raw_hash)
                    SELECT $1, r.guid, r.guid_source, r.message_id, r.title, r.link,
                           ARRAY(SELECT jsonb_array_elements_text(r.authors::jsonb)),
                           ARRAY(SELECT jsonb_array_elements_text(r.categories::jsonb)), r.enclosures::jsonb, r.image, r.duration_seconds, r.published, r.updated, r.date_uncertain, r.future_dated,
                           r.summary_html, r.content_html, r.content_text, r.word_count, r.reading_time_minutes,
                           r.partial_content, r.content_hash, $2, $2, r.effective_at, $3, $3, r.announced, r.intake_reason,
                           r.raw_hash
                    FROM {_unnest((*_TYPES, *_INTAKE), 4)}
                    ON CONFLICT (feed_id, guid) DO NOTHING RETURNING guid, id""",
                feed_id,
                now,
                intents.fetch_id,
                *_columns(new, feed_id),
                [e.published if e.published is not None and not e.future_dated else now for e in new],
                [n.realtime for n in intents.new],
                [n.reason for n in intents.new],
            )
        }
    if intents.revised:
        await conn.execute(
            f"""UPDATE mod_rss.entries SET title = r.title, link = r.link,
                    authors = ARRAY(SELECT jsonb_array_elements_text(r.authors::jsonb)),
                    categories = ARRAY(SELECT jsonb_array_elements_text(r.categories::jsonb)), enclosures = r.enclosures::jsonb,
                    image = r.image, duration_seconds = r.duration_seconds, published = r.published, updated = r.updated,
                    date_uncertain = r.date_uncertain, future_dated = r.future_dated, summary_html = r.summary_html,
                    content_html = r.content_html, content_text = r.content_text, word_count = r.word_count,
                    reading_time_minutes = r.reading_time_minutes, partial_content = r.partial_content,
                    content_hash = r.content_hash, revision = revision + 1, last_fetch_id = $2, raw_hash = r.raw_hash
                FROM {_unnest(_TYPES, 3)}
                WHERE feed_id = $1 AND mod_rss.entries.guid = r.guid""",
            feed_id,
            intents.fetch_id,
            *_columns([r.entry for r in intents.revised], feed_id),
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
