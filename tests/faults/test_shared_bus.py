"""feedeater beside FeedEater's own archiver on one NATS (issue #24): the archiver rewrites the stream
`feedeater_bus` to its two subjects whenever it starts. Before, that took `contextUpdated` away while
`feedeater run` published and the outbox relay stalled behind the first unroutable event."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client

from host import bus, outbox, streams
from host.runtime import Host
from host.services import EmbeddedNats
from tests import ticker
from tests.feedeater_archiver import Archiver
from tests.services import BusReader, make_host, until


@contextlib.asynccontextmanager
async def running(host: Host) -> AsyncIterator[asyncio.Task[None]]:
    """`feedeater run` in this process (the same Host.run), stopped and closed afterwards."""
    await host.open(connect_bus=False)
    stop = asyncio.Event()
    task = asyncio.create_task(host.run(stop))
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
        await host.close()


async def published(host: Host, subject: str) -> int:
    return int(
        await host.require_pool().fetchval(
            "SELECT count(*) FROM host.outbox WHERE subject = $1 AND published_at IS NOT NULL", subject
        )
    )


async def drained(host: Host) -> bool:
    async with host.require_pool().acquire() as conn:
        return (await outbox.status(conn)).pending == 0


async def assert_every_event_once(host: Host, nc: Client) -> dict[str, str]:
    """Every outbox event is in the stream the plan gives its subject, exactly once; every subscription
    handled each of its events once. Returns event id → subject."""
    pool = host.require_pool()
    rows = await pool.fetch(
        "SELECT event_id::text, subject FROM host.outbox WHERE subject LIKE 'feedeater.ticker.%'"
    )
    sent = {r["event_id"]: r["subject"] for r in rows}
    got = await BusReader(nc.jetstream()).all("feedeater.ticker.>", expect=len(sent), timeout=60)
    ids = Counter(m["_msg_id"] for m in got)
    assert [i for i, n in ids.items() if n > 1] == [], "an event reached the bus twice"
    assert set(ids) == set(sent), "the bus and the outbox disagree"
    assert {m["_stream"] for m in got if m["_stream"] != streams.stream_for(m["_subject"])} == set()
    await until(lambda: _handled(host, len(sent)), what="the subscriptions caught up", timeout=120)
    seen = await pool.fetch("SELECT consumer, event_id FROM ticker_seen")
    everything = Counter(r["event_id"] for r in seen if r["consumer"] == "everything")
    created = Counter(r["event_id"] for r in seen if r["consumer"] == "created")
    assert everything == Counter(set(sent)), "the subscription on both streams missed or repeated events"
    assert created == Counter(i for i, s in sent.items() if s.endswith(".messageCreated"))
    return sent


@pytest.mark.parametrize("first", ["feedeater", "archiver"])
async def test_archiver_starting_while_we_publish_takes_no_subject_of_ours(
    first: str, tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    nc = await nats.connect(url)
    archiver = Archiver(nc)
    if first == "archiver":
        await archiver.start()  # FeedEater's worker ran before feedeater ever did
    host = make_host(tmp_path, database_url, url)
    ticker.install(host)
    try:
        async with running(host):
            contexts = "feedeater.ticker.contextUpdated"
            await until(lambda: published(host, contexts), what="contexts published", timeout=120)
            # The archiver (re)starts in the middle of publishing: FeedEater's worker (re)starting.
            before = await published(host, contexts)
            await archiver.stop()
            await archiver.start()
            info = await bus.stream_config(nc, streams.SHARED)
            assert info is not None and info["subjects"] == list(archiver.stream_config()["subjects"])
            await until(
                lambda: _more(host, contexts, before + 3), what="contexts still published after the archiver"
            )
            ticker.halt(host.contexts["ticker"]).set()
            await until(lambda: drained(host), what="outbox drained", timeout=120)
            sent = await assert_every_event_once(host, nc)
            messages = {i for i, s in sent.items() if s.endswith(".messageCreated")}
            await until(lambda: _archived(archiver, messages), what="the archiver archived every message")
            assert archiver.unparsable == 0
            assert {s for s in sent.values()} == {
                "feedeater.ticker.messageCreated",
                "feedeater.ticker.contextUpdated",
                "feedeater.ticker.messageUpdated",
            }
            report = await host.health()
            assert report["status"] == "ok", report["degraded"]
    finally:
        await archiver.stop()
        await nc.close()


async def _handled(host: Host, count: int) -> bool:
    sql = "SELECT count(*) FROM ticker_seen WHERE consumer = 'everything'"
    return int(await host.require_pool().fetchval(sql)) >= count


async def _more(host: Host, subject: str, count: int) -> bool:
    return await published(host, subject) >= count


async def _archived(archiver: Archiver, messages: set[str]) -> bool:
    return archiver.archived >= messages
