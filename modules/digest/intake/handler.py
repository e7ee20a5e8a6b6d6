"""The subscription handler: one bus event → one stored article with its dedup disposition.

Runs inside the host's transaction that also records the event id as processed (exactly once per
consumer). A malformed event raises MalformedEvent: the host retries it `max_deliver` times, then parks
it on `feedeater.dlq.digest.<subscription>` with the reason; other events keep flowing meanwhile.
"""

from __future__ import annotations

import asyncpg

from host.module import ModuleContext, ReceivedEvent
from modules.digest.dedup import layers
from modules.digest.dedup.features import features
from modules.digest.intake.event import is_own, to_article
from modules.digest.model import Article
from modules.digest.store import articles


async def ingest(
    conn: asyncpg.Connection, article: Article, t: layers.Thresholds = layers.DEFAULT
) -> layers.Decision:
    """Decide and store (call inside a transaction); returns the decision.

    The lookup takes the dedup lock, but its snapshot may predate a writer that held the lock: the
    insert then refuses (None) and we look again, now that the lock is ours. A revision always looks
    again: it rewrites the stored row, which must be the current one."""
    f = features(article)  # before the lock: other hosts wait only for the lookup and the insert
    found = await articles.lookup(conn, article.message_id, f, t)
    decision = _decide(f, found, t)
    if found.same_identity is None:
        if await articles.insert(conn, article, f, decision, t, found.seen) is not None:
            return decision
    elif decision.disposition != "revision":
        return decision
    found = await articles.lookup(conn, article.message_id, f, t)
    decision = _decide(f, found, t)
    if found.same_identity is None:
        await articles.insert(conn, article, f, decision, t, None)
    elif decision.disposition == "revision":
        await articles.revise(conn, found.same_identity[0], found.same_identity[1], article, f, t)
    return decision


def _decide(f: layers.Features, found: articles.Lookup, t: layers.Thresholds) -> layers.Decision:
    return layers.decide(f, found.same_identity[1] if found.same_identity else None, found.candidates, t)


async def handle(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
    if is_own(event.payload):
        return
    decision = await ingest(conn, to_article(event.payload))
    ctx.log.debug("event %s: %s (%s)", event.event_id, decision.disposition, decision.layer)
