"""Transactional outbox: events are rows written with the data; a relay moves them to JetStream.

Nothing is published for a rolled-back transaction (the row never commits). While NATS is down rows
wait and leave in id order when it returns; a subject JetStream will not take waits alone, in order,
while the others go on. A crash between publish and mark-published re-sends the same `Nats-Msg-Id`,
which JetStream's duplicate window drops, so consumers see each event once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import asyncpg
from prometheus_client import Counter, Gauge

from host import streams, tracing
from host.backoff import Backoff
from host.events import Event, iso_z, subject
from host.module import Emit

if TYPE_CHECKING:  # nats imports aiohttp when it is installed (~0.5 s): commands without the bus skip it
    from nats.js import JetStreamContext

log = logging.getLogger("feedeater.outbox")

_RELAY_LOCK = 0x6F75_7462  # one relay publishes at a time across all hosts, preserving order
NOTIFY_CHANNEL = "feedeater_outbox"

PUBLISHED = Counter("feedeater_outbox_published_total", "Events published from the outbox", ["subject"])
PUBLISH_ERRORS = Counter("feedeater_outbox_publish_errors_total", "Failed publish attempts")
PENDING = Gauge("feedeater_outbox_pending", "Events waiting in the outbox")
STALLED = Gauge(
    "feedeater_outbox_stalled",
    "Events waiting behind a subject's failed publish (no stream, another stream, stream full, no answer)",
    ["subject"],
)
REFUSED = Counter(
    "feedeater_outbox_refused_total",
    "Publishes JetStream refused for good reasons of its own (no stream, another stream, stream full)",
    ["subject"],
)
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
    links = [
        (
            e.event_id,
            ref["ownerModule"],
            ref["sourceKey"],
            datetime.fromisoformat(e.payload["message"]["createdAt"]),
        )
        for e in events
        if e.payload.get("type") == "MessageCreated"
        and (ref := (e.payload.get("message") or {}).get("contextRef"))
    ]
    link_columns = [list(column) for column in zip(*links, strict=True)] if links else [[], [], [], []]
    # A function running as the host (migrations/host/0033): module roles may not write host.outbox, and
    # it checks the subjects are the calling module's own. It links only the events that were new.
    fresh = await conn.fetchval(
        "SELECT host.enqueue_events($1, $2, $3, $4, $5, $6, $7)",
        [e.event_id for e in events],
        [e.subject for e in events],
        [e.encode() for e in events],
        *link_columns,
    )
    return len(fresh)


@dataclass(frozen=True, slots=True)
class Stalled:
    """A subject whose oldest waiting event has failed to publish: the events behind it wait too."""

    subject: str
    pending: int
    since: datetime
    attempts: int
    error: str

    def describe(self) -> str:
        return (
            f"{self.pending} event{'s' * (self.pending != 1)} on {self.subject} waiting since "
            f"{iso_z(self.since)} ({self.attempts} attempts): {self.error}"
        )


@dataclass(frozen=True, slots=True)
class OutboxStatus:
    pending: int
    oldest_pending_at: datetime | None
    lag_seconds: float
    stalled: tuple[Stalled, ...] = ()


async def status(conn: asyncpg.Connection) -> OutboxStatus:
    """Pending count and lag, and the subjects whose oldest event failed to publish (with why); reads
    only the partial index of unpublished rows and each subject's oldest row."""
    rows = await conn.fetch(
        """WITH p AS (SELECT subject, count(*) AS n, min(id) AS head, min(created_at) AS since
                      FROM host.outbox WHERE published_at IS NULL GROUP BY subject)
           SELECT p.subject, p.n, p.since, o.attempts, o.last_error,
                  extract(epoch FROM now() - p.since) AS lag
           FROM p JOIN host.outbox o ON o.id = p.head ORDER BY p.head"""
    )
    stalled = tuple(
        Stalled(r["subject"], r["n"], r["since"], r["attempts"], r["last_error"])
        for r in rows
        if r["last_error"] is not None
    )
    return OutboxStatus(
        sum(r["n"] for r in rows),
        min((r["since"] for r in rows), default=None),
        max((float(r["lag"]) for r in rows), default=0.0),
        stalled,
    )


async def prune(conn: asyncpg.Connection, *, keep_days: float = 0.1) -> int:
    """Delete published rows older than `keep_days` (the stream keeps them for consumers). At a million
    feeds the outbox takes ~0.2 TB a day of payloads: kept a week it was the largest table (issue 25)."""
    result: str = await conn.execute(
        "DELETE FROM host.outbox WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => $1)",
        keep_days * 86400,
    )
    return int(result.split()[-1])


ACK_TIMEOUT_S = 5.0  # for a whole batch's answers; JetStream answers in milliseconds when it can
PROBE_TIMEOUT_S = 1.0  # for a held subject's probe (one event)
HOLD = Backoff(0.5, 30.0)  # a subject JetStream refused waits 0.5 s, 1 s, 2 s … 30 s before the next probe
_NOT_SENT = "not sent"


@dataclass(frozen=True, slots=True)
class Hold:
    """A subject the relay leaves out until `retry_at` (monotonic seconds): its oldest event failed."""

    reason: str
    failures: int
    retry_at: float


def held_after(
    holds: Mapping[str, Hold],
    failed: Mapping[str, str],
    published: Collection[str],
    now: float,
    *,
    electing: Collection[str] = (),
) -> dict[str, Hold]:
    """The holds after a batch (pure): a subject JetStream refused waits one backoff step longer than
    last time; one that looks like a stream electing its leader (`electing`: no answer, no responders)
    is probed again after the first step, so it publishes soon after the election; one that published
    and did not fail is released; the others keep their hold."""
    out = {s: h for s, h in holds.items() if s not in published or s in failed}
    for name, reason in failed.items():
        failures = holds[name].failures + 1 if name in holds else 1
        delay = HOLD.delay(1 if name in electing else failures)
        out[name] = Hold(reason, failures, now + delay)
    return out


def first_failures(subjects: Sequence[str], outcomes: Sequence[object]) -> dict[str, int]:
    """Each subject's first failed row in a batch, by index (pure): `outcomes` holds None for stored,
    an exception for failed, `_NOT_SENT` for rows never sent (those say nothing about their subject)."""
    out: dict[str, int] = {}
    for i, (name, outcome) in enumerate(zip(subjects, outcomes, strict=True)):
        if isinstance(outcome, BaseException) and name not in out:
            out[name] = i
    return out


def _maybe_electing(outcome: object) -> bool:
    """No answer, or "no responders": what a stream electing a new leader looks like (pure)."""
    from host import bus

    return isinstance(outcome, TimeoutError) or (
        isinstance(outcome, bus.Refused) and outcome.reason == bus.NO_STREAM
    )


class Relay:
    """Publishes pending outbox rows to JetStream in id order and marks what JetStream stored.

    Order is kept per subject (hence per feed), not globally: a subject JetStream does not take (no
    stream, another stream, a full stream, no answer) is held back with its own backoff while every
    other subject keeps publishing. A subject without a stream is repaired (`repair` re-creates the
    streams) and retried; what cannot be repaired stays in the outbox, visible in `status`.
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        js: JetStreamContext,
        *,
        batch: int = 500,
        idle_s: float = 1.0,
        repair: Callable[[], Awaitable[Sequence[str]]] | None = None,
    ) -> None:
        from host import bus  # nats: only processes that publish build a relay

        self.pool = pool
        self.publisher = bus.Publisher(js)
        self.batch = batch
        self.idle_s = idle_s
        self.repair = repair
        self.holds: dict[str, Hold] = {}
        self._repairing: asyncio.Task[None] | None = None
        self._repaired = ""  # how the last repair went, for the reasons
        self._repair_failures = 0
        self._repair_at = 0.0  # monotonic: no repair before
        self._wake = asyncio.Event()
        self._last_error = ""  # why the connection failed mid-batch; logged once by run()

    async def drain_once(self) -> int:
        """Publish one batch; returns how many were stored (0 when idle, locked elsewhere or NATS down)."""
        async with self.pool.acquire() as conn, conn.transaction():
            if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _RELAY_LOCK):
                return 0
            now = time.monotonic()
            due = [s for s, hold in self.holds.items() if hold.retry_at <= now]
            rows = await conn.fetch(
                """SELECT id, event_id, subject, payload FROM host.outbox
                   WHERE published_at IS NULL AND subject <> ALL($2::text[]) ORDER BY id LIMIT $1""",
                self.batch,
                list(self.holds),
            )
            if due:  # a held subject is retried with its oldest event alone: a probe
                probes = await conn.fetch(
                    """SELECT o.id, o.event_id, o.subject, o.payload FROM unnest($1::text[]) AS s(subject)
                       CROSS JOIN LATERAL (SELECT * FROM host.outbox WHERE published_at IS NULL
                                           AND subject = s.subject ORDER BY id LIMIT 1) o""",
                    due,
                )
                rows = sorted([*rows, *probes], key=lambda r: r["id"])
                for gone in set(due) - {r["subject"] for r in probes}:  # published meanwhile (another host)
                    del self.holds[gone]
            if not rows:
                return 0
            attributes: tracing.Attributes = {
                "messaging.system": "nats",
                "messaging.batch.message_count": len(rows),
            }
            with tracing.span("outbox.publish", attributes, root=True) as current:
                outcomes = await self._publish(rows, probing=set(due))
                stored = [r["id"] for r, outcome in zip(rows, outcomes, strict=True) if outcome is None]
                current.set_attribute("feedeater.published", len(stored))
            subjects = [r["subject"] for r in rows]
            failed = first_failures(subjects, outcomes)
            reasons = self._reasons({s: outcomes[i] for s, i in failed.items()})
            if stored:
                await conn.execute(
                    "UPDATE host.outbox SET published_at = now(), attempts = attempts + 1 WHERE id = ANY($1::bigint[])",
                    stored,
                )
            failures = [(rows[i]["id"], reasons[s]) for s, i in failed.items()]
            if _NOT_SENT in outcomes and self._last_error:  # the first row the broken connection kept back
                failures.append((rows[outcomes.index(_NOT_SENT)]["id"], self._last_error))
            if failures:
                await conn.executemany(
                    "UPDATE host.outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1", failures
                )
            published = {s for s, outcome in zip(subjects, outcomes, strict=True) if outcome is None}
            electing = {s for s, i in failed.items() if _maybe_electing(outcomes[i])}
            self._hold(reasons, published, electing, time.monotonic())
            return len(stored)

    async def _publish(self, rows: list[asyncpg.Record], *, probing: Collection[str] = ()) -> list[object]:
        """Send every row in order, then collect the answers: None (stored), the exception (refused, no
        answer in time), or `_NOT_SENT` for rows after the connection failed. Probes of held subjects
        get a shorter wait, so a stream still electing its leader does not hold up the others long."""
        from host import bus

        futures: list[asyncio.Future[int]] = []
        for r in rows:
            try:
                futures.append(
                    await self.publisher.publish(
                        r["subject"],
                        bytes(r["payload"]),
                        msg_id=str(r["event_id"]),
                        stream=streams.stream_for(r["subject"]),
                    )
                )
            except Exception as broken:  # not connected: the rest waits for the next batch
                self._last_error = f"publish: {broken or type(broken).__name__}"
                break
        probes = [f for f, r in zip(futures, rows, strict=False) if r["subject"] in probing]
        regular = [f for f, r in zip(futures, rows, strict=False) if r["subject"] not in probing]
        waits = ((regular, ACK_TIMEOUT_S), (probes, PROBE_TIMEOUT_S))
        for waiting, timeout in waits:  # the probes had the regular wait to answer too
            if waiting:
                _done, late = await asyncio.wait(waiting, timeout=timeout)
                for future in late:
                    future.cancel()
        outcomes: list[object] = []
        for future in futures:
            if future.cancelled():
                outcomes.append(TimeoutError(f"no answer from JetStream within {ACK_TIMEOUT_S:g} s"))
            else:
                outcomes.append(future.exception())
        for r, outcome in zip(rows, outcomes, strict=False):
            if outcome is None:
                PUBLISHED.labels(r["subject"]).inc()
            else:
                PUBLISH_ERRORS.inc()
                if isinstance(outcome, bus.Refused) and outcome.stuck:
                    REFUSED.labels(r["subject"]).inc()
        return outcomes + [_NOT_SENT] * (len(rows) - len(outcomes))

    def _reasons(self, failures: Mapping[str, object]) -> dict[str, str]:
        """Why each failed subject failed, one line; a missing or wrong stream starts a repair in the
        background (a leader election answers "no responders" too, and then the JetStream API itself
        waits: the relay must not) and says how the last one went."""
        from host import bus

        reasons = {s: str(exc) or type(exc).__name__ for s, exc in failures.items()}
        misrouted = [s for s, exc in failures.items() if isinstance(exc, bus.Refused) and exc.misrouted]
        if misrouted and self.repair is not None:
            self._start_repair()
            for s in misrouted:
                reasons[s] += f"; {self._repaired or 'repairing the streams'}"
        return {s: " ".join(r.split())[:1000] for s, r in reasons.items()}

    def _start_repair(self) -> None:
        """One repair at a time, at most once per backoff step while they keep failing."""
        if (self._repairing is not None and not self._repairing.done()) or time.monotonic() < self._repair_at:
            return
        self._repairing = asyncio.create_task(self._run_repair(), name="outbox-repair")

    async def _run_repair(self) -> None:
        assert self.repair is not None
        try:
            changes = await self.repair()
        except Exception as exc:
            self._repaired = f"repair failed: {exc or type(exc).__name__}"
            self._repair_failures += 1
        else:
            self._repaired = f"repaired: {'; '.join(changes)}" if changes else "the streams are in place"
            self._repair_failures = 0
        self._repair_at = time.monotonic() + HOLD.delay(self._repair_failures)
        self._wake.set()  # probe again now

    def _hold(
        self, reasons: Mapping[str, str], published: Collection[str], electing: Collection[str], now: float
    ) -> None:
        after = held_after(self.holds, reasons, published, now, electing=electing)
        for name, hold in after.items():
            before = self.holds.get(name)
            if before is None or before.reason != hold.reason:
                log.warning(
                    "outbox relay: %s not published (%s); its events wait, the other subjects go on; "
                    "retrying in %.1fs",
                    name,
                    hold.reason,
                    hold.retry_at - now,
                )
        for name in self.holds.keys() - after.keys():
            log.info("outbox relay: %s is published again", name)
        self.holds = after

    async def drain_all(self) -> int:
        """Publish everything pending now (one-shot commands and tests); returns how many. Events of a
        subject that cannot be published stay in the outbox (a running host publishes them later)."""
        total = 0
        while published := await self.drain_once():
            total += published
        return total

    def wake(self) -> None:
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Drain continuously; sleep until NOTIFY, `idle_s` or a held subject's retry; back off while
        NATS is unreachable."""
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
                if self._last_error and not published:
                    failures += 1
                    delay = backoff.delay(failures)
                    log.warning("outbox relay: %s; retrying in %.1fs", self._last_error, delay)
                    self._last_error = ""
                    await _sleep_or(stop, delay)
                    continue
                self._last_error = ""
                if published:
                    failures = 0
                    continue
                wait = max(0.0, self.idle_s - (time.monotonic() - started))
                if self.holds:  # wake for the next retry, but never spin
                    retry = min(hold.retry_at for hold in self.holds.values()) - time.monotonic()
                    wait = min(wait, max(retry, self.idle_s / 10))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=wait)
        finally:
            if self._repairing is not None:
                self._repairing.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._repairing
            with contextlib.suppress(Exception):
                await listener.remove_listener(NOTIFY_CHANNEL, on_notify)
            await self.pool.release(listener)

    async def _refresh_gauges(self, conn: asyncpg.Connection) -> None:
        with contextlib.suppress(asyncpg.PostgresError, OSError):
            st = await status(conn)
            PENDING.set(st.pending)
            LAG.set(st.lag_seconds)
            STALLED.clear()
            for stalled in st.stalled:
                STALLED.labels(stalled.subject).set(stalled.pending)


async def _sleep_or(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
