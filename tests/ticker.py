"""A test module that keeps ingesting: a service emits events in a steady stream (each tick one
transaction: a row in mod_ticker.emitted and its events through the outbox), and two subscriptions record
what they are handed: one on messageCreated (the shared stream), one on revisions (feedeater's own),
one on every ticker subject (both). Tests register it with `install(host)` and read the tables to count in and out."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime

import asyncpg
from nats.aio.client import Client

from host import outbox, streams
from host.events import Event, context_updated, iso_z, message_created, message_updated, stable_uuid
from host.module import Manifest, ModuleContext, ModuleSpec, ReceivedEvent, Service, Subscription
from host.runtime import Host
from host.testing import BusReader, until

NAME = "ticker"
FEEDS = 3


def events(n: int) -> list[Event]:
    """Tick n's events: a message of feed f<n % 3>, every 5th tick its context, every 7th a revision."""
    feed = f"f{n % FEEDS}"
    message = {
        "id": str(stable_uuid(NAME, str(n))),
        "createdAt": iso_z(datetime.now(UTC)),
        "source": {"module": NAME, "stream": feed},
        "Message": f"tick {n}",
        "From": "ticker",
        "isDirectMention": False,
        "isDigest": False,
        "isSystemMessage": False,
        "tags": {"n": n},
    }
    out = [message_created(NAME, message)]
    if n % 5 == 0:
        out.append(
            context_updated(
                NAME,
                source_key=f"feed:{feed}",
                summary_short=f"up to tick {n}",
                summary_long="",
                key_points=[],
                version=n,
                created_at=datetime.now(UTC),
            )
        )
    if n % 7 == 0:
        out.append(message_updated(NAME, {**message, "Message": f"tick {n}, revised"}, "r1"))
    return out


async def setup(ctx: ModuleContext) -> None:
    await ctx.pool.execute(
        """CREATE SCHEMA IF NOT EXISTS mod_ticker;  -- its own schema: a module role may not write public
           CREATE TABLE IF NOT EXISTS mod_ticker.emitted (n bigint PRIMARY KEY, at timestamptz DEFAULT clock_timestamp());
           CREATE TABLE IF NOT EXISTS mod_ticker.seen (
               consumer text NOT NULL, event_id text NOT NULL, subject text NOT NULL,
               at timestamptz DEFAULT clock_timestamp())"""
    )


def halt(ctx: ModuleContext) -> asyncio.Event:
    """Set it and the ticker stops emitting (the service keeps running idle)."""
    return ctx.once("halt", asyncio.Event)


async def stop(host: Host) -> int:
    """Stop emitting and wait for the tick in progress to commit; returns how many ticks were emitted."""
    ctx = host.contexts[NAME]
    halt(ctx).set()
    await ctx.once("halted", asyncio.Event).wait()
    return int(await ctx.pool.fetchval("SELECT count(*) FROM mod_ticker.emitted"))


async def tick(ctx: ModuleContext) -> None:
    interval = float(ctx.state.get("interval_s", 0.02))
    n = int(await ctx.pool.fetchval("SELECT coalesce(max(n), -1) + 1 FROM mod_ticker.emitted"))
    while not halt(ctx).is_set():
        async with ctx.pool.acquire() as conn, conn.transaction():
            await conn.execute("INSERT INTO mod_ticker.emitted (n) VALUES ($1)", n)
            await ctx.emit(conn, *events(n))
        n += 1
        await asyncio.sleep(interval)
    ctx.once("halted", asyncio.Event).set()
    await asyncio.Event().wait()


def recorder(consumer: str):  # type: ignore[no-untyped-def]
    async def handle(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
        await conn.execute(
            "INSERT INTO mod_ticker.seen (consumer, event_id, subject) VALUES ($1, $2, $3)",
            consumer,
            event.event_id,
            event.subject,
        )

    return handle


MODULE = ModuleSpec(
    Manifest(
        NAME,
        "1",
        "emits without pause; records what its subscriptions hear",
        services=(Service("tick", tick),),
        subscriptions=(
            Subscription("created", f"feedeater.{NAME}.messageCreated", recorder("created")),
            Subscription("everything", f"feedeater.{NAME}.>", recorder("everything")),
            Subscription("revisions", f"feedeater.{NAME}.messageUpdated", recorder("revisions")),
        ),
        events=("messageCreated", "messageUpdated", "contextUpdated"),
    ),
    setup=setup,
)


def install(host: Host) -> None:
    """Add the module to a host before it opens (as an installed plugin would be)."""
    host.specs[NAME] = MODULE


async def published(host: Host, subject: str = f"feedeater.{NAME}.messageCreated") -> int:
    return int(
        await host.require_pool().fetchval(
            "SELECT count(*) FROM host.outbox WHERE subject = $1 AND published_at IS NOT NULL", subject
        )
    )


async def drained(host: Host) -> bool:
    async with host.require_pool().acquire() as conn:
        return (await outbox.status(conn)).pending == 0


async def handled(host: Host, consumer: str = "everything") -> int:
    sql = "SELECT count(*) FROM mod_ticker.seen WHERE consumer = $1"
    return int(await host.require_pool().fetchval(sql, consumer))


SUBSCRIBED = {"created": ".messageCreated", "revisions": ".messageUpdated", "everything": ""}


async def assert_every_event_once(host: Host, nc: Client) -> dict[str, str]:
    """Once the ticker stopped and the outbox drained: every ticker event is in the stream the plan gives
    its subject, exactly once, and every subscription handled each of its events exactly once.
    Returns event id → subject."""
    pool = host.require_pool()
    rows = await pool.fetch(
        f"SELECT event_id::text, subject FROM host.outbox WHERE subject LIKE 'feedeater.{NAME}.%' ORDER BY id"
    )
    sent = {r["event_id"]: r["subject"] for r in rows}
    got = await BusReader(nc.jetstream()).all(f"feedeater.{NAME}.>", expect=len(sent), timeout=60)
    ids = Counter(m["_msg_id"] for m in got)
    assert [i for i, n in ids.items() if n > 1] == [], "an event reached the bus twice"
    assert set(ids) == set(sent), "the bus and the outbox disagree"
    assert [m for m in got if m["_stream"] != streams.stream_for(m["_subject"])] == [], "in the wrong stream"
    for subject in set(sent.values()):  # the relay keeps each subject's order (hence each feed's)
        written = [r["event_id"] for r in rows if r["subject"] == subject]
        assert [m["_msg_id"] for m in got if m["_subject"] == subject] == written, f"{subject} out of order"
    for consumer, suffix in SUBSCRIBED.items():
        expected = {i for i, s in sent.items() if s.endswith(suffix)}
        await until(
            lambda c=consumer, n=len(expected): _at_least(host, c, n),
            what=f"{consumer} caught up",
            timeout=120,
        )  # type: ignore[misc]
        seen = Counter(
            r["event_id"]
            for r in await pool.fetch("SELECT event_id FROM mod_ticker.seen WHERE consumer = $1", consumer)
        )
        assert [i for i, n in seen.items() if n > 1] == [], f"{consumer} handled an event twice"
        assert set(seen) == expected, f"{consumer} missed events or got others"
    return sent


async def _at_least(host: Host, consumer: str, count: int) -> bool:
    return await handled(host, consumer) >= count
