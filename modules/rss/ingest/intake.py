"""The intake seam: parsed entries → intents → processors → storage writes → events, in the caller's transaction.

Every way entries arrive (a poll, a WebSub push, an archive page) goes through `ingest`, so they are
diffed, processed, stored and announced the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

import asyncpg

from host.module import Emit
from modules.rss import metrics, store
from modules.rss.ingest import diff, processors, publish, summary
from modules.rss.model import Entry, Intents, SameItem

log = logging.getLogger("feedeater.rss.intake")


async def ingest(
    conn: asyncpg.Connection,
    emit: Emit,
    *,
    feed_id: int,
    feed_title: str,
    entries: Sequence[Entry],
    now: datetime,
    first_poll: bool,
    lookback_hours: int,
    grace_minutes: int = 0,
    fetch_id: int | None = None,
    typical_order: str | None = None,
    steps: Sequence[processors.Processor] = processors.DEFAULT,
    same: Sequence[SameItem] = (),
) -> tuple[Intents, dict[str, int]]:
    """Returns the processed intents and the guids really inserted (the new entries announced) with their
    entry ids. `same`: items parse knew unchanged (Feed.same); raises diff.StaleSkip when one of them no
    longer has the stored entry its raw hash stood for (before writing anything)."""
    guids = [e.guid for e in entries] + [s.guid for s in same]
    known, tombstoned = await store.load_known(conn, feed_id, guids)
    intents = processors.run(
        diff.diff(
            entries,
            known,
            tombstoned,
            feed_id=feed_id,
            feed_title=feed_title,
            now=now,
            first_poll=first_poll,
            lookback_hours=lookback_hours,
            grace_minutes=grace_minutes,
            fetch_id=fetch_id,
            typical_order=typical_order,
            same=same,
        ),
        steps,
    )
    inserted = await store.write(conn, intents)
    await emit(conn, *publish.events(intents, inserted))
    metrics.ITEMS.labels("all").inc(len(guids))
    metrics.ITEMS.labels("undated").inc(
        sum(e.published is None for e in entries) + sum(s.published is None for s in same)
    )
    metrics.ITEMS.labels("duplicate").inc(len(intents.unchanged))
    if log.isEnabledFor(logging.DEBUG):  # seed 004 §2.5: one line per item with its decision
        for guid, decision in summary.item_decisions(intents, inserted):
            log.debug(
                "feed %s: item %s: %s", feed_id, guid, decision, extra={"feed_id": feed_id, "guid": guid}
            )
    return intents, inserted
