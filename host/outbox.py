"""Transactional outbox: events are rows written with the data; a relay moves them to JetStream.

Nothing is published for a rolled-back transaction (the row never commits). While NATS is down rows
wait and leave in id order when it returns. A crash between publish and mark-published re-sends the
same `Nats-Msg-Id`, which JetStream's duplicate window drops, so consumers see each event once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg
from prometheus_client import Counter, Gauge

from host import tracing
from host.backoff import Backoff
from host.events import Event, subject
from host.module import Emit

if TYPE_CHECKING:  # nats imports aiohttp when it is installed (~0.5 s): commands without the bus skip it
    from nats.js import JetStreamContext

log = logging.getLogger("feedeater.outbox")

_RELAY_LOCK = 0x6F75_7462  # one relay publishes at a time across all hosts, preserving order
NOTIFY_CHANNEL = "feedeater_outbox"

PUBLISHED = Counter("feedeater_outbox_published_total", "Events published from the outbox", ["subject"])
PUBLISH_ERRORS = Counter("feedeater_outbox_publish_errors_total", "Failed publish attempts")
PENDING = Gauge("feedeater_outbox_pending", "Events waiting in the outbox")
LAG = Gauge("feedeater_outbox_lag_seconds", "Age of the oldest unpublished event")


def emitter(module: str, events: Collection[str]) -> Emit:
    """`ctx.emit` of one module: adds its events inside the caller's transaction, refusing any event the
    manifest does not declare (another module's subject, or an undeclared name)."""
    allowed = {subject(module, name) for name in events}

    async def emit(conn: asyncpg.Connection, *batch: Event) -> int:
        if not conn.is_in_transaction():  # autocommit would publish events whose data may never commit
            raise ValueError(
                f"module {module} emitted outside a transaction: call ctx.emit(conn, ...) inside the "
                "`async with conn.transaction():` that writes the data the events are about"
            )
        for event in batch:
            if event.subject not in allowed:
                declared = ", ".join(sorted(events)) or "none"
                raise ValueError(
                    f"module {module} may not emit {event.subject}: its Manifest.events declares {declared}"
                )
        with tracing.span("outbox.emit", {"messaging.batch.message_count": len(batch)}):
            return await enqueue_many(conn, batch)

    return emit


async def enqueue(conn: asyncpg.Connection, event: Event) -> bool:
    """Add one event inside the caller's transaction. Returns False if this event id is already queued."""
    return bool(await enqueue_many(conn, [event]))


async def enqueue_many(conn: asyncpg.Connection, events: Sequence[Event]) -> int:
    """Add events (in order) inside the caller's transaction; returns how many were new.

    A MessageCreated with a contextRef also links the message to its context, so a context can list
    its messages without replaying the bus.
    """
    if not events:
        return 0
    inserted = await conn.fetch(
        """INSERT INTO host.outbox (event_id, subject, payload)
           SELECT * FROM unnest($1::uuid[], $2::text[], $3::bytea[])
           ON CONFLICT (event_id) DO NOTHING RETURNING event_id""",
        [e.event_id for e in events],
        [e.subject for e in events],
        [e.encode() for e in events],
    )
    new_ids = {r["event_id"] for r in inserted}
    links = [
        (e.event_id, ref["ownerModule"], ref["sourceKey"], e.payload["message"]["createdAt"])
        for e in events
        if e.event_id in new_ids
        and e.payload.get("type") == "MessageCreated"
        and (ref := (e.payload.get("message") or {}).get("contextRef"))
    ]
    if links:
        await conn.execute(
            """INSERT INTO host.context_messages (message_id, owner_module, source_key, created_at)
               SELECT m, o, k, t::timestamptz FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS x(m, o, k, t)
               ON CONFLICT (message_id) DO NOTHING""",
            *map(list, zip(*links, strict=True)),
        )
    if new_ids:
        await conn.execute(f"NOTIFY {NOTIFY_CHANNEL}")
    return len(new_ids)


@dataclass(frozen=True, slots=True)
class OutboxStatus:
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float


async def status(conn: asyncpg.Connection) -> OutboxStatus:
    """Pending count and lag; reads only the partial index of unpublished rows."""
    row = await conn.fetchrow(
        """SELECT count(*) AS pending, min(created_at) AS oldest,
                  extract(epoch FROM now() - min(created_at)) AS lag
           FROM host.outbox WHERE published_at IS NULL"""
    )
    assert row is not None
    return OutboxStatus(row["pending"], row["oldest"], float(row["lag"] or 0.0))


async def prune(conn: asyncpg.Connection, *, keep_days: int = 7) -> int:
    """Delete published rows older than `keep_days` (the stream keeps them for consumers)."""
    result: str = await conn.execute(
        "DELETE FROM host.outbox WHERE published_at IS NOT NULL AND published_at < now() - make_interval(days => $1)",
        keep_days,
    )
    return int(result.split()[-1])


class Relay:
    """Publishes pending outbox rows to JetStream, in id order, waiting for each ack before marking."""

    def __init__(
        self, pool: asyncpg.Pool, js: JetStreamContext, *, batch: int = 500, idle_s: float = 1.0
    ) -> None:
        self.pool = pool
        self.js = js
        self.batch = batch
        self.idle_s = idle_s
        self._wake = asyncio.Event()
        self._last_error = ""  # why the last batch stopped short; logged once by run()

    async def drain_once(self) -> int:
        """Publish one batch; returns how many were published (0 when idle, locked elsewhere or NATS down)."""
        async with self.pool.acquire() as conn, conn.transaction():
            if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _RELAY_LOCK):
                return 0
            rows = await conn.fetch(
                "SELECT id, event_id, subject, payload FROM host.outbox WHERE published_at IS NULL ORDER BY id LIMIT $1",
                self.batch,
            )
            if not rows:
                return 0
            attributes: tracing.Attributes = {
                "messaging.system": "nats",
                "messaging.batch.message_count": len(rows),
            }
            with tracing.span("outbox.publish", attributes, root=True) as current:
                done = await self._publish(rows)
                current.set_attribute("feedeater.published", done)
            if done:
                await conn.execute(
                    "UPDATE host.outbox SET published_at = now(), attempts = attempts + 1 WHERE id = ANY($1::bigint[])",
                    [r["id"] for r in rows[:done]],
                )
            if done < len(rows):
                await conn.execute(
                    "UPDATE host.outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1",
                    rows[done]["id"],
                    self._last_error,
                )
            return done

    async def _publish(self, rows: list[asyncpg.Record]) -> int:
        """Publish in order; returns the length of the acknowledged prefix."""
        futures: list[asyncio.Future[Any]] = []
        try:
            for r in rows:
                fut = await self.js.publish_async(
                    r["subject"],
                    bytes(r["payload"]),
                    headers={"Nats-Msg-Id": str(r["event_id"])},
                    wait_stall=5,
                )
                futures.append(fut)
        except Exception as exc:
            self._last_error = f"publish: {exc or type(exc).__name__}"
        acked = 0
        for fut, r in zip(futures, rows, strict=False):
            try:
                await asyncio.wait_for(fut, timeout=5)
            except Exception as exc:
                self._last_error = f"ack: {exc or type(exc).__name__}"
                PUBLISH_ERRORS.inc()
                break
            PUBLISHED.labels(r["subject"]).inc()
            acked += 1
        for fut in futures[acked:]:
            fut.cancel()
        return acked

    async def drain_all(self) -> int:
        """Publish everything pending now (one-shot commands and tests); returns how many."""
        total = 0
        while published := await self.drain_once():
            total += published
        return total

    def wake(self) -> None:
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Drain continuously; sleep until NOTIFY or `idle_s`; back off while NATS is unreachable."""
        listener = await self.pool.acquire()

        def on_notify(*_: object) -> None:
            self._wake.set()

        gauges_at = 0.0
        try:
            await listener.add_listener(NOTIFY_CHANNEL, on_notify)
            backoff, failures = Backoff(self.idle_s, 30.0), 0
            while not stop.is_set():
                self._wake.clear()
                started = time.monotonic()
                try:
                    published = await self.drain_once()
                except (asyncpg.PostgresError, OSError) as exc:
                    log.warning("outbox relay: database error: %s", exc)
                    published = 0
                if time.monotonic() - gauges_at > 5:
                    gauges_at = time.monotonic()
                    await self._refresh_gauges(listener)
                if published:
                    failures = 0
                    continue
                if self._last_error:
                    failures += 1
                    delay = backoff.delay(failures)
                    log.warning("outbox relay: %s; retrying in %.1fs", self._last_error, delay)
                    self._last_error = ""
                    await _sleep_or(stop, delay)
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._wake.wait(), timeout=max(0.0, self.idle_s - (time.monotonic() - started))
                    )
        finally:
            with contextlib.suppress(Exception):
                await listener.remove_listener(NOTIFY_CHANNEL, on_notify)
            await self.pool.release(listener)

    async def _refresh_gauges(self, conn: asyncpg.Connection) -> None:
        with contextlib.suppress(asyncpg.PostgresError, OSError):
            st = await status(conn)
            PENDING.set(st.pending)
            LAG.set(st.lag_seconds)


async def _sleep_or(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
