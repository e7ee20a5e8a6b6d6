"""A test module that keeps ingesting: a service emits events in a steady stream (each tick one
transaction: a row in ticker_emitted and its events through the outbox), and two subscriptions record
what they are handed: one on messageCreated (the shared stream), one on revisions (feedeater's own),
one on every ticker subject (both). Tests register it with `install(host)` and read the tables to count in and out."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import asyncpg

from host.events import Event, context_updated, iso_z, message_created, message_updated, stable_uuid
from host.module import Manifest, ModuleContext, ModuleSpec, ReceivedEvent, Service, Subscription
from host.runtime import Host

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
        """CREATE TABLE IF NOT EXISTS ticker_emitted (n bigint PRIMARY KEY, at timestamptz DEFAULT clock_timestamp());
           CREATE TABLE IF NOT EXISTS ticker_seen (
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
    return int(await ctx.pool.fetchval("SELECT count(*) FROM ticker_emitted"))


async def tick(ctx: ModuleContext) -> None:
    interval = float(ctx.state.get("interval_s", 0.02))
    n = int(await ctx.pool.fetchval("SELECT coalesce(max(n), -1) + 1 FROM ticker_emitted"))
    while not halt(ctx).is_set():
        async with ctx.pool.acquire() as conn, conn.transaction():
            await conn.execute("INSERT INTO ticker_emitted (n) VALUES ($1)", n)
            await ctx.emit(conn, *events(n))
        n += 1
        await asyncio.sleep(interval)
    ctx.once("halted", asyncio.Event).set()
    await asyncio.Event().wait()


def recorder(consumer: str):  # type: ignore[no-untyped-def]
    async def handle(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
        await conn.execute(
            "INSERT INTO ticker_seen (consumer, event_id, subject) VALUES ($1, $2, $3)",
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
