"""A feed document that arrived without a poll (a WebSub push, an archive page) → raw store → parse → intake.

The same steps as the poll job's body path, minus its poll-state bookkeeping: the raw bytes commit
first (a parse failure loses nothing), then entries, their events and the caller's own row changes
(`after`) commit in one transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from host.module import ModuleContext
from modules.rss import metrics, store
from modules.rss.ingest import diff, intake, poll, processors
from modules.rss.model import Feed
from modules.rss.parse import FeedParseError

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
        )
    if raw.same_as_last and skip_same:
        return Stored(None)
    try:
        parsed = await poll.parse_body(ctx, body, url=url, content_type=headers.get("content-type"), now=now)
    except FeedParseError as exc:
        metrics.PARSE_ERRORS.inc()
        async with ctx.pool.acquire() as conn:
            await store.mark_parse_error(conn, raw.raw_id, str(exc))
        return Stored(None, error=f"not a feed: {exc}")
    async with ctx.pool.acquire() as conn, conn.transaction():
        intents, inserted = await intake.ingest(
            conn,
            ctx.emit,
            feed_id=feed.id,
            feed_title=feed.title,
            entries=parsed.entries,
            now=now,
            first_poll=False,
            lookback_hours=feed.lookback_hours or int(ctx.settings["lookback_hours"]),
            grace_minutes=int(ctx.settings["lookback_grace_minutes"]),
            fetch_id=raw.raw_id,
            typical_order=feed.typical_order,
            steps=(*ctx.state.get("processors", processors.DEFAULT), *extra_steps),
        )
        if after is not None:
            await after(conn, parsed, inserted)
    metrics.ENTRIES.labels("new").inc(len(inserted))
    metrics.ENTRIES.labels("updated").inc(len(intents.revised))
    return Stored(parsed, intents, frozenset(inserted))
