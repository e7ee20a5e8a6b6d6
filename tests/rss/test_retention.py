"""Retention (issue 25 item 3): entries expire feed batch by feed batch, each feed by its own retention,
with tombstones; the cost follows what expires, not the table (bench/retention_cost.py)."""

from __future__ import annotations

import pytest

from host.runtime import Host
from modules.rss import store
from modules.rss.store import entries


async def test_expiry_goes_through_every_batch_of_feeds_with_each_feeds_retention(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entries, "EXPIRE_FEEDS_PER_BATCH", 2)  # 5 feeds: three batches
    pool = host.require_pool()
    async with pool.acquire() as conn:
        ids = [(await store.add_feed(conn, url=f"http://127.0.0.1:9/f{i}"))[0].id for i in range(5)]
        await conn.execute("UPDATE mod_rss.feeds SET retention_days = 100 WHERE id = $1", ids[4])
        for feed_id in ids:
            for guid, days in (("old", 40), ("older", 60), ("young", 1)):
                await conn.execute(
                    """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, content_hash,
                                                    first_seen, last_seen, effective_at)
                       VALUES ($1, $2, 'guid', gen_random_uuid(), 'h', now(), now(),
                               now() - make_interval(days => $3))""",
                    feed_id,
                    guid,
                    days,
                )
    assert await store.expire_entries(pool, default_days=30) == 8
    left = await pool.fetch("SELECT feed_id, guid FROM mod_rss.entries ORDER BY feed_id, guid")
    assert [(r["feed_id"], r["guid"]) for r in left] == [(f, "young") for f in ids[:4]] + [
        (ids[4], g) for g in ("old", "older", "young")
    ]
    tombs = await pool.fetch("SELECT feed_id, guid FROM mod_rss.tombstones ORDER BY feed_id, guid")
    assert [(r["feed_id"], r["guid"]) for r in tombs] == [(f, g) for f in ids[:4] for g in ("old", "older")]
    assert await store.expire_entries(pool, default_days=30) == 0
