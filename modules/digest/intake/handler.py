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
    """Decide and store (call inside a transaction); returns the decision."""
    f = features(article)  # before the lock: other hosts wait only for the lookup and the insert
    await articles.lock_dedup(conn)
    found = await articles.lookup(conn, article.message_id, f, t)
    known = found.same_identity
    decision = layers.decide(f, known[1] if known else None, found.candidates, t)
    if known is not None:
        if decision.disposition == "revision":
            await articles.revise(conn, known[0], known[1], article, f, t)
        return decision
    await articles.insert(conn, article, f, decision, t)
    return decision


async def handle(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
    if is_own(event.payload):
        return
    decision = await ingest(conn, to_article(event.payload))
    ctx.log.debug("event %s: %s (%s)", event.event_id, decision.disposition, decision.layer)
