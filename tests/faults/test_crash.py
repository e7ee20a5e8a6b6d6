"""A host SIGKILLed between insert and publish, between publish and mark-sent, and mid-relay."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from host.services import EmbeddedNats
from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import (
    HostProcess,
    assert_exactly_once,
    make_host,
    pending_events,
    reset_stream,
    until,
)

RUN_ENV = {"FEEDEATER_JOB_RSS_POLL": "1s", "FEEDEATER_RSS_PARSE_WORKERS": "0"}
ENTRIES = 4500  # the relay is caught mid-way (9 batches of 500); under rss.max_items_per_document (5000)


async def published(pool: asyncpg.Pool) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM host.outbox WHERE published_at IS NOT NULL"))


@pytest.mark.timeout(900)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_sigkill_before_publish_and_mid_relay_loses_and_doubles_nothing(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    await reset_stream(url)
    observer = make_host(tmp_path / "observer", database_url, url)
    await observer.open()
    pool = observer.require_pool()
    procs: list[HostProcess] = []
    base = ago(days=1)
    body = rss([(f"g{i}", f"entry {i}", base, "x") for i in range(ENTRIES)])
    try:
        with FeedServer() as server:
            server.route("/big", Route(body=body))
            first = HostProcess(tmp_path / "a", database_url, url, "crash-a", **RUN_ENV)
            procs.append(first)
            await until(
                lambda: pool.fetchval("SELECT count(*) FROM host.job_runs WHERE host_id = 'crash-a'"),
                what="host a polling",
            )
            own_nats.stop()  # host a cannot publish: its events stay in the outbox
            async with pool.acquire() as conn:
                await store.add_feed(conn, url=server.url("/big"))

            async def stored() -> bool:
                return await pending_events(pool) == ENTRIES

            await until(stored, timeout=240, what="entries and events committed")
            first.kill()  # 1. killed after the insert, before any publish
            assert await pool.fetchval("SELECT count(*) FROM mod_rss.entries") == ENTRIES
            assert await published(pool) == 0
            own_nats.start()

            second = HostProcess(tmp_path / "b", database_url, url, "crash-b", **RUN_ENV)
            procs.append(second)
            done = await until(
                lambda: published(pool), timeout=240, interval=0.005, what="relay of host b started"
            )
            second.kill()  # 2. killed mid-relay (possibly between a publish and its mark)
            left = await pending_events(pool)
            assert 0 < left < ENTRIES, f"the relay was not caught mid-way ({done} published)"

            third = HostProcess(tmp_path / "c", database_url, url, "crash-c", **RUN_ENV)
            procs.append(third)
            assert observer.js is not None
            events = await assert_exactly_once(pool, observer.js)
            assert len(events) == ENTRIES
            assert [e["message"]["rss"]["guid"] for e in events] == [f"g{i}" for i in range(ENTRIES)]
    finally:
        for p in procs:
            p.stop()
        await observer.close()


@pytest.mark.timeout(600)  # waits for conditions with generous deadlines; a busy machine is slow
async def test_published_but_unmarked_events_are_resent_and_dropped_by_jetstream(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    """A crash between publish and mark-sent, staged exactly: we publish the rows ourselves and leave them
    unmarked; the restarted host re-sends them and the stream's duplicate window keeps one of each."""
    await reset_stream(nats_url)
    host = make_host(tmp_path / "h", database_url, nats_url)
    await host.open()
    pool = host.require_pool()
    procs: list[HostProcess] = []
    try:
        with FeedServer() as server:
            server.route(
                "/f", Route(body=rss([(f"g{i}", f"entry {i}", ago(days=1), "x") for i in range(20)]))
            )
            async with pool.acquire() as conn:
                await store.add_feed(conn, url=server.url("/f"))
            result = await host.run_job_once("rss.poll")  # committed entries + outbox rows, no relay
            assert result.status == "ok" and result.metrics["new"] == 20
        assert host.js is not None
        rows = await pool.fetch("SELECT event_id, subject, payload FROM host.outbox ORDER BY id LIMIT 12")
        for r in rows:  # the lost relay got this far: published and acked, never marked
            await host.js.publish(
                r["subject"], bytes(r["payload"]), headers={"Nats-Msg-Id": str(r["event_id"])}
            )
        assert await pending_events(pool) == 20
        procs.append(HostProcess(tmp_path / "run", database_url, nats_url, "restarted", **RUN_ENV))
        events = await assert_exactly_once(pool, host.js)
        assert len(events) == 20
        info = await host.js.stream_info("feedeater_bus")
        assert info.state.messages == 20
    finally:
        for p in procs:
            p.stop()
        await host.close()
