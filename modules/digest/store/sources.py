"""mod_digest.sources (the authority registry) and the rss module's public feed_health view."""

from __future__ import annotations

from typing import Any

import asyncpg


async def set_tier(conn: asyncpg.Connection, domain: str, tier: int, name: str | None = None) -> None:
    await conn.execute(
        """INSERT INTO mod_digest.sources (domain, tier, name) VALUES ($1, $2, $3)
           ON CONFLICT (domain) DO UPDATE SET tier = EXCLUDED.tier,
               name = COALESCE(EXCLUDED.name, mod_digest.sources.name), updated_at = now()""",
        domain,
        tier,
        name,
    )


async def remove(conn: asyncpg.Connection, domain: str) -> bool:
    return bool(
        await conn.fetchval("DELETE FROM mod_digest.sources WHERE domain = $1 RETURNING true", domain)
    )


async def list_all(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT domain, tier, name, updated_at FROM mod_digest.sources ORDER BY tier, domain"
    )
    return [dict(r) for r in rows]


async def _has_feed_health(conn: asyncpg.Connection) -> bool:
    return bool(await conn.fetchval("SELECT to_regclass('rss_public.feed_health') IS NOT NULL"))


async def feed_health(conn: asyncpg.Connection) -> dict[int, dict[str, Any]]:
    """feed id → its row of rss_public.feed_health over the last 30 days (seed 002 step 4: polls_ok,
    polls_failed and health are the view's *_30d columns); empty when the rss module is not installed."""
    if not await _has_feed_health(conn):
        return {}
    rows = await conn.fetch(
        """SELECT feed_id, title, url, polls_ok_30d AS polls_ok, polls_failed_30d AS polls_failed,
                  health_30d AS health, consecutive_errors, dead, stale, enabled
           FROM rss_public.feed_health"""
    )
    return {r["feed_id"]: dict(r) for r in rows}


async def feed_folders(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """(folder, url, site_url) of every rss feed with a folder, from the public view."""
    if not await _has_feed_health(conn):
        return []
    rows = await conn.fetch(
        "SELECT folder, url, site_url FROM rss_public.feed_health WHERE folder IS NOT NULL"
    )
    return [dict(r) for r in rows]
