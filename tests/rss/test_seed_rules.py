"""Issue 27: the seeds' remaining rules, through the poll job against a real feed server, PostgreSQL and
JetStream. The decisions themselves are tested pure in test_schedule.py and test_parse_losses.py."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from host.runtime import Host
from modules.rss import store
from modules.rss.ingest import poll as poll_job
from modules.rss.ingest.schedule import FORBIDDEN_WAIT_S
from modules.rss.service.feeds import feed_state, parse_assignment
from tests.feedserver import FeedServer, Route, ago, rss
from tests.rss.test_poll import add, make_due, poll, state

H = timedelta(hours=1)


async def test_a_403_is_forbidden_and_waits_hours(host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/f", Route(status=403))
    feed = await add(host, feed_server.url("/f"))
    before = datetime.now(UTC)
    await poll(host)
    st = await state(host, feed.id)
    assert st["last_error"].startswith("forbidden: the server refuses") and st["last_status"] == 403
    assert st["interval_reason"] == "forbidden"
    assert st["next_poll_at"] - before >= timedelta(seconds=FORBIDDEN_WAIT_S)
    async with host.require_pool().acquire() as conn:
        (row,) = await store.list_feeds(conn, feed_id=feed.id)
    assert feed_state(row) == "forbidden ×1"  # `rss list`, `rss show`, the API and the console say so


async def test_a_spent_rate_limit_delays_the_next_poll(host: Host, feed_server: FeedServer) -> None:
    reset = int((datetime.now(UTC) + 3 * H).timestamp())
    limits = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)}
    feed_server.route("/f", Route(body=rss([("a", "A", ago(hours=1), "x")]), headers=limits))
    feed = await add(host, feed_server.url("/f"))
    await poll(host)
    st = await state(host, feed.id)
    assert "+rate-limit" in st["interval_reason"]
    assert st["next_poll_at"] >= datetime.fromtimestamp(reset, UTC) - timedelta(seconds=1)


async def test_entries_keep_their_fetch_and_the_intake_decision(host: Host, feed_server: FeedServer) -> None:
    """Seed 001 §4.2/§4.5: each entry names the raw fetch it came from; the raw fetch keeps the request
    headers sent. `announced` / `intake_reason` are what `rss why` explains."""
    first = [("old", "Old", ago(days=5), "x")]
    feed_server.route("/f", Route(body=rss(first), etag='"v1"'))
    feed = await add(host, feed_server.url("/f"))
    await poll(host)
    feed_server.route("/f", Route(body=rss([*first, ("new", "New", ago(hours=1), "y"), ("late", "Late", ago(days=4), "z")]), etag='"v2"'))  # fmt: skip
    await make_due(host)
    await poll(host)
    pool = host.require_pool()
    fetches = [r["id"] for r in await pool.fetch("SELECT id FROM mod_rss.raw_fetches ORDER BY id")]
    rows = {
        r["guid"]: dict(r)
        for r in await pool.fetch(
            "SELECT guid, fetch_id, last_fetch_id, announced, intake_reason FROM mod_rss.entries WHERE feed_id = $1",
            feed.id,
        )
    }
    assert rows["old"] == {
        "guid": "old",
        "fetch_id": fetches[0],
        "last_fetch_id": fetches[1],
        "announced": False,
        "intake_reason": "first-poll",
    }
    assert (rows["new"]["fetch_id"], rows["new"]["announced"], rows["new"]["intake_reason"]) == (
        fetches[1],
        True,
        "realtime",
    )
    assert (rows["late"]["announced"], rows["late"]["intake_reason"]) == (False, "before-cutoff")
    sent = await pool.fetchval("SELECT request_headers FROM mod_rss.raw_fetches WHERE id = $1", fetches[1])
    assert sent["if-none-match"] == '"v1"' and sent["user-agent"].startswith("feedeater/")
    assert "gzip" in sent["accept-encoding"] and "application/rss+xml" in sent["accept"]


async def test_the_poll_line_items_and_health(
    host: Host, feed_server: FeedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Seed 004 §2.5/§2.6 and seed 002: the INFO line's cutoff, lookback source and item counts, a DEBUG
    line per item, skipped items counted per feed, the mean response time and the last fetch's new
    entries in the public health view."""
    caplog.set_level(logging.DEBUG, logger="feedeater.rss")
    body = rss([("a", "A", ago(hours=1), "x"), ("b", "B", None, "y")]).replace(
        b"</channel>", b"<item><title></title><description> </description></item></channel>"
    )
    feed_server.route("/f", Route(body=body, etag='"v1"'))
    feed = await add(host, feed_server.url("/f"))
    async with host.require_pool().acquire() as conn:
        await store.update_feed(conn, feed.id, dict([parse_assignment("lookback=6")]))
    await poll(host)
    await make_due(host)
    await poll(host)  # a 304
    lines = [r for r in caplog.records if r.name == "feedeater.rss.poll" and hasattr(r, "run_id")]
    parsed, hit = lines
    assert (parsed.items, parsed.dated, parsed.undated, parsed.skipped) == (2, 1, 1, 1)
    assert (parsed.etag_hit, parsed.changed, parsed.lookback_hours, parsed.lookback) == (
        False,
        True,
        6,
        "override",
    )
    assert parsed.cutoff.endswith("Z") and "cutoff" in parsed.getMessage()
    assert (hit.etag_hit, hit.changed) == (True, False)
    decisions = [r.getMessage() for r in caplog.records if r.name == "feedeater.rss.intake"]
    assert any("item a: new: not realtime" in m and "first poll" in m for m in decisions)
    health = await host.require_pool().fetchrow(
        """SELECT h.mean_response_ms, h.new_entries_last_fetch, p.skipped_items, p.responses
           FROM rss_public.feed_health h JOIN mod_rss.poll_state p USING (feed_id) WHERE h.feed_id = $1""",
        feed.id,
    )
    assert health["mean_response_ms"] > 0 and health["responses"] == 2
    assert (health["new_entries_last_fetch"], health["skipped_items"]) == (0, 1)  # the 304 found none new


async def test_warnings_are_not_repeated_by_a_restarted_host(
    rss_host: Callable[..., Any], feed_server: FeedServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Seed 004 §2.5: warn-once state lives in poll_state, not in the process."""
    caplog.set_level(logging.INFO, logger="feedeater.rss.poll")
    feed_server.route("/f", Route(body=rss([("u1", "undated", None, "x")])))
    first = await rss_host("h1")
    feed = await add(first, feed_server.url("/f"))
    await poll(first)
    feed_server.route("/f", Route(body=rss([("u1", "undated", None, "x"), ("u2", "two", None, "y")])))
    second = await rss_host("h2")  # another process: nothing in memory
    await make_due(second)
    await poll(second)
    said = [r for r in caplog.records if hasattr(r, "check") and poll_job.NO_DATES in r.getMessage()]
    assert len(said) == 1  # a document's condition is said at INFO, once, by whichever host saw it first
    assert (await state(second, feed.id))["warned"] == {"parse": [poll_job.NO_DATES]}


async def test_per_feed_schedule_and_backfill_settings(host: Host, feed_server: FeedServer) -> None:
    """Seed 001 §8: a feed's own min/max interval and backfill off, set like any per-feed override."""
    archive = rss([("a", "A", ago(hours=1), "x")]).replace(
        b"<channel>",
        b"<channel><atom:link xmlns:atom='http://www.w3.org/2005/Atom' rel='prev-archive' href='/old'/>",
    )
    feed_server.route("/f", Route(body=archive))
    feed = await add(host, feed_server.url("/f"))
    async with host.require_pool().acquire() as conn:
        changes = dict(parse_assignment(a) for a in ("min_interval=120", "max_interval=180", "backfill=no"))
        row = await store.update_feed(conn, feed.id, changes)
    assert (row.min_interval_s, row.max_interval_s, row.backfill) == (7200, 10800, False)
    before = datetime.now(UTC)
    await poll(host)
    st = await state(host, feed.id)
    assert 7200 <= st["interval_s"] <= 10800
    assert st["next_poll_at"] - before >= timedelta(seconds=7200 * 0.85)
    assert await host.require_pool().fetchval("SELECT count(*) FROM mod_rss.backfill") == 0


def test_scheduler_and_fetch_settings_reach_the_scheduler_and_the_fetcher() -> None:
    """Seed 001 §8: the factors, jitter, backoff cap and max redirects are settings."""
    from modules.rss import MODULE

    settings = {s.key: s.default for s in MODULE.manifest.settings} | {
        "interval_up_factor": 2.0,
        "interval_down_factor": 0.5,
        "ewma_alpha": 0.2,
        "ewma_blend": 0.25,
        "jitter_ratio": 0.05,
        "error_backoff_cap_minutes": 240.0,
        "max_redirects": 2,
    }
    params = poll_job.schedule_params(settings)
    assert (params.up, params.down, params.ewma_alpha, params.blend_lambda, params.jitter) == (
        2.0,
        0.5,
        0.2,
        0.25,
        0.05,
    )
    assert params.backoff_cap_s == 240 * 60
    assert poll_job.make_fetcher(settings)._max_redirects == 2
