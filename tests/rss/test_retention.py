"""Retention (issue 25 item 3): entries expire feed batch by feed batch, each feed by its own retention,
with tombstones; the cost follows what expires, not the table (bench/retention_cost.py). Tombstones go
once a parse shows their guid unlisted for `TOMBSTONE_KEEP_DAYS`; the daily cleanup does both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncpg
import pytest

from host.runtime import Host
from modules.rss import store
from modules.rss.store import entries, raw
from tests.feedserver import FeedServer, Route, ago, rss


async def test_expiry_goes_through_every_batch_of_feeds_with_each_feeds_retention(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entries, "EXPIRE_FEEDS_PER_BATCH", 2)  # 5 feeds: three batches
    pool = host.require_pool()
    async with pool.acquire() as conn:
        ids = [(await store.add_feed(conn, url=f"http://127.0.0.1:9/f{i}"))[0].id for i in range(5)]
        await conn.execute("UPDATE mod_rss.feeds SET retention_days = 100 WHERE id = $1", ids[4])
        for feed_id in ids:
            for guid, days in (("old", 40), ("older", 60), ("young", 1)):
                await conn.execute(
                    """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, content_hash,
                                                    first_seen, last_seen, effective_at)
                       VALUES ($1, $2, 'guid', gen_random_uuid(), 'h', now(), now(),
                               now() - make_interval(days => $3))""",
                    feed_id,
                    guid,
                    days,
                )
    assert await store.expire_entries(pool, default_days=30) == 8
    left = await pool.fetch("SELECT feed_id, guid FROM mod_rss.entries ORDER BY feed_id, guid")
    assert [(r["feed_id"], r["guid"]) for r in left] == [(f, "young") for f in ids[:4]] + [
        (ids[4], g) for g in ("old", "older", "young")
    ]
    tombs = await pool.fetch("SELECT feed_id, guid FROM mod_rss.tombstones ORDER BY feed_id, guid")
    assert [(r["feed_id"], r["guid"]) for r in tombs] == [(f, g) for f in ids[:4] for g in ("old", "older")]
    assert await store.expire_entries(pool, default_days=30) == 0


async def entry(conn: asyncpg.Connection, feed_id: int, guid: str, *, seen_days_ago: float) -> None:
    await conn.execute(
        """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, content_hash,
                                        first_seen, last_seen, effective_at)
           VALUES ($1, $2, 'guid', gen_random_uuid(), 'h', now() - make_interval(days => 300),
                   now() - make_interval(days => $3), now() - make_interval(days => 300))""",
        feed_id,
        guid,
        seen_days_ago,
    )


async def tombstone(conn: asyncpg.Connection, feed_id: int, guid: str, *, listed_days_ago: float) -> None:
    await conn.execute(
        """INSERT INTO mod_rss.tombstones (feed_id, guid, deleted_at, listed_at)
           VALUES ($1, $2, now() - interval '300 days', now() - make_interval(days => $3))""",
        feed_id,
        guid,
        listed_days_ago,
    )


async def test_tombstones_go_only_when_a_parse_since_shows_their_feed_no_longer_lists_them(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entries, "EXPIRE_FEEDS_PER_BATCH", 2)  # 4 feeds: two batches
    pool = host.require_pool()
    async with pool.acquire() as conn:
        parsed, barely, never, listed = [
            (await store.add_feed(conn, url=f"http://127.0.0.1:9/t{i}"))[0].id for i in range(4)
        ]
        await entry(conn, parsed, "alive", seen_days_ago=0)  # parsed today
        await tombstone(conn, parsed, "unlisted", listed_days_ago=100)  # → pruned
        await tombstone(conn, parsed, "recent", listed_days_ago=10)  # inside the window: kept
        await entry(conn, barely, "alive", seen_days_ago=95)  # last parsed a day after the tombstone
        await tombstone(conn, barely, "unlisted", listed_days_ago=96)  # no proof it is unlisted: kept
        await tombstone(conn, never, "unlisted", listed_days_ago=200)  # no entries, no parse known: kept
        await entry(conn, listed, "alive", seen_days_ago=0)
        await tombstone(conn, listed, "still", listed_days_ago=100)
        await tombstone(conn, listed, "fresh", listed_days_ago=0.1)
        fresh_before = await conn.fetchval(
            "SELECT listed_at FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = 'fresh'", listed
        )
        async with conn.transaction():  # a parse of `listed` that still lists both
            _, gone = await store.load_known(conn, listed, ["alive", "still", "fresh", "other"])
        assert gone == {"still", "fresh"}
        moved = await conn.fetchval(
            "SELECT listed_at > now() - interval '1 minute' FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = 'still'",
            listed,
        )
        assert moved
        assert fresh_before == await conn.fetchval(
            "SELECT listed_at FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = 'fresh'", listed
        )  # moved at most once a day
    assert await entries.prune_tombstones(pool, keep_days=30) == 1
    left = await pool.fetch("SELECT feed_id, guid FROM mod_rss.tombstones ORDER BY feed_id, guid")
    assert [(r["feed_id"], r["guid"]) for r in left] == [
        (parsed, "recent"),
        (barely, "unlisted"),
        (never, "unlisted"),
        (listed, "fresh"),
        (listed, "still"),
    ]
    assert await entries.prune_tombstones(pool, keep_days=30) == 0


async def test_the_cleanup_job_prunes_tombstones_and_compresses_old_raw_blobs(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    host = await rss_host(retention_days="30")
    feed_server.route(
        "/feed", Route(body=rss([("old", "Old", ago(days=40), "x"), ("new", "New", ago(days=1), "y")]))
    )
    async with host.require_pool().acquire() as conn:
        feed = (await store.add_feed(conn, url=feed_server.url("/feed")))[0]
        await tombstone(conn, feed.id, "long-gone", listed_days_ago=120)
    assert (await host.run_job_once("rss.poll")).status == "ok"
    pool = host.require_pool()
    fetch_id = await pool.fetchval("SELECT max(id) FROM mod_rss.raw_fetches")
    async with pool.acquire() as conn:
        body = (await raw.get_raw(conn, fetch_id) or {})["body"]
    assert await pool.fetchval("SELECT codec FROM mod_rss.raw_blobs") == "zstd"
    await pool.execute(
        "UPDATE mod_rss.raw_blobs SET codec = 'identity', body = $1", body
    )  # as before rss/0031
    result = await host.run_job_once("rss.cleanup")
    assert result.status == "ok"
    assert {
        k: result.metrics[k] for k in ("entries_expired", "tombstones_pruned", "raw_blobs_compressed")
    } == {
        "entries_expired": 1,
        "tombstones_pruned": 1,
        "raw_blobs_compressed": 1,
    }
    assert [r["guid"] for r in await pool.fetch("SELECT guid FROM mod_rss.tombstones")] == ["old"]
    assert await pool.fetchval("SELECT codec FROM mod_rss.raw_blobs") == "zstd"
    async with pool.acquire() as conn:
        assert (await raw.get_raw(conn, fetch_id) or {})["body"] == body
