"""Issue 25: rss/0031 (raw bodies compressed) and rss/0032 (tombstones pruned) convert a database made
by the schema before them in place: every row kept, old bodies read back exactly, then compressed by
the backfill; tombstones still keep their guids out. rss/0034 (raw hashes) likewise."""

from __future__ import annotations

import hashlib
from pathlib import Path

import asyncpg

from host import db, migrate, module
from modules.rss import store
from modules.rss.ingest.diff import diff
from modules.rss.parse import parse_feed
from modules.rss.store import entries, raw
from modules.tap import store as tap_store
from tests.rss.test_raw_skip import FIRST, FIXTURE, NOW, SECOND, THIRD, URL

NEW = ("rss", 31)  # this change's first migration: the database before it is the "current schema"


def corpus_feed(shared: Path) -> bytes:
    files = (p for p in (shared / "realworld" / "feed-rs").iterdir() if p.is_file())
    return max(files, key=lambda p: p.stat().st_size).read_bytes()


async def fill_old_schema(conn: asyncpg.Connection, body: bytes) -> tuple[int, int]:
    """Rows as the code before rss/0031 wrote them (plain bytes in raw_blobs). Returns (feed, fetch)."""
    feed_id: int = await conn.fetchval(
        "INSERT INTO mod_rss.feeds (url) VALUES ('http://127.0.0.1:9/f') RETURNING id"
    )
    await conn.execute("INSERT INTO mod_rss.poll_state (feed_id) VALUES ($1)", feed_id)
    for guid in ("a", "b"):
        await conn.execute(
            """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, content_hash,
                                            first_seen, last_seen, effective_at)
               VALUES ($1, $2, 'guid', gen_random_uuid(), $2, 'h', now(), now(), now())""",
            feed_id,
            guid,
        )
    await conn.execute("INSERT INTO mod_rss.tombstones (feed_id, guid) VALUES ($1, 'expired')", feed_id)
    digest = hashlib.sha256(body).hexdigest()
    await conn.execute(
        "INSERT INTO mod_rss.raw_blobs (sha256, body, size) VALUES ($1, $2, $3)", digest, body, len(body)
    )
    fetch_id: int = await conn.fetchval(
        """INSERT INTO mod_rss.raw_fetches (feed_id, url, status, headers, body_sha256)
           VALUES ($1, 'http://127.0.0.1:9/f', 200, '{}', $2) RETURNING id""",
        feed_id,
        digest,
    )
    return feed_id, fetch_id


async def test_an_existing_database_is_converted_in_place(database_url: str, shared_fixtures: Path) -> None:
    everything = migrate.discover(migrate.sources(module.discover()))
    before = [m for m in everything if (m.scope, m.version) < NEW or m.scope != NEW[0]]
    body = corpus_feed(shared_fixtures)
    conn = await db.connect(database_url)
    try:
        await migrate.apply(conn, before)
        feed_id, fetch_id = await fill_old_schema(conn, body)
        applied = await migrate.apply(conn, everything)
        pool = await db.create_pool(database_url)  # its codecs need pgvector, made by the migrations
        try:
            assert applied[:2] == ["rss/0031_raw_blobs_compressed", "rss/0032_tombstone_pruning"]

            counts = await conn.fetchrow(
                """SELECT (SELECT count(*) FROM mod_rss.entries) AS entries, (SELECT count(*) FROM mod_rss.tombstones) AS tombs,
                          (SELECT count(*) FROM mod_rss.raw_blobs WHERE codec = 'identity') AS plain"""
            )
            assert dict(counts) == {"entries": 2, "tombs": 1, "plain": 1}
            assert (await raw.get_raw(conn, fetch_id) or {})["body"] == body  # readable before the backfill
            assert await tap_store.raw_body(conn, fetch_id) == body
            known, gone = await store.load_known(conn, feed_id, ["a", "expired", "new"])
            assert set(known) == {"a"} and gone == {"expired"}
            # listed_at = the migration's time: a whole window to go before any is pruned
            assert await entries.prune_tombstones(pool, keep_days=30) == 0

            assert await raw.compress_old_blobs(pool, batch=1) == 1
            assert await raw.compress_old_blobs(pool) == 0
            blob = await conn.fetchrow("SELECT codec, size, length(body) AS stored FROM mod_rss.raw_blobs")
            assert blob["codec"] == "zstd" and blob["size"] == len(body) and blob["stored"] < len(body) / 3
            assert (await raw.get_raw(conn, fetch_id) or {})["body"] == body
            assert await tap_store.raw_body(conn, fetch_id) == body
            assert (
                await conn.fetchval("SELECT count(*) FROM rss_public.raw_fetches WHERE size = $1", len(body))
                == 1
            )
        finally:
            await pool.close()
    finally:
        await conn.close()


async def test_raw_hashes_come_to_an_existing_database(database_url: str) -> None:
    """rss/0034 adds entries.raw_hash in place: old rows have none (their items are parsed in full) until
    a parse stores one; from then on their unchanged items are skipped."""
    raw_hash_column = ("rss", 34)
    everything = migrate.discover(migrate.sources(module.discover()))
    before = [
        m for m in everything if (m.scope, m.version) < raw_hash_column or m.scope != raw_hash_column[0]
    ]
    conn = await db.connect(database_url)
    try:
        await migrate.apply(conn, before)
        feed_id: int = await conn.fetchval(
            "INSERT INTO mod_rss.feeds (url) VALUES ('http://127.0.0.1:9/f') RETURNING id"
        )
        for guid in (FIRST, SECOND):
            await conn.execute(
                """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, content_hash,
                                                first_seen, last_seen, effective_at)
                   VALUES ($1, $2, 'id', gen_random_uuid(), $2, 'h', now(), now(), now())""",
                feed_id,
                guid,
            )
        assert await migrate.apply(conn, everything) == ["rss/0034_entries_raw_hash"]
        assert await conn.fetchval("SELECT count(*) FROM mod_rss.entries WHERE raw_hash IS NULL") == 2
        known = await entries.known_raw_hashes(conn, feed_id, 10)
        assert known == frozenset()
        parsed = parse_feed(FIXTURE, url=URL, now=NOW, known=known)
        assert parsed.same == ()  # old rows: every item normalized and diffed as before
        stored, _ = await store.load_known(conn, feed_id, [e.guid for e in parsed.entries])
        intents = diff(parsed.entries, stored, set(), feed_id=feed_id, feed_title="f", now=NOW,
                       first_poll=False, lookback_hours=48)  # fmt: skip
        assert [r.entry.guid for r in intents.revised] == [FIRST, SECOND] and len(intents.new) == 2
        pool = await db.create_pool(database_url)  # its jsonb codec writes the entries
        try:
            async with pool.acquire() as writer, writer.transaction():
                await store.write(writer, intents)
        finally:
            await pool.close()
        known = await entries.known_raw_hashes(conn, feed_id, 10)
        assert len(known) == 4
        assert [s.guid for s in parse_feed(FIXTURE, url=URL, now=NOW, known=known).same] == [
            FIRST,
            SECOND,
            THIRD,
        ]
    finally:
        await conn.close()
