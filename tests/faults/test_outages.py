"""NATS and PostgreSQL going away in the middle of a poll: the data waits, nothing is lost or doubled."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from pathlib import Path

import asyncpg

from host import outbox
from host.runtime import Host
from host.services import EmbeddedNats, EmbeddedPostgres
from modules.rss import store
from tests.feedserver import FeedServer, Item, Route, ago, rss
from tests.services import WAIT_S, assert_exactly_once, make_host, pending_events, reset_stream, until

FAST = {"per_host_concurrency": "50", "parse_workers": "0", "lease_seconds": "30"}
BASE = ago(hours=20)


def env(**settings: str) -> dict[str, str]:
    return {f"FEEDEATER_RSS_{k.upper()}": v for k, v in (FAST | settings).items()}


def items(feed: int, count: int) -> list[Item]:
    return [(f"{feed}-{r}", f"entry {r}", BASE + timedelta(hours=r), f"text {r}") for r in range(count)]


async def add_feeds(pool: asyncpg.Pool, server: FeedServer, count: int) -> list[int]:
    async with pool.acquire() as conn:
        return [(await store.add_feed(conn, url=server.url(f"/f/{i}")))[0].id for i in range(count)]


async def in_flight(server: FeedServer, paths: list[str]) -> bool:
    return all(server.requests_to(p) for p in paths)


def start_relay(host: Host, tasks: list[asyncio.Task[None]], stop: asyncio.Event) -> outbox.Relay:
    assert host.js is not None
    relay = outbox.Relay(host.require_pool(), host.js, idle_s=0.2)
    tasks.append(asyncio.create_task(relay.run(stop)))
    return relay


async def test_nats_outage_during_polls_delivers_every_event_once_in_order(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    await reset_stream(url)
    host = make_host(tmp_path, database_url, url, env=env())
    await host.open()
    stop = asyncio.Event()
    relay_tasks: list[asyncio.Task[None]] = []
    start_relay(host, relay_tasks, stop)
    pool = host.require_pool()
    try:
        with FeedServer() as server:
            nats_down = threading.Event()  # the answers wait for it: the fetches are in flight, not done
            for i in range(6):
                server.route(f"/f/{i}", Route(body=rss(items(i, 3)), hold_until=nats_down.is_set))
            await add_feeds(pool, server, 6)
            job = asyncio.create_task(host.run_job_once("rss.poll"))
            await until(lambda: in_flight(server, [f"/f/{i}" for i in range(6)]), what="fetches started")
            own_nats.stop()  # NATS dies while the fetches are in flight
            nats_down.set()
            result = await job
            assert result.status == "ok" and result.metrics["new"] == 18
            for i in range(
                6
            ):  # a second poll during the outage: each feed's new entry comes after its first three
                server.route(f"/f/{i}", Route(body=rss(items(i, 5))))
            await pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
            result = await host.run_job_once("rss.poll")
            assert result.status == "ok" and result.metrics["new"] == 12
            await asyncio.sleep(1.5)  # the relay keeps trying meanwhile
            assert await pending_events(pool) == 30  # nothing marked sent while NATS was down
            own_nats.start()  # same port, same JetStream store
            assert host.js is not None
            events = await assert_exactly_once(pool, host.js)
            assert len(events) == 30
    finally:
        stop.set()
        for t in relay_tasks:
            await asyncio.wait_for(t, WAIT_S)
        await host.close()


async def test_postgres_restart_during_a_poll_leaves_no_half_written_feed(
    tmp_path: Path, nats_url: str, own_pg: EmbeddedPostgres
) -> None:
    await reset_stream(nats_url)
    status = own_pg.status()
    assert status.url is not None
    host = make_host(tmp_path, status.url, nats_url, env=env())
    await host.open()
    pool = host.require_pool()
    slow = [f"/f/{i}" for i in range(3, 6)]
    try:
        with FeedServer() as server:
            pg_down = threading.Event()  # the slow feeds are answered only once PostgreSQL is gone
            for i in range(6):
                hold = pg_down.is_set if i >= 3 else None
                server.route(f"/f/{i}", Route(body=rss(items(i, 4)), hold_until=hold))
            feeds = await add_feeds(pool, server, 6)
            job = asyncio.create_task(host.run_job_once("rss.poll"))

            async def fast_done_slow_in_flight() -> bool:
                done = await pool.fetchval(
                    "SELECT count(*) FROM mod_rss.poll_state WHERE successful_polls = 1"
                )
                return done == 3 and await in_flight(server, slow)

            await until(fast_done_slow_in_flight, what="fast feeds stored, slow ones in flight")
            await asyncio.to_thread(own_pg.stop)  # fast shutdown: every connection is cut
            pg_down.set()
            result = await asyncio.wait_for(job, WAIT_S)  # the job ends (cleanly), it does not hang or crash
            assert result.status == "failed" or result.metrics.get("aborted") == 3, result
            await asyncio.to_thread(own_pg.start)
            # No half-written feed: each feed has all of its entries and events, or none of them.
            rows = await pool.fetch(
                """SELECT p.feed_id, p.successful_polls, p.lease_until IS NOT NULL AS leased,
                              (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = p.feed_id) AS entries
                       FROM mod_rss.poll_state p ORDER BY p.feed_id"""
            )
            assert [(r["successful_polls"], r["entries"]) for r in rows] == [(1, 4)] * 3 + [(0, 0)] * 3
            assert [r["leased"] for r in rows] == [False] * 3 + [True] * 3
            assert await pool.fetchval("SELECT count(*) FROM host.outbox") == 12
            # As if the 30 s lease had run out (test_scale_out waits out a real one); the next run catches up.
            await pool.execute("UPDATE mod_rss.poll_state SET lease_until = now() - interval '1 second'")
            for i in range(3, 6):
                server.route(f"/f/{i}", Route(body=rss(items(i, 4))))
            result = await host.run_job_once("rss.poll")
            assert result.status == "ok" and result.metrics.get("new") == 12, result
            assert await pool.fetchval(
                "SELECT bool_and(successful_polls = 1) FROM mod_rss.poll_state WHERE feed_id = ANY($1::bigint[])",
                feeds,
            )
            assert host.js is not None
            relay = outbox.Relay(pool, host.js)
            while await relay.drain_once():
                pass
            assert len(await assert_exactly_once(pool, host.js)) == 24
    finally:
        await host.close()
