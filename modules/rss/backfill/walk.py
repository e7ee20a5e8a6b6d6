"""The backfill job: walk queued archive chains a page at a time through the poll's fetcher.

Each page is fetched with the shared Fetcher (address guard, per-host concurrency and spacing), stored
through the raw store → parse → intake path with `never_realtime` appended, and the walk's position
moves in the same transaction, so a crash or an error resumes at the page that did not commit.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from host.backoff import Backoff
from host.errors import UserError
from host.module import ModuleContext
from host.net.fetcher import Fetcher
from modules.rss import store
from modules.rss.backfill import links as archive
from modules.rss.ingest import processors
from modules.rss.ingest.document import After, Body, ingest_document, parse_body
from modules.rss.model import Feed
from modules.rss.parse import FeedParseError
from modules.rss.store import backfill as walks

log = logging.getLogger("feedeater.rss.backfill")
FEEDS_PER_RUN = 4
PAGES_PER_RUN = 20  # per feed and run: other feeds' walks get their turn; the next run goes on
MAX_ATTEMPTS = 8  # failures of one page before the walk is given up
RETRY = Backoff(60, 6 * 3600)


async def run(ctx: ModuleContext) -> dict[str, Any]:
    async with ctx.pool.acquire() as conn:
        rows = await walks.QUEUE.claim(
            conn, now=None, limit=FEEDS_PER_RUN, lease_s=_lease_s(ctx), owner=ctx.host_id
        )
    results = await asyncio.gather(*(walk(ctx, walks.Walk.from_record(r)) for r in rows))
    return dict(sum(results, Counter(feeds=len(rows))))


async def by_hand(ctx: ModuleContext, ref: str, *, max_pages: int | None) -> dict[str, Any]:
    """`feedeater rss backfill`: read the feed's current links, (re)queue its walk and walk it now."""
    bound = int(ctx.settings["backfill_max_pages"]) if max_pages is None else max_pages
    if bound < 1:
        raise UserError(f"--max-pages {bound} is not a page count", "give 1 or more")
    async with ctx.pool.acquire() as conn:
        feed = await store.get_feed(conn, ref)
    fetcher: Fetcher = ctx.state["fetcher"]
    res = await fetcher.fetch(feed.url)
    if res.status != 200 or res.body is None:
        raise UserError(
            f"cannot fetch feed {feed.id}: {res.error}", f"check it with `feedeater rss show {feed.id}`"
        )
    try:
        parsed = await parse_body(
            ctx, res.body, url=res.url, content_type=res.headers.get("content-type"), now=datetime.now(UTC)
        )
    except FeedParseError as exc:
        raise UserError(f"feed {feed.id} is not readable: {exc}") from None
    first = archive.start(parsed.links)
    if first is None:
        raise UserError(
            f"feed {feed.id} links no archive (no RFC 5005 prev-archive, next or previous link)",
            "nothing to backfill: its history is what the feed shows",
        )
    async with ctx.pool.acquire() as conn:
        await walks.request(conn, feed.id, *first, max_pages=bound)
    counts = await walk_feed(ctx, feed.id, pages=None)
    async with ctx.pool.acquire() as conn:
        state = await walks.status(conn, feed.id) or {}
    return {
        "feed": feed.id,
        "rel": first[0],
        "pages": counts["pages"],
        "new": counts["new"],
        "state": state.get("state"),
        "next_url": state.get("next_url"),
        "last_error": state.get("last_error"),
    }


async def walk_feed(ctx: ModuleContext, feed_id: int, *, pages: int | None = None) -> Counter[str]:
    """Walk one feed's queued chain now (`feedeater rss backfill`), up to `pages` pages (None: to its bound)."""
    async with ctx.pool.acquire() as conn:
        rows = await walks.ONE.claim(
            conn, now=None, limit=1, lease_s=_lease_s(ctx), owner=ctx.host_id, params=[feed_id]
        )
    return await walk(ctx, walks.Walk.from_record(rows[0]), pages=pages) if rows else Counter()


async def walk(ctx: ModuleContext, current: walks.Walk, *, pages: int | None = PAGES_PER_RUN) -> Counter[str]:
    counts: Counter[str] = Counter()
    async with ctx.pool.acquire() as conn:
        feed = await store.get_feed(conn, current.feed_id)
    fetcher: Fetcher = ctx.state["fetcher"]
    while pages is None or counts["pages"] < pages:
        res = await fetcher.fetch(current.next_url)
        now = datetime.now(UTC)
        if res.status != 200 or res.body is None:
            await _failed(ctx, current, res.error or f"HTTP {res.status}", now)
            return counts + Counter(page_errors=1)
        moved: list[walks.Walk] = []
        stored = await ingest_document(
            ctx,
            feed,
            Body.of(res),
            now=now,
            extra_steps=(processors.never_realtime,),
            skip_same=False,
            after=_advance(current, res.url, moved),
        )
        if stored.error:
            await _failed(ctx, current, stored.error, now, give_up=True)
            return counts + Counter(page_errors=1)
        counts.update(pages=1, new=len(stored.inserted))
        log.info("feed %s: archive page %s: %d new", feed.id, current.next_url, len(stored.inserted))
        if not moved:
            return counts + Counter(walks_done=1)
        current = moved[0]
    async with ctx.pool.acquire() as conn:
        await walks.release(conn, current.feed_id)
    return counts


def _advance(at: walks.Walk, fetched_url: str, moved: list[walks.Walk]) -> After[None]:
    """Move the walk past the page `at` in the page's own transaction; `moved` receives the walk's next
    position unless it finished (end of the chain, a loop, or the page bound)."""

    async def advance(conn: asyncpg.Connection, parsed: Feed, inserted: set[str]) -> None:
        walked = (*at.visited, at.next_url, fetched_url)
        following = archive.follow(parsed.links, at.rel, walked)
        finished = following is None or at.pages_done + 1 >= at.max_pages
        await walks.page_done(conn, at, next_url=following, new=len(inserted), finished=finished)
        if following is not None and not finished:
            moved.append(walks.Walk(at.feed_id, at.rel, following, at.pages_done + 1, at.max_pages, walked))

    return advance


async def _failed(
    ctx: ModuleContext, current: walks.Walk, error: str, now: datetime, *, give_up: bool = False
) -> None:
    async with ctx.pool.acquire() as conn:
        attempts = await walks.attempts(conn, current.feed_id) + 1
        give_up = give_up or attempts >= MAX_ATTEMPTS
        retry_at = now + timedelta(seconds=RETRY.delay(attempts))
        await walks.page_failed(conn, current.feed_id, error, retry_at=retry_at, give_up=give_up)
    log.warning(
        "feed %s: archive page %s failed (%s)%s",
        current.feed_id,
        current.next_url,
        error,
        "; backfill given up" if give_up else f"; retry at {retry_at:%H:%M}Z",
    )


def _lease_s(ctx: ModuleContext) -> float:
    """Long enough for a run's pages at the fetch timeout; a dead host's walk comes back after it."""
    return float(ctx.settings["timeout_seconds"]) * (PAGES_PER_RUN + 1)
