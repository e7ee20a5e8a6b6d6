"""Reads the service layer needs beyond the pipeline's own (modules/rss/service): what a fetch-now left
behind, whether a feed exists."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg


async def poll_errors(conn: asyncpg.Connection, feed_ids: Sequence[int]) -> dict[int, str]:
    """feed id → its last error, for those of these feeds whose last poll failed."""
    rows = await conn.fetch(
        "SELECT feed_id, last_error FROM mod_rss.poll_state"
        " WHERE feed_id = ANY($1::bigint[]) AND consecutive_errors > 0",
        list(feed_ids),
    )
    return {r["feed_id"]: r["last_error"] for r in rows}


async def feed_exists(conn: asyncpg.Connection, feed_id: int) -> bool:
    return bool(await conn.fetchval("SELECT 1 FROM mod_rss.feeds WHERE id = $1", feed_id))
