"""rss's public API: what other modules may use of rss, and nothing else. The host makes one `Rss` over
rss's own context (`Manifest.public`) for the modules that require rss (`ctx.api("rss", Rss)`); the types
and pure helpers below are importable as they are. Anything else of rss is its internals."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg

from host.module import ModuleContext
from host.net.fetcher import Fetcher
from host.roles import acting_as
from modules.rss.ingest.poll import make_fetcher
from modules.rss.ingest.processors import register as register_processor
from modules.rss.model import Entry
from modules.rss.parse.sanitize import html_to_text
from modules.rss.subscriptions import subscribe as subscriptions
from modules.rss.subscriptions.subscribe import Validated

__all__ = ["Entry", "Rss", "Subscribed", "Validated", "api", "html_to_text", "register_processor"]


@dataclass(frozen=True, slots=True)
class Subscribed:
    feed_id: int
    title: str  # the stored feed's title
    created: bool  # False: the feed was already subscribed


class Rss:
    """Subscribing to feeds as rss does (fetch, parse, autodiscovery, its settings), for other modules."""

    def __init__(self, ctx: ModuleContext) -> None:
        self._ctx = ctx

    @contextlib.asynccontextmanager
    async def fetcher(self) -> AsyncIterator[Fetcher]:
        """A fetcher configured like rss's own (user agent, limits, private networks) from rss's settings
        in force now: the host re-resolves them when they change, so `settings set rss.…` reaches the
        next one. Closed on exit."""
        fetcher = make_fetcher(self._ctx.settings)
        try:
            yield fetcher
        finally:
            await fetcher.aclose()

    html_to_text = staticmethod(html_to_text)  # readable text of sanitized HTML (a post's summary)

    async def validate(self, fetcher: Fetcher, url: str) -> Validated:
        """Fetch and parse `url` (a page is searched for its feeds); UserError says why it is no feed."""
        return await subscriptions.validate(fetcher, url)

    async def subscribe(self, conn: asyncpg.Connection, fetcher: Fetcher, validated: Validated) -> Subscribed:
        """Store a validated feed for rss to poll, in the caller's transaction with rss's database rights
        (the caller's connection acts as its own module's role: host/roles.py)."""
        async with acting_as(conn, self._ctx.name):
            feed, created = await subscriptions.subscribe(conn, fetcher, validated.url, validated=validated)
        return Subscribed(feed.id, feed.title, created)


async def api(ctx: ModuleContext) -> Rss:
    """rss's `Manifest.public`: the host calls it once with rss's context."""
    return Rss(ctx)
