"""Liked articles on PostgreSQL (the interest profile's second half) and 30-day feed health through
rss_public.feed_health (migration rss/0016: polls counted per day by a trigger on poll_state)."""

from __future__ import annotations

import uuid
from dataclasses import replace

from host.runtime import Host
from modules.digest.intake.event import to_article
from modules.digest.intake.handler import ingest
from modules.digest.store import likes, sources
from tests.digest.test_intake import rss_event


async def test_like_unlike_and_the_profile_texts(host: Host) -> None:
    a = to_article(rss_event())
    b = replace(
        to_article(rss_event()), message_id=uuid.UUID(int=8), title="Comet seen", body="A comet " * 40
    )
    async with host.require_pool().acquire() as conn, conn.transaction():
        await ingest(conn, a)
        await ingest(conn, b)
    async with host.require_pool().acquire() as conn:
        ids = {r["title"]: r["id"] for r in await conn.fetch("SELECT id, title FROM mod_digest.articles")}
        assert await likes.profile_texts(conn) == []
        liked = await likes.like(conn, ids["Comet seen"])
        assert liked is not None and liked["title"] == "Comet seen"
        assert await likes.like(conn, ids["Comet seen"]) is not None  # liking twice changes nothing
        assert await likes.like(conn, 10**9) is None
        assert await likes.profile_texts(conn) == [("Comet seen", b.body)]
        assert [r["article_id"] for r in await likes.list_all(conn)] == [ids["Comet seen"]]
        assert await likes.unlike(conn, ids["Comet seen"]) and not await likes.unlike(conn, ids["Comet seen"])
        assert await likes.profile_texts(conn) == []


async def test_feed_health_counts_the_last_30_days_only(host: Host) -> None:
    pool = host.require_pool()
    feed = await pool.fetchval(
        "INSERT INTO mod_rss.feeds (url, title) VALUES ('https://f.example/x', 'F') RETURNING id"
    )
    await pool.execute("INSERT INTO mod_rss.poll_state (feed_id, successful_polls) VALUES ($1, 90)", feed)
    # 40 days ago the feed failed a lot: outside the window, and forgotten at the next day's first poll.
    await pool.execute(
        "INSERT INTO mod_rss.poll_days VALUES ($1, (now() AT TIME ZONE 'UTC')::date - 40, 0, 50)", feed
    )
    # Polls as the rss module records them: every poll sets last_polled_at, a failure raises total_errors.
    await pool.execute(
        "UPDATE mod_rss.poll_state SET last_polled_at = now() - interval '2 seconds' WHERE feed_id = $1", feed
    )
    await pool.execute(
        "UPDATE mod_rss.poll_state SET last_polled_at = now() - interval '1 second' WHERE feed_id = $1", feed
    )
    await pool.execute(
        "UPDATE mod_rss.poll_state SET last_polled_at = now(), total_errors = total_errors + 1 WHERE feed_id = $1",
        feed,
    )
    await pool.execute(
        "UPDATE mod_rss.poll_state SET next_poll_at = now() WHERE feed_id = $1", feed
    )  # no poll
    async with pool.acquire() as conn:
        health = (await sources.feed_health(conn))[feed]
        lifetime = await conn.fetchrow("SELECT polls_ok, polls_failed FROM rss_public.feed_health")
        days = await conn.fetchval("SELECT count(*) FROM mod_rss.poll_days WHERE feed_id = $1", feed)
    assert (health["polls_ok"], health["polls_failed"]) == (2, 1)
    assert abs(health["health"] - 2 / 3) < 1e-9
    assert tuple(lifetime) == (90, 1)  # the lifetime columns are unchanged for other readers
    assert days == 1
