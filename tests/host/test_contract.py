"""The module contract in-process: ctx.emit checks, subscriptions (exactly once, retries, dead letters,
lag), supervised services (restart with backoff, state recorded)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
import pytest
from prometheus_client import generate_latest

from host import contexts
from host.consumers import ERROR_HEADER, Consumer
from host.events import Event
from host.module import (
    Idle,
    Job,
    Manifest,
    ModuleContext,
    ModuleSpec,
    ReceivedEvent,
    Service,
    Subscription,
)
from host.runtime import Host
from host.streams import DLQ as DLQ_STREAM
from host.supervise import RESTART, Supervisor, Unit, failures_after
from tests.services import BusReader, until


async def test_emit_refuses_events_the_manifest_does_not_declare(host: Host) -> None:
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn, conn.transaction():
        with pytest.raises(ValueError, match="rss may not emit feedeater.other.messageCreated"):
            await ctx.emit(conn, Event(uuid.uuid4(), "feedeater.other.messageCreated", {}))
        with pytest.raises(ValueError, match="rss may not emit feedeater.rss.secret: its Manifest.events"):
            await ctx.emit(conn, Event(uuid.uuid4(), "feedeater.rss.secret", {}))
        ok = Event(uuid.uuid4(), "feedeater.rss.contextUpdated", {"type": "ContextUpdated"})
        assert await ctx.emit(conn, ok, ok) == 1  # the same event id twice is queued once
    async with host.require_pool().acquire() as conn:  # autocommit: the event would outlive a rollback
        with pytest.raises(ValueError, match="rss emitted outside a transaction"):
            await ctx.emit(conn, Event(uuid.uuid4(), "feedeater.rss.contextUpdated", {}))
    assert await host.require_pool().fetchval("SELECT count(*) FROM host.outbox") == 1


async def test_contexts_are_published_through_the_owners_emit(host: Host) -> None:
    """contexts.update queued its ContextUpdated straight into the outbox, a second way to publish that
    skipped the manifest check: a module could announce a context for another module."""
    rss = await host.context("rss")
    demo(host, Subscription("unused", "feedeater.none.x", _never))  # declares no contextUpdated
    pool = host.require_pool()
    for emit, module in ((rss.emit, "digest"), ((await host.context("demo")).emit, "demo")):
        with pytest.raises(ValueError, match=f"may not emit feedeater.{module}.contextUpdated"):
            async with pool.acquire() as conn, conn.transaction():  # rolled back: no row either
                await contexts.update(
                    conn,
                    emit,
                    module=module,
                    source_key="k",
                    summary_short="s",
                    summary_long="l",
                    key_points=[],
                )
    async with pool.acquire() as conn, conn.transaction():
        await contexts.update(
            conn, rss.emit, module="rss", source_key="k", summary_short="s", summary_long="l", key_points=[]
        )
    assert await pool.fetchval("SELECT array_agg(subject) FROM host.outbox") == [
        "feedeater.rss.contextUpdated"
    ]
    assert await pool.fetchval("SELECT array_agg(owner_module) FROM host.contexts") == ["rss"]


async def _never(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
    raise AssertionError("not subscribed in this test")


def demo(host: Host, sub: Subscription) -> None:
    host.specs["demo"] = ModuleSpec(Manifest("demo", "1", "", subscriptions=(sub,), events=("noted",)))


async def publish(host: Host, *bodies: dict[str, object]) -> list[str]:
    assert host.js is not None
    ids = []
    for body in bodies:
        event_id = str(uuid.uuid4())
        await host.js.publish(
            "feedeater.demo.messageCreated", json.dumps(body).encode(), headers={"Nats-Msg-Id": event_id}
        )
        ids.append(event_id)
    return ids


async def test_subscription_handles_once_retries_then_dead_letters(host: Host) -> None:
    calls: dict[str, int] = {}

    async def handler(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
        calls[event.event_id] = calls.get(event.event_id, 0) + 1
        if event.payload.get("poison"):
            raise RuntimeError("cannot digest this")
        await conn.execute("INSERT INTO demo_notes (event_id) VALUES ($1)", event.event_id)

    sub = Subscription("notes", "feedeater.demo.messageCreated", handler, max_deliver=2)
    demo(host, sub)
    ctx = await host.context("demo")
    await host.require_pool().execute("CREATE TABLE demo_notes (event_id text NOT NULL)")
    good, done_before, poison = await publish(host, {"n": 1}, {"n": 2}, {"poison": True})
    # `done_before` was processed by a host that died before acking: its id is already recorded.
    await host.require_pool().execute(
        "INSERT INTO host.processed_events (consumer, event_id) VALUES ('demo.notes', $1)", done_before
    )
    assert host.js is not None
    unit = Unit("demo", "notes", "subscription")
    task = asyncio.create_task(Consumer(ctx, sub, host.js, unit).run())
    try:
        reader = BusReader(host.js, stream=DLQ_STREAM)

        async def dead_lettered() -> list[dict[str, object]]:
            got = await reader.all("feedeater.dlq.demo.notes")
            return [m for m in got if m["_headers"]["Feedeater-Event-Id"] == poison]

        dead = await until(dead_lettered, timeout=60, what="the poison event dead-lettered")
        assert len(dead) == 1 and dead[0]["poison"] is True
        assert "RuntimeError: cannot digest this" in dead[0]["_headers"][ERROR_HEADER]
        assert calls == {
            good: 1,
            poison: 2,
        }  # never called for the recorded one; poison tried max_deliver times
        written = await host.require_pool().fetch("SELECT event_id FROM demo_notes")
        assert [r["event_id"] for r in written] == [good]  # the failed deliveries rolled back

        async def lag_reported() -> bool:
            return unit.pending == 0

        await until(lag_reported, what="lag reported as 0")
        assert (
            'feedeater_consumer_pending{consumer="demo.notes"} 0.0' in generate_latest().decode()
        )  # /metrics
        info = await host.js.consumer_info("feedeater_bus", "demo_notes")
        assert info.num_pending == 0 and info.num_ack_pending == 0  # everything acked
        assert not task.done(), task  # idle fetches time out quietly; the loop never died
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_batch_subscription_gets_a_delivery_at_once_and_a_bad_event_alone(host: Host) -> None:
    """A batch handler gets the fetched events in one call, in stream order, without the ones already
    processed; when it raises, the events are handed to it one at a time, so the good ones are stored
    once and only the bad one is retried and dead-lettered."""
    calls: list[list[str]] = []

    async def handler(ctx: ModuleContext, conn: asyncpg.Connection, events: list[ReceivedEvent]) -> None:
        calls.append([e.event_id for e in events])
        for event in events:
            if event.payload.get("poison"):
                raise RuntimeError("cannot digest this")
            await conn.execute("INSERT INTO demo_notes (event_id) VALUES ($1)", event.event_id)

    sub = Subscription("notes", "feedeater.demo.messageCreated", handler, max_deliver=2, batch=True)
    demo(host, sub)
    ctx = await host.context("demo")
    pool = host.require_pool()
    await pool.execute("CREATE TABLE demo_notes (event_id text NOT NULL)")
    first = await publish(host, *({"n": n} for n in range(5)))
    await pool.execute(  # processed by a host that died before acking
        "INSERT INTO host.processed_events (consumer, event_id) VALUES ('demo.notes', $1)", first[2]
    )
    assert host.js is not None
    js = host.js

    def start() -> asyncio.Task[None]:  # started after publishing, so one fetch finds every event
        return asyncio.create_task(Consumer(ctx, sub, js, Unit("demo", "notes", "subscription")).run())

    async def notes() -> list[str]:
        return [r["event_id"] for r in await pool.fetch("SELECT event_id FROM demo_notes ORDER BY 1")]

    task = start()
    try:
        want = sorted(first[:2] + first[3:])
        await until(lambda: notes_are(notes, want), what="the first delivery stored")
        assert calls == [first[:2] + first[3:]]  # one call, stream order, the recorded one left out
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

        calls.clear()
        second = await publish(host, {"n": 5}, {"poison": True}, {"n": 6})
        task = start()
        reader = BusReader(host.js, stream=DLQ_STREAM)

        async def dead_lettered() -> list[str]:  # the stream is shared with other tests' dead letters
            got = await reader.all("feedeater.dlq.demo.notes")
            return [i for m in got if (i := m["_headers"]["Feedeater-Event-Id"]) in first + second]

        assert await until(dead_lettered, timeout=60, what="the poison event dead-lettered") == [second[1]]
        stored = sorted([*want, second[0], second[2]])
        assert await notes() == stored  # each once, the failed tries rolled back
        assert calls[0] == second  # the delivery at once, then each event alone
        assert sorted(map(tuple, calls[1:4])) == sorted((e,) for e in second)
        assert all(c == [second[1]] for c in calls[4:])  # only the poison event is retried
        info = await host.js.consumer_info("feedeater_bus", "demo_notes")
        assert info.num_ack_pending == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def notes_are(read: Callable[[], Awaitable[list[str]]], want: list[str]) -> bool:
    return await read() == want


def test_restart_delay_doubles_caps_and_resets_after_a_stable_run() -> None:
    failures, delays = 0, []
    for _ in range(8):
        failures = failures_after(failures, ran_s=0.1)
        delays.append(RESTART.delay(failures))
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]
    assert RESTART.delay(failures_after(8, ran_s=120)) == 1


async def test_a_crashing_service_is_restarted_and_its_state_recorded(host: Host) -> None:
    runs = 0
    running = asyncio.Event()

    async def flaky(_ctx: ModuleContext) -> None:
        nonlocal runs
        runs += 1
        if runs <= 2:
            raise ConnectionError(f"gateway refused (attempt {runs})")
        running.set()
        await asyncio.Event().wait()

    service = Service("gateway", flaky)
    ctx = await host.context("rss")
    supervisor = Supervisor(host.require_pool(), "test-host")
    unit = supervisor.add(Unit("demo", service.name, "service"))
    supervisor.start(unit, lambda: service.run(ctx))
    try:
        await asyncio.wait_for(running.wait(), 30)
        assert unit.state == "running" and unit.restarts == 2
        assert unit.last_error == "ConnectionError: gateway refused (attempt 2)"
        row = await host.require_pool().fetchrow("SELECT * FROM host.service_state WHERE name = 'gateway'")
        assert row["state"] == "running" and row["restarts"] == 2 and "attempt 2" in row["last_error"]
    finally:
        await supervisor.stop()
    row = await host.require_pool().fetchrow("SELECT state FROM host.service_state WHERE name = 'gateway'")
    assert row["state"] == "stopped"


async def test_a_stop_ends_even_when_units_lose_or_convert_their_cancellation(host: Host) -> None:
    """`feedeater run` hung at shutdown (seen under load): a subscription's cancel was consumed inside
    nats-py (a lost cancel in Python 3.11's wait_for, a CancelledError turned into ConnectionClosedError),
    so the supervisor took it for a failure, restarted the unit after its backoff and waited for it forever.
    A stopping supervisor restarts nothing and cancels again until each unit has ended."""
    running = {"swallows": asyncio.Event(), "converts": asyncio.Event()}

    async def swallows() -> None:
        running["swallows"].set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(3600)  # the cancel is lost here
        await asyncio.sleep(3600)  # and the unit carries on

    async def converts() -> None:
        running["converts"].set()
        try:
            await asyncio.sleep(3600)
        finally:
            raise ConnectionError("connection closed")  # cleanup turns the cancel into an error

    supervisor = Supervisor(host.require_pool(), "test-host")
    units = [supervisor.add(Unit("demo", name, "subscription")) for name in running]
    for unit, run in zip(units, (swallows, converts), strict=True):
        supervisor.start(unit, run)
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in running.values())), timeout=60)
    await asyncio.wait_for(supervisor.stop(), timeout=120)
    assert [(u.state, u.restarts) for u in units] == [("stopped", 0), ("stopped", 0)]


async def test_settings_restart_a_service_and_wake_an_idle_one(host: Host) -> None:
    """A service with nothing to do as configured raises Idle: shown as idle (not running, not failed),
    started again when its module's settings change; a running one restarts at once (issue #20)."""
    ctx = await host.context("rss")
    starts: list[str] = []

    async def gateway(_ctx: ModuleContext) -> None:
        starts.append("gateway")
        if starts.count("gateway") == 1:  # its own first start (the worker may have started before it)
            raise Idle("no token set")
        await asyncio.Event().wait()

    async def worker(_ctx: ModuleContext) -> None:
        starts.append("worker")
        await asyncio.Event().wait()

    supervisor = Supervisor(host.require_pool(), "test-host")
    idle = supervisor.add(Unit("demo", "gateway", "service"))
    busy = supervisor.add(Unit("demo", "worker", "service"))
    supervisor.start(idle, lambda: gateway(ctx))
    supervisor.start(busy, lambda: worker(ctx))
    try:
        await until(lambda: _state(idle, "idle: no token set"), what="the idle state")
        assert idle.restarts == 0 and idle.last_error is None
        row = await host.require_pool().fetchrow(
            "SELECT state FROM host.service_state WHERE name = 'gateway'"
        )
        assert row["state"] == "idle: no token set"
        assert sorted(supervisor.restart_services("demo")) == ["demo.gateway", "demo.worker"]
        await until(lambda: _state(idle, "running"), what="the woken service running")
        await until(lambda: _starts(starts, 4), what="both started again")
        assert sorted(starts) == ["gateway", "gateway", "worker", "worker"]
        assert busy.state == "running" and busy.restarts == 0  # a restart for settings is no failure
    finally:
        await supervisor.stop()


async def _state(unit: Unit, state: str) -> bool:
    return unit.state == state


async def _starts(starts: list[str], n: int) -> bool:
    return len(starts) >= n


async def test_a_consumer_behind_shows_its_lag(host: Host) -> None:
    """The lag is read before each fetch: while the first batch is being handled it still counts every
    event that had not been delivered, so a consumer that is behind is visible, not just one at 0."""
    release, handling = asyncio.Event(), asyncio.Event()

    async def slow(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
        handling.set()
        await release.wait()

    sub = Subscription("slow", "feedeater.demo.messageCreated", slow)
    demo(host, sub)
    ctx = await host.context("demo")
    await publish(host, {"n": 1}, {"n": 2}, {"n": 3})
    assert host.js is not None
    unit = Unit("demo", "slow", "subscription")
    task = asyncio.create_task(Consumer(ctx, sub, host.js, unit).run())
    try:
        await asyncio.wait_for(handling.wait(), 60)
        assert unit.pending == 3
        assert 'feedeater_consumer_pending{consumer="demo.slow"} 3.0' in generate_latest().decode()
    finally:
        release.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_stop_ends_even_when_job_runs_hold_connections(host: Host) -> None:
    """Runs in flight at shutdown are cancelled and awaited, so a polite one records its cancellation
    before the pool closes; one that ignores the cancellation and keeps its connection cannot keep the
    stop from ending (closing the pool used to wait for it forever: "Pool.close() is taking over 60 s")."""
    running = {"polite": asyncio.Event(), "stubborn": asyncio.Event()}

    def holding(name: str, *, stubborn: bool) -> Job:
        async def handler(ctx: ModuleContext) -> dict[str, object]:
            async with ctx.pool.acquire() as conn:
                await conn.execute("SELECT 1")
                running[name].set()
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    if not stubborn:
                        raise
                    await asyncio.sleep(3600)  # ignores the stop, still holding its connection
            return {}

        return Job(name, handler, "1s")

    jobs = (holding("polite", stubborn=False), holding("stubborn", stubborn=True))
    host.specs["demo"] = ModuleSpec(Manifest("demo", "1", "", jobs=jobs))
    host.close_timeout_s = 2.0
    await host.start_scheduler()
    await asyncio.wait_for(asyncio.gather(*(e.wait() for e in running.values())), timeout=60)
    pool = host.require_pool()
    recorder = await asyncpg.connect(host.config.database_url)
    try:
        await asyncio.wait_for(host.close(), timeout=60)
        runs = await recorder.fetch("SELECT job, status, error FROM host.job_runs WHERE module = 'demo'")
    finally:
        await recorder.close()
    assert pool.is_closing()
    polite = [r for r in runs if r["job"] == "polite"]
    assert [(r["status"], r["error"]) for r in polite] == [
        ("failed", "cancelled: the host stopped during the run")
    ]
