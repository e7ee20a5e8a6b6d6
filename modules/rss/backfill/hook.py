"""Backfill's part in a poll: the first time a feed that allows it shows RFC 5005 archive links, queue
its walk, in the poll's transaction (ingest/hooks.py)."""

from __future__ import annotations

import asyncpg

from host.module import ModuleContext
from modules.rss.backfill import links as archive
from modules.rss.ingest.hooks import Fetched, Hook
from modules.rss.store import backfill as walks


async def _stored(ctx: ModuleContext, conn: asyncpg.Connection, fetched: Fetched) -> None:
    if not fetched.feed.backfill:
        return
    first = archive.start(fetched.parsed.links)
    if first is not None:
        await walks.offer(conn, fetched.feed.id, *first, max_pages=int(ctx.settings["backfill_max_pages"]))


HOOK = Hook("backfill", stored=_stored)
