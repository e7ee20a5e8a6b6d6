"""Bus subscriptions: durable JetStream pull consumers that hand events to module handlers exactly once.

One durable consumer per (module, subscription) on each bus stream its subject may be in (host/streams.py:
messageCreated in the shared stream, the rest in feedeater's own), shared by every host running the
module, so each event is handled once across hosts. A handler runs inside a transaction that also
records `(consumer, event id)` in host.processed_events; the message is acked after the commit. A crash
between commit and ack redelivers an event whose id is already recorded: it is acked, not handled again.
A handler that raises is retried with a growing delay; at the `max_deliver`-th failed delivery the
message goes to `feedeater.dlq.<module>.<subscription>` (stream feedeater_dlq, reason in the
`Feedeater-Error` header) and is acked. An unreachable database is not the event's fault: those
deliveries are retried without ever dead-lettering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import cast

import asyncpg
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from prometheus_client import Counter, Gauge

from host import streams
from host.backoff import Backoff
from host.module import (
    BatchHandler,
    EventHandler,
    ModuleContext,
    ReceivedEvent,
    Subscription,
    interval_seconds,
)
from host.supervise import Unit

log = logging.getLogger("feedeater.consumers")

ERROR_HEADER = "Feedeater-Error"
LAG_EVERY_S = 5.0

HANDLED = Counter("feedeater_consumer_handled_total", "Events handled by subscriptions", ["consumer"])
SKIPPED = Counter(
    "feedeater_consumer_duplicates_total", "Redeliveries skipped as already processed", ["consumer"]
)
FAILED = Counter(
    "feedeater_consumer_failures_total", "Handler failures (retried or dead-lettered)", ["consumer"]
)
DEAD = Counter(
    "feedeater_consumer_dead_letters_total", "Events moved to the dead-letter subject", ["consumer"]
)
PENDING = Gauge("feedeater_consumer_pending", "Events not yet delivered to the consumer (lag)", ["consumer"])

# The database (not the event) is the problem: retry without counting towards the dead-letter limit.
_INFRASTRUCTURE = (
    OSError,
    asyncpg.PostgresConnectionError,  # SQLSTATE 08: connection failures
    asyncpg.exceptions.OperatorInterventionError,  # 57: admin shutdown, cannot connect now
    asyncpg.InterfaceError,  # the connection was closed under us
)


def durable_name(module: str, sub: Subscription) -> str:
    return f"{module}_{sub.name}"


def dlq_subject(module: str, sub: Subscription) -> str:
    return f"feedeater.dlq.{module}.{sub.name}"


def deliver_from(start: str, now: datetime) -> tuple[DeliverPolicy, datetime | None]:
    """A new consumer's deliver policy (and start time) for Subscription.start (pure)."""
    if start == "new":
        return DeliverPolicy.NEW, None
    seconds = interval_seconds(start)
    if seconds is not None:
        return DeliverPolicy.BY_START_TIME, now - timedelta(seconds=seconds)
    return DeliverPolicy.ALL, None


REDELIVERY = Backoff(2, 60)


def retry_delay(delivery: int) -> float:
    """Wait before redelivering a failed event: 2 s, 4 s, 8 s … capped at 60 s (pure)."""
    return REDELIVERY.delay(delivery)


class Consumer:
    """Feeds one subscription's handler; `run` is supervised (it raises when NATS or the pool fails)."""

    def __init__(
        self,
        ctx: ModuleContext,
        sub: Subscription,
        js: JetStreamContext,
        unit: Unit,
        *,
        batch: int = 50,
        layout: streams.Plan | None = None,
    ) -> None:
        self.ctx = ctx
        self.sub = sub
        self.js = js
        self.unit = unit
        self.batch = batch
        self.name = f"{ctx.name}.{sub.name}"
        self.durable = durable_name(ctx.name, sub)
        self.streams = streams.streams_for(sub.subject, layout or streams.plan(()))
        self._pending: dict[str, int] = {}

    def config(self, existing: ConsumerConfig | None = None) -> ConsumerConfig:
        """The declaration; an existing consumer keeps where it started (JetStream refuses to change it,
        and a window's start time would move at every start)."""
        if existing is not None:
            policy, since = existing.deliver_policy or DeliverPolicy.ALL, existing.opt_start_time
        else:
            policy, since = deliver_from(self.sub.start, datetime.now(UTC))
        return ConsumerConfig(
            durable_name=self.durable,
            name=self.durable,
            filter_subject=self.sub.subject,
            ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=policy,
            opt_start_time=since,
            ack_wait=self.sub.ack_wait_seconds,
            max_deliver=-1,  # the limit is ours: failures of the handler, not outages, count (see module doc)
            max_ack_pending=1000,
        )

    async def run(self) -> None:
        """Consume from every stream the subject may be in, and read to the end what an older feedeater
        left for this consumer in the shared stream; one failing loop restarts them all."""
        loops = [(stream, False) for stream in self.streams]
        if streams.SHARED not in self.streams and await self._exists(streams.SHARED):
            loops.append((streams.SHARED, True))
        if len(loops) == 1:
            return await self._consume(self.streams[0])
        try:
            async with asyncio.TaskGroup() as group:
                for stream, until_drained in loops:
                    group.create_task(self._consume(stream, until_drained=until_drained))
        except* Exception as failed:
            raise failed.exceptions[0] from None

    async def _exists(self, stream: str) -> bool:
        return await self._existing(stream) is not None

    async def _existing(self, stream: str) -> ConsumerConfig | None:
        try:
            return (await self.js.consumer_info(stream, self.durable)).config
        except NotFoundError:
            return None

    async def _consume(self, stream: str, *, until_drained: bool = False) -> None:
        """Fetch and handle until cancelled; `until_drained`: until nothing is left, then delete the
        consumer (its subject moved to another stream, where this subscription reads on)."""
        if not until_drained:  # creates it, or updates a changed declaration
            await self.js.add_consumer(stream, self.config(await self._existing(stream)))
        psub = await self.js.pull_subscribe_bind(durable=self.durable, stream=stream)
        lag_at = 0.0
        try:
            while True:
                if time.monotonic() - lag_at >= LAG_EVERY_S:
                    lag_at = time.monotonic()
                    info = await psub.consumer_info()
                    self._pending[stream] = int(info.num_pending or 0)
                    self.unit.pending = sum(self._pending.values())
                    PENDING.labels(self.name).set(self.unit.pending)
                    if until_drained and not info.num_pending and not info.num_ack_pending:
                        await self.js.delete_consumer(stream, self.durable)
                        log.info(
                            "%s: read to the end in %s; consuming from %s", self.name, stream, self.streams
                        )
                        self._pending.pop(stream, None)
                        return
                try:
                    msgs = await psub.fetch(self.batch, timeout=2)
                except TimeoutError:  # nats-py raises both its own and asyncio's: nothing to fetch
                    continue
                if self.sub.batch and len(msgs) > 1:
                    await self.handle_batch(msgs)
                else:
                    for msg in msgs:
                        await self.handle(msg)
        finally:
            await psub.unsubscribe()

    async def handle_batch(self, msgs: list[Msg]) -> None:
        """A batch subscription's delivery in one transaction; if its handler raises, each event alone
        (so one bad event is retried and dead-lettered by itself, and the others are handled)."""
        taken: list[tuple[Msg, ReceivedEvent]] = []
        for msg in msgs:
            event = await self._decode(msg)
            if event is not None:
                taken.append((msg, event))
        try:
            handled = await self._process([event for _, event in taken])
        except _INFRASTRUCTURE:
            with contextlib.suppress(Exception):
                for msg, _ in taken:
                    await msg.nak(delay=retry_delay(1))
            raise
        except Exception as exc:
            log.info("%s: a batch of %d failed (%s): handling each event alone", self.name, len(taken), exc)
            for msg, _ in taken:
                await self.handle(msg)
            return
        HANDLED.labels(self.name).inc(handled)
        SKIPPED.labels(self.name).inc(len(taken) - handled)
        for msg, _ in taken:
            await msg.ack()

    async def _decode(self, msg: Msg) -> ReceivedEvent | None:
        """The event in a message; None when it is not a JSON object (then it is dead-lettered)."""
        meta = msg.metadata
        event_id = (msg.headers or {}).get("Nats-Msg-Id") or f"seq:{meta.sequence.stream}"
        delivery = int(meta.num_delivered)
        try:
            payload = json.loads(msg.data)
            if not isinstance(payload, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            await self.dead_letter(msg, event_id, delivery, f"undecodable event: {exc}")
            return None
        return ReceivedEvent(event_id, msg.subject, payload, delivery, meta.timestamp)

    async def handle(self, msg: Msg) -> None:
        event = await self._decode(msg)
        if event is None:
            return
        event_id, delivery = event.event_id, event.delivery
        try:
            handled = await self._process([event])
        except _INFRASTRUCTURE:
            with contextlib.suppress(Exception):  # NATS may be the one that is down
                await msg.nak(delay=retry_delay(1))
            raise  # the supervisor backs off; the event is retried without counting against it
        except Exception as exc:
            FAILED.labels(self.name).inc()
            reason = f"{type(exc).__name__}: {exc}"
            if delivery >= self.sub.max_deliver:
                await self.dead_letter(msg, event_id, delivery, reason)
                return
            log.warning("%s: event %s failed (delivery %d): %s", self.name, event_id, delivery, reason)
            await msg.nak(delay=retry_delay(delivery))
            return
        (HANDLED if handled else SKIPPED).labels(self.name).inc()
        await msg.ack()

    async def replay(self, event: ReceivedEvent) -> bool:
        """A dead letter handed back (host/dlq.py): handled now unless its id was processed already (then
        False); raises what the handler raises."""
        return bool(await self._process([event]))

    async def _process(self, events: list[ReceivedEvent]) -> int:
        """Handle in one transaction with the processed-id records; how many were not processed before."""
        async with self.ctx.pool.acquire() as conn, conn.transaction():
            # host.processed_events through a function running as the host (migrations/host/0033).
            fresh_ids = set(
                await conn.fetchval(
                    "SELECT host.mark_processed($1, $2)", self.name, [event.event_id for event in events]
                )
            )
            fresh = []
            for event in events:  # an id twice in one delivery is handled once
                if event.event_id in fresh_ids:
                    fresh_ids.discard(event.event_id)
                    fresh.append(event)
            if not fresh:
                return 0
            if self.sub.batch:
                await cast(BatchHandler, self.sub.handler)(self.ctx, conn, fresh)
            else:
                await cast(EventHandler, self.sub.handler)(self.ctx, conn, fresh[0])
            return len(fresh)

    async def dead_letter(self, msg: Msg, event_id: str, delivery: int, reason: str) -> None:
        """Park the event on the dead-letter subject with why, then ack it so the consumer moves on."""
        one_line = " ".join(reason.split())[:1000]
        await self.js.publish(
            dlq_subject(self.ctx.name, self.sub),
            msg.data,
            stream=streams.DLQ,
            headers={
                "Nats-Msg-Id": f"{self.name}:{event_id}",
                ERROR_HEADER: one_line,
                "Feedeater-Subject": msg.subject,
                "Feedeater-Event-Id": event_id,
                "Feedeater-Deliveries": str(delivery),
            },
        )
        DEAD.labels(self.name).inc()
        log.error(
            "%s: event %s dead-lettered after %d deliveries: %s", self.name, event_id, delivery, one_line
        )
        await msg.ack()
