"""The posting queue: bus events in, Discord messages out, each item at most once per channel.

`on_message_created` (the declared bus subscription) queues an entry for every channel subscribed to its
feed, in the host's transaction for that delivery. `cycle` (run by the bot service) posts the oldest
queued items, at most `per_feed` per subscription per `window_s` seconds (the poster's interval), each in
its own transaction that locks the queue row, sends, and records (feed, channel, guid) in posted_items. A process killed between Discord's
answer and the commit re-sends the item with the same nonce, and Discord (`enforce_nonce`) returns the
message it already created instead of posting twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import asyncpg

from host.module import ModuleContext, ReceivedEvent
from modules.discord import store
from modules.discord.format import Item, embed

log = logging.getLogger("feedeater.discord")
NONCE_CHARS = 25  # Discord's limit for a message nonce


class ChannelUnavailable(Exception):
    """The channel is gone or the bot may not post there: its subscriptions are paused, not retried."""


class Refused(Exception):
    """Discord refused this one message for good (a 4xx such as Invalid Form Body): retrying would fail
    the same way every round, so the item is skipped rather than left at the head of the queue."""


class Channels(Protocol):
    """What posting needs from Discord (bot.py implements it with discord.py)."""

    async def send(self, channel_id: int, embed: dict[str, Any], nonce: str) -> int: ...
    async def say(self, channel_id: int, text: str) -> None: ...


def nonce(feed_id: int, channel_id: int, guid: str) -> str:
    """The same item in the same channel always gets the same nonce (Discord deduplicates on it)."""
    return hashlib.sha256(f"{feed_id}\0{channel_id}\0{guid}".encode()).hexdigest()[:NONCE_CHARS]


def wake(ctx: ModuleContext) -> asyncio.Event:
    """The event that tells this process's poster that something was queued."""
    return ctx.once("wake", asyncio.Event)


async def on_message_created(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
    """Queue a new rss entry for the channels subscribed to its feed (inside the delivery's transaction)."""
    rss = event.payload.get("message", {}).get("rss")
    if not rss:
        return
    item = Item.from_rss(rss)
    if await store.enqueue(conn, int(rss["feedId"]), item, item.published or datetime.now(UTC)):
        wake(ctx).set()


def gone_notice(name: str, sub_id: int) -> str:
    return (
        f"The feed **{name}** (ID: {sub_id}) answers 410 Gone: it has been removed by its publisher and "
        f"will not be checked again. Remove it with `/feed remove {sub_id}`."
    )


async def cycle(
    pool: asyncpg.Pool,
    channels: Channels,
    *,
    per_feed: int,
    window_s: float,
    limit: int,
    to_text: Callable[[str], str],
) -> dict[str, int]:
    """One posting round (at most `per_feed` per subscription per `window_s`); returns counts (posted,
    failed: retried next round, refused: skipped, paused, gone)."""
    counts: Counter[str] = Counter()
    async with pool.acquire() as conn:
        pending = await store.due(conn, per_feed, limit, window_s)
    stopped: set[int] = set()  # channels paused during this round
    for p in pending:
        if p.sub.channel_id in stopped:
            continue
        async with pool.acquire() as conn, conn.transaction():
            if not await store.lock(conn, p):
                continue  # posted (or being posted) by another round or host meanwhile
            now = datetime.now(UTC)
            try:
                message_id = await channels.send(
                    p.sub.channel_id,
                    embed(p.item, p.sub.source, now=now, to_text=to_text),
                    nonce(p.sub.feed_id, p.sub.channel_id, p.item.guid),
                )
            except ChannelUnavailable as exc:
                paused = await store.pause(conn, p.sub.channel_id, str(exc))
                log.warning(
                    "discord: channel %s %s; %d subscription(s) paused", p.sub.channel_id, exc, paused
                )
                stopped.add(p.sub.channel_id)
                counts["paused"] += paused
                continue
            except Refused as exc:
                await store.mark_posted(conn, p, None)  # remembered as seen: never queued again
                log.warning(
                    "discord: Discord refused item %r for channel %s (%s); skipped",
                    p.item.guid,
                    p.sub.channel_id,
                    exc,
                )
                counts["refused"] += 1
                continue
            except Exception as exc:
                await store.mark_failed(conn, p, f"{type(exc).__name__}: {exc}")
                log.warning(
                    "discord: posting %r to channel %s failed: %s", p.item.guid, p.sub.channel_id, exc
                )
                counts["failed"] += 1
                continue
            await store.mark_posted(conn, p, message_id)
            counts["posted"] += 1
    counts["gone"] = await notify_gone(pool, channels)
    return dict(counts)


async def notify_gone(pool: asyncpg.Pool, channels: Channels) -> int:
    """Tell each channel once that a feed it follows went 410 Gone."""
    told = 0
    async with pool.acquire() as conn, conn.transaction():
        for sub in await store.gone_unnotified(conn):
            try:
                await channels.say(sub.channel_id, gone_notice(sub.name, sub.id))
            except ChannelUnavailable as exc:
                await store.pause(conn, sub.channel_id, str(exc))
                log.warning("discord: channel %s %s; its subscriptions are paused", sub.channel_id, exc)
            await store.mark_gone_notified(conn, sub.id)
            told += 1
    return told


async def prune(ctx: ModuleContext) -> dict[str, Any]:
    """The daily job: forget posted items (and drop queued ones) older than the retention."""
    async with ctx.pool.acquire() as conn, conn.transaction():
        posted, queued = await store.prune(conn, int(ctx.settings["retention_days"]))
    return {"posted_items_pruned": posted, "queued_items_dropped": queued}
