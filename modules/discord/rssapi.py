"""What discord uses of rss, described by shape: rss's declared public API (`modules/rss/public.py`'s
`Rss`, which the host hands over as `ctx.api("rss", RssApi)` because discord's manifest requires rss)
and the parsed feed its `validate` returns. Discord imports nothing of rss: modules meet through the
bus, the host's contract and these shapes."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Protocol, runtime_checkable

import asyncpg

from host.net.fetcher import Fetcher


class Enclosure(Protocol):
    @property
    def url(self) -> str: ...
    @property
    def type(self) -> str | None: ...


class FeedEntry(Protocol):
    """A parsed entry: what a preview post needs of it."""

    @property
    def guid(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def link(self) -> str | None: ...
    @property
    def summary_html(self) -> str | None: ...
    @property
    def content_html(self) -> str | None: ...
    @property
    def image(self) -> str | None: ...
    @property
    def enclosures(self) -> Sequence[Enclosure]: ...
    @property
    def published(self) -> datetime | None: ...


class ParsedFeed(Protocol):
    @property
    def title(self) -> str: ...
    @property
    def image(self) -> str | None: ...
    @property
    def entries(self) -> Sequence[FeedEntry]: ...


class Validated(Protocol):
    """A URL that rss fetched and parsed as a feed (after redirects and discovery)."""

    @property
    def url(self) -> str: ...
    @property
    def feed(self) -> ParsedFeed: ...


class Subscribed(Protocol):
    @property
    def feed_id(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def created(self) -> bool: ...


@runtime_checkable
class RssApi(Protocol):
    """rss's public API as discord calls it."""

    def fetcher(self) -> AbstractAsyncContextManager[Fetcher]: ...
    async def validate(self, fetcher: Fetcher, url: str) -> Validated: ...
    async def subscribe(
        self, conn: asyncpg.Connection, fetcher: Fetcher, validated: Validated
    ) -> Subscribed: ...
    def html_to_text(self, markup: str) -> str: ...
