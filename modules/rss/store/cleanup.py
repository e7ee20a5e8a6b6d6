"""The daily cleanup job: retention, raw fetch blobs, published outbox rows."""

from __future__ import annotations

from typing import Any

from host import outbox
from host.module import ModuleContext
from modules.rss import store


async def run(ctx: ModuleContext) -> dict[str, Any]:
    async with ctx.pool.acquire() as conn, conn.transaction():
        expired = await store.expire_entries(conn, default_days=int(ctx.settings["retention_days"]))
        blobs = await store.delete_orphan_blobs(conn)
        pruned = await outbox.prune(conn)
    return {"entries_expired": expired, "raw_blobs_deleted": blobs, "outbox_rows_pruned": pruned}
