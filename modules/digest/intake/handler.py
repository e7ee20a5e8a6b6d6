"""The subscription handler: a delivery of bus events → stored articles with their dedup dispositions.

Runs inside the host's transaction that also records the event ids as processed (exactly once per
consumer). The subscriptions are batch subscriptions: one candidate lookup and one insert serve a whole
delivery (up to 50 events). A malformed event raises MalformedEvent: the host then handles the
delivery's events one at a time, retries the bad one `max_deliver` times and parks it on
`feedeater.dlq.digest.<subscription>` with the reason; the others are stored meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

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
    """Decide and store one article (call inside a transaction); returns the decision."""
    return (await ingest_many(conn, [article], t))[0]


async def ingest_many(
    conn: asyncpg.Connection, batch: Sequence[Article], t: layers.Thresholds = layers.DEFAULT
) -> list[layers.Decision]:
    """Decide and store articles in order (call inside a transaction); returns their decisions.

    Each round looks up every article not yet decided and handles the leading run of one kind: new
    articles (decided against the stored candidates and the run's earlier articles, stored with one
    insert) or articles whose message id is stored (layer 1; a revision rewrites the stored row). A
    message id seen twice ends a run, so its second article finds the first stored.

    The lookup takes the dedup lock, but its snapshot may predate a writer that held the lock: the
    insert then refuses and we look again, now that the lock is ours. Layer 1 is decided only on a
    lookup made while the lock was already ours: a revision rewrites the stored row, which must be the
    current one."""
    # Features and lookup keys before the lock: other hosts wait only for lookups and inserts.
    ps = [articles.probe(features(a), t) for a in batch]
    decisions: list[layers.Decision] = []
    locked = False  # whether the dedup lock was ours before the last lookup started
    while len(decisions) < len(batch):
        start = len(decisions)
        found = await articles.lookup(
            conn, [(a.message_id, p) for a, p in zip(batch[start:], ps[start:], strict=True)], t
        )
        run = leading_run([a.message_id for a in batch[start:]], found.lookups)
        if found.lookups[0].same_identity is None:
            planned = plan(ps[start : start + run], [lk.candidates for lk in found.lookups[:run]], t)
            rows = list(zip(batch[start : start + run], ps[start : start + run], planned, strict=True))
            if await articles.insert(conn, rows, None if locked else found.seen):
                decisions.extend(planned)
        elif locked:
            for i in range(start, start + run):
                same = found.lookups[i - start].same_identity
                assert same is not None  # the run is of articles stored under their message id
                stored_id, stored = same
                decision = layers.decide(ps[i].features, stored, [], t)
                if decision.disposition == "revision":
                    await articles.revise(conn, stored_id, stored, batch[i], ps[i].features, t)
                decisions.append(decision)
        locked = True
    return decisions


def leading_run(message_ids: Sequence[object], lookups: Sequence[articles.Lookup]) -> int:
    """How many leading articles are of the first one's kind (new, or stored under its message id) with
    message ids not repeated among them (pure)."""
    first_new = lookups[0].same_identity is None
    seen: set[object] = set()
    for n, (message_id, lookup) in enumerate(zip(message_ids, lookups, strict=True)):
        if (lookup.same_identity is None) != first_new or message_id in seen:
            return n
        seen.add(message_id)
    return len(lookups)


def plan(
    ps: Sequence[articles.Probe], stored: Sequence[Sequence[layers.Candidate]], t: layers.Thresholds
) -> list[layers.Decision]:
    """Decisions for new articles of one delivery, in order (pure). Each is compared with the stored
    candidates its lookup found and with the earlier articles of the run that the lookup would have found
    had they been stored; those carry placeholder ids (`articles.placeholder`), which the insert resolves."""
    decided: list[tuple[articles.Probe, layers.Candidate]] = []
    out = []
    for k, (p, candidates) in enumerate(zip(ps, stored, strict=True)):
        earlier = [c for q, c in decided if articles.would_find(p, q, t)]
        merged = sorted([*candidates, *earlier], key=_newest_first, reverse=True)
        decision = layers.decide(p.features, None, merged, t)
        out.append(decision)
        if decision.disposition != "exact_duplicate":
            own = articles.placeholder(k)
            cluster, event = layers.groups(decision, own)
            f = layers.story_features(p.features, decision)
            decided.append(
                (
                    articles.Probe(f, p.bands, p.title_words, p.entity_words),
                    layers.Candidate(own, cluster, f, event),
                )
            )
    return out


def _newest_first(c: layers.Candidate) -> tuple[datetime, bool, int]:
    """The lookup's order, published then id (sort descending); the run's earlier articles rank above
    stored ones of the same date, as they will get the higher ids."""
    return c.features.published_at, c.id < 0, abs(c.id)


async def handle(ctx: ModuleContext, conn: asyncpg.Connection, events: list[ReceivedEvent]) -> None:
    batch = [to_article(e.payload) for e in events if not is_own(e.payload)]
    if not batch:
        return
    decisions = await ingest_many(conn, batch)
    ctx.log.debug("%d events: %s", len(events), ", ".join(f"{d.disposition} ({d.layer})" for d in decisions))
