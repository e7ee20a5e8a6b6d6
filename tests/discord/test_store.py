"""The posting queue's SQL on a real PostgreSQL: per-feed caps, oldest first, dedupe, pause, prune."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from modules.discord import store
from modules.discord.format import Item
from tests.discord.harness import discord_installed
from tests.services import make_host

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
async def pool(tmp_path: Path, database_url: str, nats_url: str) -> AsyncIterator[asyncpg.Pool]:
    with discord_installed(tmp_path / "site"):
        host = make_host(tmp_path / "home", database_url, nats_url)
        await host.open(with_bus=False)
    yield host.require_pool()
    await host.close()


def item(i: int) -> Item:
    return Item(f"g{i}", f"Item {i}", None, None, None, T0 + timedelta(minutes=i))


async def sub(conn: asyncpg.Connection, channel: int, feed: int = 1, guild: int = 1) -> store.Subscription:
    s, created = await store.add_subscription(
        conn,
        guild_id=guild,
        channel_id=channel,
        feed_id=feed,
        feed_url="https://f/x",
        name="F",
        icon_url=None,
        added_by=9,
    )
    assert created
    return s


async def test_queue_is_capped_per_feed_oldest_first_and_never_repeats(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        a, b = await sub(conn, 100), await sub(conn, 200)
        await store.remember_existing(conn, 1, 200, ["g0"])  # g0 existed when b subscribed
        for i in reversed(range(8)):  # arrival order does not matter: publish time does
            assert await store.enqueue(conn, 1, item(i), item(i).published or T0) == (1 if i == 0 else 2)
        assert await store.enqueue(conn, 1, item(3), T0) == 0  # already queued everywhere
        due = await store.due(conn, per_feed=5, limit=100, window_s=60)
        by_sub = {s.id: [p.item.guid for p in due if p.sub.id == s.id] for s in (a, b)}
        assert by_sub == {a.id: ["g0", "g1", "g2", "g3", "g4"], b.id: ["g1", "g2", "g3", "g4", "g5"]}

        async with conn.transaction():
            assert await store.lock(conn, due[0])
            await store.mark_posted(conn, due[0], 555)
        assert await store.enqueue(conn, 1, due[0].item, T0) == 0  # posted: never queued again there
        assert (
            await store.add_subscription(
                conn,
                guild_id=1,
                channel_id=100,
                feed_id=1,
                feed_url="https://f/x",
                name="F",
                icon_url=None,
                added_by=9,
            )
        )[1] is False

        # What a subscription posted in the window counts against its cap; the seen-at-add rows do not.
        again = await store.due(conn, per_feed=5, limit=100, window_s=60)
        assert [p.item.guid for p in again if p.sub.id == a.id] == ["g1", "g2", "g3", "g4"]
        assert len([p for p in again if p.sub.id == b.id]) == 5
        await conn.execute("UPDATE mod_discord.posted_items SET posted_at = now() - interval '61 seconds'")
        later = await store.due(conn, per_feed=5, limit=100, window_s=60)
        assert [p.item.guid for p in later if p.sub.id == a.id] == ["g1", "g2", "g3", "g4", "g5"]

        assert await store.pause(conn, 200, "was deleted") == 1
        assert {p.sub.id for p in await store.due(conn, per_feed=5, limit=100, window_s=60)} == {a.id}
        assert await store.enqueue(conn, 1, item(20), T0) == 1  # a paused subscription queues nothing


async def test_prune_forgets_old_posted_items_and_old_queue_rows(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        s = await sub(conn, 100)
        await store.remember_existing(conn, 1, 100, ["old", "new"])
        await store.enqueue(conn, 1, item(1), T0)
        await conn.execute(
            "UPDATE mod_discord.posted_items SET posted_at = now() - interval '91 days' WHERE guid = 'old'"
        )
        await conn.execute("UPDATE mod_discord.outgoing SET queued_at = now() - interval '91 days'")
        assert await store.prune(conn, 90) == (1, 1)
        left = await conn.fetch("SELECT guid FROM mod_discord.posted_items")
        assert [r["guid"] for r in left] == ["new"]
        assert await store.due(conn, 5, 10, 60) == []
        await store.remove_subscription(conn, s)
        assert await conn.fetchval("SELECT count(*) FROM mod_discord.posted_items") == 0


async def test_feeds_are_per_guild(pool: asyncpg.Pool) -> None:
    """A guild sees, removes and counts only its own subscriptions, even for the same feed."""
    async with pool.acquire() as conn:
        mine, theirs = await sub(conn, 100, guild=1), await sub(conn, 300, guild=2)
        assert [r["id"] for r in await store.list_for_guild(conn, 1)] == [mine.id]
        assert [r["id"] for r in await store.list_for_guild(conn, 2)] == [theirs.id]
        assert await store.get_subscription(conn, 1, theirs.id) is None  # /feed remove <their id>
        assert await store.get_subscription(conn, 2, theirs.id) == theirs
        assert await store.guild_status(conn, 1) == (1, 0)
        assert await store.enqueue(conn, 1, item(1), T0) == 2  # the feed goes to both channels
