"""The websub job: hub failures found by the clock fall back to polling; leases are renewed in time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from host.module import ModuleContext
from modules.rss.store import websub as subs
from modules.rss.websub import subscribe

BATCH = 100


async def run(ctx: ModuleContext) -> dict[str, Any]:
    now = datetime.now(UTC)
    async with ctx.pool.acquire() as conn:
        counts = await subs.expire(
            conn, now=now, verify_timeout_s=float(ctx.settings["websub_verify_timeout_seconds"])
        )
    if not subscribe.enabled(ctx):
        return counts
    async with ctx.pool.acquire() as conn:
        due = await subs.RENEW_QUEUE.claim(
            conn,
            now=now,
            limit=BATCH,
            lease_s=float(ctx.settings["timeout_seconds"]) * 2,
            owner=ctx.host_id,
        )
    renewed = [await subscribe.renew(ctx, subs.Subscription.from_record(r), now) for r in due]
    return counts | {"renewed": sum(renewed), "renew_refused": len(renewed) - sum(renewed)}
