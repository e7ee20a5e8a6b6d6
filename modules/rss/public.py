"""What other modules may use of rss, and nothing else: the types and pure helpers below, and a fetcher
configured like rss's own. Importing anything else of rss from another module is reaching into its
internals (issue #22 enforces this with import contracts)."""

from __future__ import annotations

import os

import asyncpg

from host import settings as host_settings
from host.net.fetcher import Fetcher
from host.roles import acting_as
from modules.rss import MANIFEST, store
from modules.rss.ingest.poll import make_fetcher
from modules.rss.ingest.processors import register as register_processor
from modules.rss.model import Entry
from modules.rss.parse.sanitize import html_to_text
from modules.rss.subscriptions import subscribe as subscribing
from modules.rss.subscriptions.subscribe import Validated, validate

__all__ = ["Entry", "html_to_text", "register_processor", "rss_fetcher", "subscribe", "validate"]


async def rss_fetcher(conn: asyncpg.Connection) -> Fetcher:
    """A fetcher with rss's settings as stored now (user agent, limits, private networks); the caller
    closes it."""
    async with acting_as(conn, None):  # stored settings are the host's (other modules may not read them)
        stored = await host_settings.load_stored(conn, MANIFEST.name)
    return make_fetcher(host_settings.resolve(MANIFEST, stored, os.environ))


async def subscribe(
    conn: asyncpg.Connection,
    fetcher: Fetcher,
    url: str,
    *,
    folder: str | None = None,
    interval_minutes: float | None = None,
    validated: Validated | None = None,
) -> tuple[store.FeedRow, bool]:
    """Subscribe to a feed inside the caller's transaction, with rss's database rights (the caller's
    connection may act as another module's role: host/roles.py)."""
    async with acting_as(conn, MANIFEST.name):
        return await subscribing.subscribe(
            conn, fetcher, url, folder=folder, interval_minutes=interval_minutes, validated=validated
        )
