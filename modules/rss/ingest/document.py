"""The one body path: a fetched feed document → raw store → parse (in the worker processes) → intake.

Polls, WebSub pushes and RFC 5005 archive pages all go through `ingest_document`; they differ only in
the hooks they pass. The raw bytes commit first (a parse failure loses nothing), then entries, their
events and the caller's own row changes (`after`) commit in one transaction.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Generic, TypeVar

import asyncpg

from host import tracing
from host.module import ModuleContext
from host.net.fetcher import FetchResult
from modules.rss import metrics, store
from modules.rss.ingest import diff, intake, processors
from modules.rss.model import Feed, Intents
from modules.rss.parse import FeedParseError, parse_feed

T = TypeVar("T")
# The newest stored entries of a feed whose raw hashes a parse gets: items of theirs that did not change
# are not normalized again (a feed lists its newest items; older ones on archive pages are parsed).
KNOWN_RAW_HASHES = 250
After = Callable[[asyncpg.Connection, Feed, set[str]], Awaitable[T]]


@dataclass(frozen=True, slots=True)
class Body:
    """A feed document as it arrived: fetched by us (`of`) or pushed to us."""

    url: str
    headers: dict[str, str]  # lower-cased names
    body: bytes
    status: int = 200
    request_headers: Mapping[str, str] | None = None  # None: pushed to us, no request of ours

    @classmethod
    def of(cls, res: FetchResult) -> Body:
        assert res.body is not None
        return cls(res.url, res.headers, res.body, res.status, res.request_headers)


@dataclass(frozen=True, slots=True)
class Stored(Generic[T]):
    parsed: Feed | None  # None: the same bytes as last time, or not a feed (see `error`)
    intents: Intents | None = None
    inserted: frozenset[str] = frozenset()
    error: str | None = None
    same_as_last: bool = False  # the same bytes as the feed's last fetch (skipped)
    result: T | None = None  # what the caller's hook (same, failed or after) returned


async def ingest_document(
    ctx: ModuleContext,
    feed: store.FeedRow,
    doc: Body,
    *,
    now: datetime,
    first_poll: bool = False,
    before: Callable[[Feed], str | None] | None = None,
    extra_steps: Sequence[processors.Processor] = (),
    skip_same: bool = True,
    same: Callable[[asyncpg.Connection], Awaitable[T]] | None = None,
    failed: Callable[[asyncpg.Connection, str], Awaitable[T]] | None = None,
    after: After[T] | None = None,
) -> Stored[T]:
    """Store the raw document, parse it and take in its entries. The caller's hooks: `before` sees the
    parsed document before intake and returns the typical order its entries are judged by (default: the
    feed's stored one); `same` runs in a transaction when the bytes are the last fetch's (with
    `skip_same`); `failed` in the transaction that records a document that is no feed; `after` in the
    intake's transaction. What the hook returned is `Stored.result`."""
    async with ctx.pool.acquire() as conn:
        raw = await store.save_raw(
            conn,
            feed_id=feed.id,
            url=doc.url,
            status=doc.status,
            headers=doc.headers,
            request_headers=doc.request_headers,
            body=doc.body,
            keep=int(ctx.settings["raw_keep"]),
        )
        known: frozenset[str] | None = None  # None: the same bytes as last time, not parsed
        if not (raw.same_as_last and skip_same):  # a first poll has nothing stored to skip (one query less)
            known = (
                frozenset() if first_poll else await store.known_raw_hashes(conn, feed.id, KNOWN_RAW_HASHES)
            )
    if known is None:
        if same is None:
            return Stored(None, same_as_last=True)
        async with ctx.pool.acquire() as conn, conn.transaction():
            return Stored(None, same_as_last=True, result=await same(conn))
    parse_started = time.monotonic()
    parse = partial(
        parse_body, ctx, doc.body, url=doc.url, content_type=doc.headers.get("content-type"), now=now
    )
    try:
        with tracing.span("rss.parse"):
            parsed = await parse(known=known)
    except FeedParseError as exc:
        metrics.PARSE_ERRORS.inc()
        error = f"not a feed: {exc}"
        async with ctx.pool.acquire() as conn, conn.transaction():
            await store.mark_parse_error(conn, raw.raw_id, str(exc))
            result = await failed(conn, error) if failed is not None else None
        return Stored(None, error=error, result=result)
    metrics.PARSE_SECONDS.observe(time.monotonic() - parse_started)
    metrics.SKIPPED_ITEMS.labels("empty").inc(parsed.skipped_items)
    metrics.SKIPPED_ITEMS.labels("over-cap").inc(len(parsed.over_cap))
    typical_order = before(parsed) if before is not None else feed.typical_order

    async def take_in(parsed: Feed) -> tuple[Intents, dict[str, int], T | None]:
        async with tracing.aspan("rss.store"), ctx.pool.acquire() as conn, conn.transaction():
            intents, inserted = await intake.ingest(
                conn,
                ctx.emit,
                feed_id=feed.id,
                feed_title=feed.title,
                entries=parsed.entries,
                now=now,
                first_poll=first_poll,
                lookback_hours=lookback(ctx, feed).hours,
                grace_minutes=int(ctx.settings["lookback_grace_minutes"]),
                fetch_id=raw.raw_id,
                typical_order=typical_order,
                steps=(*processors.steps(), *extra_steps),
                same=parsed.same,
            )
            return intents, inserted, await after(conn, parsed, set(inserted)) if after is not None else None

    try:
        intents, inserted, result = await take_in(parsed)
    except diff.StaleSkip:  # an entry deleted or revised since the raw hashes were read: no skipping
        parsed = await parse(known=frozenset())
        intents, inserted, result = await take_in(parsed)
    metrics.ENTRIES.labels("new").inc(len(inserted))
    metrics.ENTRIES.labels("updated").inc(len(intents.revised))
    return Stored(parsed, intents, frozenset(inserted), result=result)


@dataclass(frozen=True, slots=True)
class Lookback:
    hours: int
    source: str  # "override" (the feed's `lookback`) or "default" (rss.lookback_hours), seed 004 §2.1
    grace_minutes: int


def lookback(ctx: ModuleContext, feed: store.FeedRow) -> Lookback:
    """The lookback window a feed's new entries are judged by, and where it came from."""
    grace = int(ctx.settings["lookback_grace_minutes"])
    if feed.lookback_hours:
        return Lookback(feed.lookback_hours, "override", grace)
    return Lookback(int(ctx.settings["lookback_hours"]), "default", grace)


async def parse_body(
    ctx: ModuleContext,
    body: bytes,
    *,
    url: str,
    content_type: str | None,
    now: datetime,
    known: frozenset[str] | None = None,
) -> Feed:
    """Parse in the worker process when there is one: parsing is CPU-bound and would stall the event loop.
    Polls, WebSub pushes and archive pages all parse here; `known`: the feed's stored raw hashes
    (parse_feed)."""
    job = partial(
        parse_feed,
        body,
        url=url,
        content_type=content_type,
        now=now,
        max_items=int(ctx.settings["max_items_per_document"]),
        known=known,
    )
    pool: ProcessPoolExecutor | None = ctx.state.get("parse_pool")
    if pool is None:
        return job()
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, job)
    except BrokenProcessPool:
        # A document killed the worker (memory, a C-level crash): replace it and report this feed only.
        ctx.state["parse_pool"] = make_parse_pool(int(ctx.settings["parse_workers"]))
        await close_parse_pool(pool)
        raise FeedParseError("the parser process died on this document") from None


def make_parse_pool(workers: int) -> ProcessPoolExecutor | None:
    """Worker processes for parsing (0 = parse in the event loop's thread)."""
    if workers <= 0:
        return None
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


async def close_parse_pool(pool: ProcessPoolExecutor) -> None:
    """Stop the workers and wait for the pool's manager thread (off the event loop). Not waiting races
    the interpreter's exit hook, which then writes to the pool's closed wake-up pipe (EBADF traceback)."""
    await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)
