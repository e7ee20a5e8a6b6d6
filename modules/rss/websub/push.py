"""Content a hub pushed (WebSub §7): stored and announced exactly like a poll's document."""

from __future__ import annotations

import logging
from datetime import datetime

import asyncpg

from host.module import ModuleContext
from modules.rss import store
from modules.rss.ingest.document import Body, ingest_document
from modules.rss.model import Feed
from modules.rss.store import websub as subs

log = logging.getLogger("feedeater.rss.websub")


async def deliver(
    ctx: ModuleContext,
    sub: subs.Subscription,
    feed_id: int,
    body: bytes,
    content_type: str | None,
    now: datetime,
) -> int:
    """Store a verified push (raw → parse → intake, one transaction for entries and events); returns
    how many new entries it brought."""
    async with ctx.pool.acquire() as conn:
        feed = await store.get_feed(conn, feed_id)

    async def count(conn: asyncpg.Connection, _parsed: Feed, _inserted: set[str]) -> None:
        await subs.record_push(conn, sub.id, accepted=True)

    headers = {"content-type": content_type or "", "x-feedeater-source": f"websub {sub.hub}"}
    stored = await ingest_document(
        ctx, feed, Body(sub.topic, headers, body), now=now, skip_same=True, after=count
    )
    if stored.error:
        log.warning("feed %s: pushed content from %s unreadable: %s", feed_id, sub.hub, stored.error)
    elif stored.parsed is not None:
        log.info("feed %s: push from %s: %d new", feed_id, sub.hub, len(stored.inserted))
    return len(stored.inserted)
