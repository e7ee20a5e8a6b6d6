"""A feed document → parse (in the worker processes) → intake, for polls, WebSub pushes and archive pages.

`ingest_document` serves a document that arrived without a poll: the same steps as the poll job's body path, minus its poll-state bookkeeping: the raw bytes commit
first (a parse failure loses nothing), then entries, their events and the caller's own row changes
(`after`) commit in one transaction.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime
from functools import partial

import asyncpg

from host.module import ModuleContext
from modules.rss import metrics, store
from modules.rss.ingest import diff, intake, processors
from modules.rss.model import Feed
from modules.rss.parse import FeedParseError, parse_feed

After = Callable[[asyncpg.Connection, Feed, set[str]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Stored:
    parsed: Feed | None  # None: the same bytes as last time, or not a feed (see `error`)
    intents: diff.Intents | None = None
    inserted: frozenset[str] = frozenset()
    error: str | None = None


async def ingest_document(
    ctx: ModuleContext,
    feed: store.FeedRow,
    *,
    url: str,
    headers: dict[str, str],
    body: bytes,
    now: datetime,
    extra_steps: Sequence[processors.Processor] = (),
    skip_same: bool = True,
    after: After | None = None,
) -> Stored:
    async with ctx.pool.acquire() as conn:
        raw = await store.save_raw(
            conn,
            feed_id=feed.id,
            url=url,
            status=200,
            headers=headers,
            body=body,
            keep=int(ctx.settings["raw_keep"]),
            request_headers=None,  # pushed to us: no request of ours
        )
    if raw.same_as_last and skip_same:
        return Stored(None)
    try:
        parsed = await parse_body(ctx, body, url=url, content_type=headers.get("content-type"), now=now)
    except FeedParseError as exc:
        metrics.PARSE_ERRORS.inc()
        async with ctx.pool.acquire() as conn:
            await store.mark_parse_error(conn, raw.raw_id, str(exc))
        return Stored(None, error=f"not a feed: {exc}")
    async with ctx.pool.acquire() as conn, conn.transaction():
        intents, inserted = await ingest_parsed(
            ctx,
            conn,
            feed,
            parsed,
            now=now,
            fetch_id=raw.raw_id,
            first_poll=False,
            typical_order=feed.typical_order,
            extra_steps=extra_steps,
        )
        if after is not None:
            await after(conn, parsed, set(inserted))
    metrics.ENTRIES.labels("new").inc(len(inserted))
    metrics.ENTRIES.labels("updated").inc(len(intents.revised))
    return Stored(parsed, intents, frozenset(inserted))


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


async def ingest_parsed(
    ctx: ModuleContext,
    conn: asyncpg.Connection,
    feed: store.FeedRow,
    parsed: Feed,
    *,
    now: datetime,
    fetch_id: int,
    first_poll: bool,
    typical_order: str | None,
    extra_steps: Sequence[processors.Processor] = (),
) -> tuple[diff.Intents, dict[str, int]]:
    """A parsed document's entries → intake, with the module's settings: polls, pushes and archive pages
    differ only in what they pass here. Call inside the caller's transaction."""
    return await intake.ingest(
        conn,
        ctx.emit,
        feed_id=feed.id,
        feed_title=feed.title,
        entries=parsed.entries,
        now=now,
        first_poll=first_poll,
        lookback_hours=lookback(ctx, feed).hours,
        grace_minutes=int(ctx.settings["lookback_grace_minutes"]),
        fetch_id=fetch_id,
        typical_order=typical_order,
        steps=(*ctx.state.get("processors", processors.DEFAULT), *extra_steps),
    )


async def parse_body(
    ctx: ModuleContext, body: bytes, *, url: str, content_type: str | None, now: datetime
) -> Feed:
    """Parse in the worker process when there is one: parsing is CPU-bound and would stall the event loop.
    Polls, WebSub pushes and archive pages all parse here."""
    job = partial(
        parse_feed,
        body,
        url=url,
        content_type=content_type,
        now=now,
        max_items=int(ctx.settings["max_items_per_document"]),
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
