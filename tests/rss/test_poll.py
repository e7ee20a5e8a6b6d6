"""The poll job end to end: a real feed server, real PostgreSQL, real JetStream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from host import outbox
from host.runtime import Host
from modules.rss import store
from modules.rss.ingest import publish
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import BusReader


async def poll(host: Host) -> dict[str, Any]:
    result = await host.run_job_once("rss.poll")
    assert result.status == "ok", result.error
    assert host.js is not None
    await outbox.Relay(host.require_pool(), host.js).drain_all()
    return dict(result.metrics)


async def add(host: Host, url: str, **kw: Any) -> store.FeedRow:
    async with host.require_pool().acquire() as conn:
        row, created = await store.add_feed(conn, url=url, **kw)
    assert created
    return row


async def make_due(host: Host) -> None:
    await host.require_pool().execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")


async def state(host: Host, feed_id: int) -> dict[str, Any]:
    row = await host.require_pool().fetchrow(
        "SELECT p.*, f.url, f.dead, f.stale, f.title FROM mod_rss.poll_state p JOIN mod_rss.feeds f ON f.id = p.feed_id WHERE feed_id = $1",
        feed_id,
    )
    assert row is not None
    return dict(row)


async def test_first_poll_stores_entries_and_publishes_backfill_once(
    host: Host, bus: BusReader, feed_server: FeedServer
) -> None:
    items = [("a", "Alpha", ago(hours=1), "<p>first <b>post</b></p>"), ("b", "Beta", ago(days=3), "second")]
    feed_server.route(
        "/feed", Route(body=rss(items), etag='"v1"', headers={"Content-Type": "application/rss+xml"})
    )
    feed = await add(host, feed_server.url("/feed"))
    metrics = await poll(host)
    assert metrics["new"] == 2 and metrics["feeds"] == 1
    events = await bus.all("feedeater.rss.messageCreated", expect=2)
    assert len(events) == 2
    by_guid = {e["message"]["rss"]["guid"]: e["message"] for e in events}
    alpha = by_guid["a"]
    assert alpha["id"] == str(publish.message_id(feed.id, "a"))
    assert alpha["source"] == {"module": "rss", "stream": str(feed.id)}
    assert alpha["contextRef"] == {"ownerModule": "rss", "sourceKey": f"feed:{feed.id}"}
    assert alpha["followMePanel"]["href"] == "http://example.org/a"
    assert alpha["realtime"] is False  # a first poll is backfill
    assert alpha["Message"].startswith("Alpha\n\nfirst post")
    assert alpha["From"] == "Ann" or "ann@example.org" in alpha["From"]
    assert alpha["createdAt"].endswith("Z")
    assert alpha["tags"]["feedTitle"] == "Test Feed" and alpha["tags"]["hasEnclosure"] is False
    st = await state(host, feed.id)
    assert st["etag"] == '"v1"' and st["successful_polls"] == 1 and st["lease_until"] is None
    assert st["next_poll_at"] > datetime.now(UTC) and st["title"] == "Test Feed"
    stored = await host.require_pool().fetchval(
        "SELECT count(*) FROM mod_rss.raw_fetches WHERE feed_id = $1", feed.id
    )
    assert stored == 1


async def test_conditional_get_304_publishes_nothing_and_slows_down(
    host: Host, bus: BusReader, feed_server: FeedServer
) -> None:
    feed_server.route(
        "/feed",
        Route(
            body=rss([("a", "A", ago(hours=1), "x")]),
            etag='"v1"',
            last_modified="Sat, 07 Sep 2002 09:42:31 GMT",
        ),
    )
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    first = await state(host, feed.id)
    await make_due(host)
    metrics = await poll(host)
    assert metrics.get("status_304") == 1 and "new" not in metrics
    second_request = feed_server.requests_to("/feed")[-1]
    assert second_request.headers["if-none-match"] == '"v1"'
    assert second_request.headers["if-modified-since"] == "Sat, 07 Sep 2002 09:42:31 GMT"
    st = await state(host, feed.id)
    assert st["interval_reason"].startswith("not-modified") and st["interval_s"] > first["interval_s"]
    assert len(await bus.all("feedeater.rss.>", expect=2, timeout=1)) == 1


async def test_new_entry_is_realtime_and_a_revision_is_message_updated(
    host: Host, bus: BusReader, feed_server: FeedServer
) -> None:
    old = [("a", "A", ago(hours=5), "original text")]
    feed_server.route("/feed", Route(body=rss(old)))
    await add(host, feed_server.url("/feed"))
    await poll(host)
    new = [("b", "B", ago(minutes=5), "brand new"), ("a", "A", ago(hours=5), "edited text")]
    feed_server.route("/feed", Route(body=rss(new)))
    await make_due(host)
    metrics = await poll(host)
    assert metrics["new"] == 1 and metrics["updated"] == 1
    created = await bus.all("feedeater.rss.messageCreated", expect=2)
    updated = await bus.all("feedeater.rss.messageUpdated", expect=1)
    assert [e["message"]["rss"]["guid"] for e in created] == ["a", "b"]
    assert created[1]["message"]["realtime"] is True
    assert len(updated) == 1 and updated[0]["type"] == "MessageUpdated"
    assert updated[0]["message"]["id"] == created[0]["message"]["id"]  # same message, new revision
    assert updated[0]["message"]["rss"]["revision"] == 2 and "edited text" in updated[0]["message"]["Message"]
    row = await host.require_pool().fetchrow(
        "SELECT revision, seen_count, content_text FROM mod_rss.entries WHERE guid = 'a'"
    )
    assert (
        row is not None
        and row["revision"] == 2
        and row["seen_count"] == 2
        and "edited" in row["content_text"]
    )
    # The replaced version is kept for the console's entry page.
    kept = await host.require_pool().fetch(
        """SELECT v.revision, v.title, v.content_text FROM mod_rss.entry_revisions v
           JOIN mod_rss.entries e ON e.id = v.entry_id WHERE e.guid = 'a'"""
    )
    assert [(r["revision"], r["title"], r["content_text"]) for r in kept] == [(1, "A", "original text")]
    # Polling the same document again changes nothing and publishes nothing.
    await make_due(host)
    assert (await poll(host)).get("new", 0) == 0
    assert len(await bus.all("feedeater.rss.>", expect=4, timeout=1)) == 3


async def test_deleted_entry_leaves_a_tombstone(host: Host, bus: BusReader, feed_server: FeedServer) -> None:
    feed_server.route(
        "/feed", Route(body=rss([("a", "A", ago(hours=1), "x"), ("b", "B", ago(hours=2), "y")]))
    )
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    entry_id = await host.require_pool().fetchval(
        "SELECT id FROM mod_rss.entries WHERE feed_id = $1 AND guid = 'a'", feed.id
    )
    async with host.require_pool().acquire() as conn:
        await store.delete_entry(conn, entry_id)
    # The feed changes (a new item c) but still lists the deleted a.
    feed_server.route(
        "/feed",
        Route(
            body=rss(
                [
                    ("c", "C", ago(minutes=5), "z"),
                    ("a", "A", ago(hours=1), "x"),
                    ("b", "B", ago(hours=2), "y"),
                ]
            )
        ),
    )
    await make_due(host)
    metrics = await poll(host)
    assert metrics["new"] == 1 and metrics["tombstoned"] == 1
    assert await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.entries WHERE guid = 'a'") == 0
    created = await bus.all("feedeater.rss.messageCreated", expect=4, timeout=1)
    assert sorted(e["message"]["rss"]["guid"] for e in created) == ["a", "b", "c"]


async def test_entries_without_dates_use_first_seen_and_are_not_duplicated(
    host: Host, bus: BusReader, feed_server: FeedServer
) -> None:
    feed_server.route("/feed", Route(body=rss([("n1", "No date", None, "x")])))
    await add(host, feed_server.url("/feed"))
    before = datetime.now(UTC)
    await poll(host)
    row = await host.require_pool().fetchrow(
        "SELECT date_uncertain, effective_at, first_seen FROM mod_rss.entries"
    )
    assert (
        row is not None
        and row["date_uncertain"] is True
        and row["effective_at"] == row["first_seen"] >= before - timedelta(seconds=1)
    )
    await make_due(host)
    await poll(host)
    assert await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.entries") == 1
    assert len(await bus.all("feedeater.rss.>", expect=2, timeout=1)) == 1


async def test_permanent_redirect_updates_the_stored_url_temporary_does_not(
    host: Host, feed_server: FeedServer
) -> None:
    body = rss([("a", "A", ago(hours=1), "x")])
    feed_server.route("/new", Route(body=body))
    feed_server.route("/moved", Route(status=301, location="/new"))
    feed_server.route("/temp", Route(status=302, location="/new"))
    moved = await add(host, feed_server.url("/moved"))
    temp = await add(host, feed_server.url("/temp"))
    await poll(host)
    assert (await state(host, moved.id))["url"] == feed_server.url("/new")
    assert (await state(host, temp.id))["url"] == feed_server.url("/temp")


async def test_gone_feed_is_marked_dead_and_never_polled_again(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/gone", Route(status=410))
    feed = await add(host, feed_server.url("/gone"))
    await poll(host)
    assert (await state(host, feed.id))["dead"] is True
    await make_due(host)
    await poll(host)
    assert len(feed_server.requests_to("/gone")) == 1
    assert await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.feeds") == 1  # kept, not deleted
    async with host.require_pool().acquire() as conn:
        await store.update_feed(conn, feed.id, {"enabled": True})
    assert (await state(host, feed.id))["dead"] is False


async def test_retry_after_is_honoured(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/busy", Route(status=429, retry_after="1800"))
    feed = await add(host, feed_server.url("/busy"))
    before = datetime.now(UTC)
    await poll(host)
    st = await state(host, feed.id)
    assert (
        st["consecutive_errors"] == 1
        and st["last_status"] == 429
        and st["interval_reason"].startswith("retry-after")
    )
    assert timedelta(seconds=1790) <= st["next_poll_at"] - before <= timedelta(seconds=1900)


async def test_errors_back_off_exponentially_and_flag_stale(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    host = await rss_host(stale_after_errors="3")
    feed_server.route("/broken", Route(status=500))
    feed = await add(host, feed_server.url("/broken"))
    delays = []
    for _ in range(3):
        before = datetime.now(UTC)
        await poll(host)
        st = await state(host, feed.id)
        delays.append((st["next_poll_at"] - before).total_seconds())
        await make_due(host)
    for delay, minutes in zip(delays, (1, 2, 4), strict=True):  # exponential backoff, ±15 % jitter
        assert minutes * 60 * 0.84 <= delay <= minutes * 60 * 1.16
    assert st["consecutive_errors"] == 3 and st["total_errors"] == 3 and st["stale"] is True
    assert st["last_error"].startswith("HTTP 500") and st["last_error_at"] is not None
    feed_server.route("/broken", Route(body=rss([("a", "A", ago(hours=1), "x")])))
    await poll(host)
    st = await state(host, feed.id)
    assert st["consecutive_errors"] == 0 and st["stale"] is False and st["total_errors"] == 3


async def test_the_last_20_schedule_decisions_are_kept_per_feed(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/sched", Route(body=rss([("a", "A", ago(hours=1), "x")]), etag='"e1"'))
    feed = await add(host, feed_server.url("/sched"))
    for _ in range(22):  # one 200, then 21 conditional GETs answered 304
        await poll(host)
        await make_due(host)
    feed_server.route("/sched", Route(status=500))
    await poll(host)
    log = await host.require_pool().fetch(
        "SELECT * FROM mod_rss.schedule_log WHERE feed_id = $1 ORDER BY seq DESC", feed.id
    )
    assert [r["seq"] for r in log] == list(range(23, 3, -1))  # a ring: polls 1–3 were overwritten
    st = await state(host, feed.id)
    newest, before = log[0], log[1]
    assert (newest["status"], newest["error"]) == (500, st["last_error"]) and newest["error"]
    assert newest["reason"] == st["interval_reason"] and newest["next_poll_at"] == st["next_poll_at"]
    assert newest["polled_at"] == st["last_polled_at"] and newest["interval_s"] == st["interval_s"]
    assert (before["status"], before["error"]) == (304, None) and before["reason"] != newest["reason"]
    assert {r["status"] for r in log[1:]} == {304}


async def test_a_document_that_is_not_a_feed_keeps_its_raw_response(
    host: Host, feed_server: FeedServer
) -> None:
    feed_server.route(
        "/html", Route(body=b"<html><body>Not a feed</body></html>", headers={"Content-Type": "text/html"})
    )
    feed = await add(host, feed_server.url("/html"))
    metrics = await poll(host)
    assert metrics["parse_errors"] == 1
    raw = await host.require_pool().fetchrow(
        "SELECT r.parse_error, b.body FROM mod_rss.raw_fetches r JOIN mod_rss.raw_blobs b ON b.sha256 = r.body_sha256"
    )
    assert raw is not None and raw["parse_error"] and bytes(raw["body"]).startswith(b"<html>")
    st = await state(host, feed.id)
    assert st["consecutive_errors"] == 1 and "not a feed" in st["last_error"]


async def test_private_addresses_are_refused_by_default(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    host = await rss_host(allow_private_networks="false")
    feed_server.route("/feed", Route(body=rss([("a", "A", ago(hours=1), "x")])))
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    assert feed_server.requests_to("/feed") == []
    st = await state(host, feed.id)
    assert st["consecutive_errors"] == 1 and st["last_error"]


async def test_oversized_body_is_refused(rss_host: Callable[..., Any], feed_server: FeedServer) -> None:
    host = await rss_host(max_body_bytes="65536")
    big = rss([(f"g{i}", "T" * 100, ago(hours=1), "x" * 1000) for i in range(200)])
    feed_server.route("/big", Route(body=big))
    feed = await add(host, feed_server.url("/big"))
    await poll(host)
    st = await state(host, feed.id)
    assert (
        st["consecutive_errors"] == 1
        and await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.entries") == 0
    )


async def test_two_hosts_fetch_each_due_feed_once(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    h1 = await rss_host("h1")
    h2 = await rss_host("h2")
    for i in range(30):
        feed_server.route(
            f"/f{i}",
            Route(
                body=rss([(f"{i}-a", "A", ago(hours=1), "x"), (f"{i}-b", "B", ago(hours=2), "y")]),
                delay_s=0.02,
            ),
        )
        await add(h1, feed_server.url(f"/f{i}"))
    m1, m2 = await asyncio.gather(poll(h1), poll(h2))
    assert m1.get("feeds", 0) + m2.get("feeds", 0) == 30
    assert all(len(feed_server.requests_to(f"/f{i}")) == 1 for i in range(30))
    assert h1.js is not None
    events = await BusReader(h1.js).all("feedeater.rss.messageCreated", expect=60)
    ids = [e["message"]["id"] for e in events]
    assert len(ids) == 60 == len(set(ids))


async def test_a_slow_server_holds_up_only_its_own_feed(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    """Claims are refilled as polls finish: with batches of 2, the feeds claimed after the slow one are
    polled while it is still waiting, not after it (gather-then-claim made them wait for it). The slow
    server answers only once all six fast feeds have been fetched (a fixed delay was outlasted by a
    busy machine); had they waited for it, it would never answer (503 after the hold limit)."""
    host = await rss_host(poll_batch="2", timeout_seconds="300")
    body = rss([("a", "A", ago(hours=1), "x")])

    def fast_fetched() -> bool:
        return len([r for r in feed_server.requests if r.path.startswith("/fast")]) == 6

    feed_server.route("/slow", Route(body=body, hold_until=fast_fetched))
    await add(host, feed_server.url("/slow"))  # the oldest next_poll_at: claimed first
    for i in range(6):
        feed_server.route(f"/fast{i}", Route(body=body))
        await add(host, feed_server.url(f"/fast{i}"))
    metrics = await poll(host)
    assert metrics["feeds"] == 7 and metrics.get("status_200") == 7


async def test_cleanup_expires_old_entries_with_tombstones(
    rss_host: Callable[..., Any], feed_server: FeedServer
) -> None:
    host = await rss_host(retention_days="30")
    feed_server.route(
        "/feed", Route(body=rss([("old", "Old", ago(days=40), "x"), ("new", "New", ago(days=1), "y")]))
    )
    await add(host, feed_server.url("/feed"))
    await poll(host)
    result = await host.run_job_once("rss.cleanup")
    assert result.status == "ok" and result.metrics["entries_expired"] == 1
    assert await host.require_pool().fetchval("SELECT array_agg(guid) FROM mod_rss.entries") == ["new"]
    await make_due(host)
    assert (await poll(host)).get("new", 0) == 0  # the feed still lists it; the tombstone keeps it out


async def test_identical_body_without_validators_is_not_parsed_again(
    host: Host, feed_server: FeedServer
) -> None:
    feed_server.route("/plain", Route(body=rss([("a", "A", ago(hours=1), "x")])))  # no ETag, no Last-Modified
    feed = await add(host, feed_server.url("/plain"))
    await poll(host)
    await make_due(host)
    metrics = await poll(host)
    assert metrics == {"feeds": 1, "status_200": 1, "same_body": 1}
    st = await state(host, feed.id)
    assert st["successful_polls"] == 1 and st["interval_reason"].startswith("not-modified")
    assert await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.raw_blobs") == 1
