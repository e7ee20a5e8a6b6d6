"""Store entries the way the poll job does (intake seam, events in the same transaction), for tests."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import asyncpg

from host import outbox
from modules.rss import MANIFEST, store
from modules.rss.ingest import intake
from modules.rss.model import Entry


async def ingest(
    conn: asyncpg.Connection,
    feed: store.FeedRow,
    entries: Sequence[Entry],
    *,
    first_poll: bool = False,
    now: datetime | None = None,
) -> set[str]:
    """Returns the guids inserted. Opens its own transaction (a savepoint inside the caller's), as
    ctx.emit refuses a connection outside one."""
    async with conn.transaction():
        _, inserted = await intake.ingest(
            conn,
            outbox.emitter(MANIFEST.name, MANIFEST.events),
            feed_id=feed.id,
            feed_title=feed.title,
            entries=entries,
            now=now or datetime.now(UTC),
            first_poll=first_poll,
            lookback_hours=48,
        )
    return inserted
