"""The host's housekeeping job: bounded host tables, whether or not rss is enabled."""

from __future__ import annotations

import uuid

from host.runtime import Host
from modules.rss import store


async def test_housekeeping_prunes_host_tables_and_dead_contexts_with_rss_disabled(host: Host) -> None:
    pool = host.require_pool()
    await host.set_enabled("rss", False)
    live_msg, expired_msg, orphan_msg = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with pool.acquire() as conn:
        feed, _ = await store.add_feed(conn, url="http://127.0.0.1:9/feed")
        await conn.execute(
            """INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, content_hash,
                                            first_seen, last_seen, effective_at)
               VALUES ($1, 'g', 'guid', $2, 'h', now(), now(), now())""",
            feed.id,
            live_msg,
        )
        await conn.execute(
            """INSERT INTO host.outbox (event_id, subject, payload, created_at, published_at) VALUES
               (gen_random_uuid(), 's', '', now() - interval '30 days', now() - interval '30 days'),
               (gen_random_uuid(), 's', '', now() - interval '1 day', now() - interval '1 day'),
               (gen_random_uuid(), 's', '', now() - interval '1 hour', now() - interval '1 hour'),
               (gen_random_uuid(), 's', '', now() - interval '30 days', NULL)"""
        )
        await conn.execute(
            """INSERT INTO host.job_runs (module, job, host_id, trigger, status, started_at) VALUES
               ('rss', 'poll', 'h', 'schedule', 'ok', now() - interval '40 days'),
               ('rss', 'poll', 'h', 'schedule', 'ok', now() - interval '2 days')"""
        )
        await conn.execute(
            """INSERT INTO host.processed_events (consumer, event_id, processed_at) VALUES
               ('m.s', 'old', now() - interval '40 days'), ('m.s', 'new', now())"""
        )
        for key in (f"feed:{feed.id}", "feed:999999"):
            await conn.execute("INSERT INTO host.contexts (owner_module, source_key) VALUES ('rss', $1)", key)
        await conn.execute(
            """INSERT INTO host.context_messages (message_id, owner_module, source_key, created_at) VALUES
               ($1, 'rss', $4, now()), ($2, 'rss', $4, now()), ($3, 'rss', 'feed:999999', now())""",
            live_msg,
            expired_msg,
            orphan_msg,
            f"feed:{feed.id}",
        )

    result = await host.run_job_once("host.housekeeping")

    assert result.status == "ok", result.error
    assert result.metrics == {
        "outbox_rows_pruned": 2,  # published a month and a day ago: the default window is 2.4 h (issue 25)
        "job_runs_deleted": 1,
        "processed_ids_deleted": 1,
        "service_rows_deleted": 0,
        "context_links_deleted": 1,  # the expired message's link; the removed feed's went with its context
        "contexts_deleted": 1,
    }
    assert await pool.fetchval("SELECT count(*) FROM host.outbox") == 2  # the hour-old and the pending one
    assert [r["source_key"] for r in await pool.fetch("SELECT source_key FROM host.contexts")] == [
        f"feed:{feed.id}"
    ]
    assert [r["message_id"] for r in await pool.fetch("SELECT message_id FROM host.context_messages")] == [
        live_msg
    ]
    assert [r["event_id"] for r in await pool.fetch("SELECT event_id FROM host.processed_events")] == ["new"]
