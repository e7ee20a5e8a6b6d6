"""The daily cleanup job (retention, tombstones no longer needed, orphan raw blobs, compressing raw
blobs stored before rss/0031) and the context-owner hooks for host housekeeping."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from host.module import ModuleContext
from modules.rss import store
from modules.rss.model import context_key
from modules.rss.store.entries import prune_tombstones
from modules.rss.store.raw import compress_old_blobs

# A guid no parse of its feed listed for 30 days is forgotten: should the feed list it again later, it is
# a new entry (and announced). Tombstones exist for entries already past retention (90 days by default),
# and feeds list their latest items: 30 days keeps the standing tombstones to a month of expiries.
TOMBSTONE_KEEP_DAYS = 30


async def run(ctx: ModuleContext) -> dict[str, Any]:
    expired = await store.expire_entries(ctx.pool, default_days=int(ctx.settings["retention_days"]))
    tombstones = await prune_tombstones(ctx.pool, keep_days=TOMBSTONE_KEEP_DAYS)
    async with ctx.pool.acquire() as conn, conn.transaction():
        blobs = await store.delete_orphan_blobs(conn)
    return {
        "entries_expired": expired,
        "tombstones_pruned": tombstones,
        "raw_blobs_deleted": blobs,
        "raw_blobs_compressed": await compress_old_blobs(ctx.pool),
    }


async def live_messages(conn: asyncpg.Connection, ids: Sequence[uuid.UUID]) -> set[uuid.UUID]:
    """Which of these message ids still have an entry (expired entries' context links are dropped)."""
    rows = await conn.fetch("SELECT message_id FROM mod_rss.entries WHERE message_id = ANY($1::uuid[])", ids)
    return {r["message_id"] for r in rows}


async def live_sources(conn: asyncpg.Connection, keys: Sequence[str]) -> set[str]:
    """Which of these context keys (`feed:<id>`) still name a subscribed feed."""
    rows = await conn.fetch("SELECT id FROM mod_rss.feeds")  # a few thousand ids at most
    alive = {context_key(r["id"]) for r in rows}
    return {k for k in keys if k in alive}
