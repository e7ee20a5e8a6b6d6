"""The transactional outbox against real PostgreSQL and a real JetStream."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import nats
import pytest
from nats.js.errors import NotFoundError

from host import bus, outbox, streams
from host.errors import UserError
from host.events import Event, stable_uuid
from host.services import EmbeddedNats
from host.streams import SHARED as STREAM
from tests.services import WAIT_S, BusReader, make_host, reset_stream


def ev(n: int, module: str = "test") -> Event:
    return Event(
        stable_uuid("test", str(n)), f"feedeater.{module}.messageCreated", {"type": "TestEvent", "n": n}
    )


async def test_committed_events_are_published_once_in_order(host, bus: BusReader) -> None:
    async with host.pool.acquire() as conn, conn.transaction():
        assert await outbox.enqueue_many(conn, [ev(i) for i in range(20)]) == 20
    relay = outbox.Relay(host.pool, host.js)
    assert await relay.drain_all() == 20
    got = await bus.all(expect=20)
    assert [m["n"] for m in got] == list(range(20))
    assert [m["_msg_id"] for m in got] == [str(ev(i).event_id) for i in range(20)]
    async with host.pool.acquire() as conn:
        assert (await outbox.status(conn)).pending == 0


async def test_rolled_back_transaction_publishes_nothing(host, bus: BusReader) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        async with host.pool.acquire() as conn, conn.transaction():
            await outbox.enqueue(conn, ev(1))
            raise Boom
    relay = outbox.Relay(host.pool, host.js)
    assert await relay.drain_all() == 0
    assert await bus.all(timeout=0.5) == []


async def test_same_event_id_is_queued_once(host) -> None:
    async with host.pool.acquire() as conn:
        assert await outbox.enqueue(conn, ev(7)) is True
        assert await outbox.enqueue(conn, ev(7)) is False
        assert await conn.fetchval("SELECT count(*) FROM host.outbox") == 1


async def test_republish_after_crash_is_dropped_by_jetstream(host, bus: BusReader) -> None:
    """A crash between publish and mark-published re-sends the same Nats-Msg-Id; the stream keeps one."""
    async with host.pool.acquire() as conn:
        await outbox.enqueue_many(conn, [ev(i) for i in range(5)])
    relay = outbox.Relay(host.pool, host.js)
    await relay.drain_all()
    await host.pool.execute("UPDATE host.outbox SET published_at = NULL")  # as if the marks were lost
    assert await relay.drain_all() == 5
    got = await bus.all(expect=10, timeout=1.5)
    assert [m["n"] for m in got] == list(range(5))


async def test_events_wait_out_a_nats_outage_and_arrive_once_in_order(
    tmp_path: Path, database_url: str, own_nats: EmbeddedNats
) -> None:
    url = own_nats.start()
    await reset_stream(url)
    h = make_host(tmp_path, database_url, url)
    await h.open()
    stop = asyncio.Event()
    relay = outbox.Relay(h.require_pool(), h.js, idle_s=0.2)
    task = asyncio.create_task(relay.run(stop))
    try:
        async with h.require_pool().acquire() as conn:
            await outbox.enqueue_many(conn, [ev(i) for i in range(10)])
        await _until(lambda: _pending(h.require_pool()), 0)
        own_nats.stop()  # NATS goes away
        for i in range(10, 60):  # commits keep happening during the outage
            async with h.require_pool().acquire() as conn, conn.transaction():
                await outbox.enqueue(conn, ev(i))
        await asyncio.sleep(1.0)
        assert await _pending(h.require_pool()) == 50  # nothing lost, nothing marked while down
        own_nats.start()  # same port, same store
        await _until(lambda: _pending(h.require_pool()), 0)
        assert h.js is not None
        got = await BusReader(h.js).all(expect=60)
        assert [m["n"] for m in got] == list(range(60))
    finally:
        stop.set()
        relay.wake()
        await asyncio.wait_for(task, WAIT_S)
        await h.close()


async def _pending(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as conn:
        return (await outbox.status(conn)).pending


async def _until(probe, want: int, timeout: float = WAIT_S) -> None:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := await probe()) != want:
        assert asyncio.get_running_loop().time() < deadline, f"still {got}, wanted {want}"
        await asyncio.sleep(0.1)


async def test_message_created_links_its_context(host) -> None:
    from host import contexts
    from host.events import message_created

    msg = {
        "id": str(stable_uuid("m", "1")),
        "createdAt": "2026-01-02T03:04:05.000Z",
        "source": {"module": "test"},
        "contextRef": {"ownerModule": "test", "sourceKey": "thing:1"},
    }
    async with host.pool.acquire() as conn, conn.transaction():
        await outbox.enqueue(conn, message_created("test", msg))
        await contexts.update(
            conn,
            outbox.emitter("test", ("contextUpdated",)),
            module="test",
            source_key="thing:1",
            summary_short="s",
            summary_long="l",
            key_points=["a"],
            now=datetime(2026, 1, 2, tzinfo=UTC),
        )
    async with host.pool.acquire() as conn:
        assert [str(m) for m in await contexts.messages(conn, "test", "thing:1")] == [msg["id"]]
        ctx = await contexts.get(conn, "test", "thing:1")
        assert ctx is not None and ctx["version"] == 1 and ctx["message_count"] == 1


async def test_bus_reader_raises_when_the_stream_cannot_be_read(own_nats: EmbeddedNats) -> None:
    """It used to return [] on any error, so "nothing was published" passed with NATS down."""
    nc = await nats.connect(own_nats.start())
    try:
        with pytest.raises(NotFoundError):
            await BusReader(nc.jetstream()).all()  # no stream at all
    finally:
        await nc.close()


class SlowLink:
    """A TCP relay to a NATS server whose server-to-client direction is a slow link (bytes per second)."""

    def __init__(self, url: str, *, bytes_per_s: int) -> None:
        parts = urlsplit(url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 4222)
        self.userinfo = (
            parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        )  # the server's token
        self.chunk = max(bytes_per_s // 10, 1)  # a tenth of a second's worth at a time
        self.pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"nats://{self.userinfo}127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *_exc: object) -> None:
        self.server.close()
        for task in self.pipes:
            task.cancel()
        await asyncio.gather(*self.pipes, return_exceptions=True)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(*self.target)
        for task in (
            self._pipe(client_r, server_w, 1 << 16, 0),
            self._pipe(server_r, client_w, self.chunk, 0.1),
        ):
            self.pipes.add(asyncio.create_task(task))

    @staticmethod
    async def _pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, size: int, pause: float) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await r.read(size):
                w.write(data)
                await w.drain()
                await asyncio.sleep(pause)
        w.close()


async def test_bus_reader_reads_every_message_even_when_delivery_is_slow(own_nats: EmbeddedNats) -> None:
    """It stopped at the first half second without a message, so on a busy machine a slow delivery hid
    events from "exactly these" and "nothing was published" assertions. Here the reader's connection
    passes through a slow link (2.5 KB/s): each padded message takes ~0.8 s to arrive."""
    url = own_nats.start()
    nc = await nats.connect(url)
    async with SlowLink(url, bytes_per_s=2500) as slow_url:
        reader = await nats.connect(slow_url, connect_timeout=30)
        try:
            js = nc.jetstream()
            await js.add_stream(name=STREAM, subjects=["feedeater.>"])
            pad = "x" * 1800  # ~0.8 s each on the slow link
            for n, module in [(0, "test"), (1, "test"), (2, "other"), (3, "test")]:
                e = Event(
                    stable_uuid("test", str(n)), f"feedeater.{module}.messageCreated", {"n": n, "pad": pad}
                )
                await js.publish(e.subject, e.encode(), headers={"Nats-Msg-Id": str(e.event_id)})
            slow = BusReader(reader.jetstream(timeout=30))
            assert [m["n"] for m in await slow.all("feedeater.test.messageCreated")] == [0, 1, 3]
            assert await slow.all("feedeater.none.messageCreated") == []  # nothing there: no waiting
        finally:
            await reader.close()
            await nc.close()


async def test_a_full_stream_keeps_events_in_the_outbox_and_says_so(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    """Limits are settings; a stream at its size limit refuses new events (discard new), which then wait
    in the outbox with the reason, while other subjects go on; raising the limit lets them out in order."""
    await reset_stream(nats_url)
    h = make_host(tmp_path, database_url, nats_url, env={"FEEDEATER_HOST_BUS_MAX_BYTES_MB": "1"})
    await h.open()
    try:
        assert h.nc is not None and h.js is not None
        config = await bus.stream_config(h.nc, streams.EVENTS)
        assert config is not None
        assert (config["max_bytes"], config["discard"], config["num_replicas"]) == (2**20, "new", 1)
        assert config["max_age"] == 30 * 86400 * 10**9 and config["duplicate_window"] == 86400 * 10**9
        pad = "x" * 400_000
        big = [
            Event(stable_uuid("big", str(n)), "feedeater.test.contextUpdated", {"n": n, "pad": pad})
            for n in range(3)
        ]
        async with h.require_pool().acquire() as conn, conn.transaction():
            await outbox.enqueue_many(conn, [*big, *(ev(i) for i in range(3))])
        relay = outbox.Relay(h.require_pool(), h.js, repair=lambda: h.prepare_streams(h.nc))
        assert await relay.drain_all() == 5  # two big ones fit, the third does not; the messages go out
        async with h.require_pool().acquire() as conn:
            st = await outbox.status(conn)
        assert st.pending == 1 and [s.subject for s in st.stalled] == ["feedeater.test.contextUpdated"]
        assert "maximum bytes" in st.stalled[0].error and "host.bus_max_bytes_mb" in st.stalled[0].error
        assert [m["n"] for m in await BusReader(h.js).all("feedeater.test.messageCreated")] == [0, 1, 2]
        h.env["FEEDEATER_HOST_BUS_MAX_BYTES_MB"] = "2"  # the operator raises the limit
        assert await h.prepare_streams(h.nc) == [f"updated stream {name}" for name in streams.plan(())]
        await _until(lambda: _drained_after_retry(relay), 0)
        got = await BusReader(h.js).all("feedeater.test.contextUpdated")
        assert [m["n"] for m in got] == [0, 1, 2]
    finally:
        await h.close()


async def _drained_after_retry(relay: outbox.Relay) -> int:
    await relay.drain_all()
    async with relay.pool.acquire() as conn:
        return (await outbox.status(conn)).pending


async def test_a_stream_the_servers_cannot_reserve_is_one_line_naming_the_setting(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    await reset_stream(nats_url)
    h = make_host(tmp_path, database_url, nats_url, env={"FEEDEATER_HOST_BUS_MAX_BYTES_MB": str(2**30)})
    try:
        with pytest.raises(UserError) as refused:  # a petabyte per stream: no server reserves that
            await h.open()
        assert "JetStream refused stream" in str(refused.value)
        assert "host.bus_max_bytes_mb" in str(refused.value)
    finally:
        await h.close()
