"""Dead letters: the events a subscription gave up on (host/consumers.py parks them on
`feedeater.dlq.<module>.<subscription>` in stream feedeater_dlq, with the reason in `Feedeater-Error`).

List and show read the stream; replay hands one event to its subscription's handler again, in the same
transaction that records it processed (host/consumers.py), and then deletes the dead letter: a replay
interrupted after the commit finds the event processed and only deletes it, so each is handled exactly
once. Replaying never republishes to the original subject: other subscriptions had the event already.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from host import streams
from host.errors import UserError

if TYPE_CHECKING:
    from nats.js import JetStreamContext
    from nats.js.api import RawStreamMsg

    from host.module import ModuleContext, ModuleSpec

PREFIX = "feedeater.dlq"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    seq: int  # its sequence in stream feedeater_dlq: what show/replay/purge take
    module: str
    subscription: str
    event_id: str
    subject: str  # where the event was published
    reason: str
    deliveries: int
    dead_at: datetime | None
    payload: Any  # the decoded JSON (or the text, when it was not JSON)

    def as_dict(self, *, payload: bool = False) -> dict[str, Any]:
        out = {
            "seq": self.seq,
            "module": self.module,
            "subscription": self.subscription,
            "event_id": self.event_id,
            "subject": self.subject,
            "reason": self.reason,
            "deliveries": self.deliveries,
            "dead_at": self.dead_at,
        }
        return {**out, "payload": self.payload} if payload else out


def filter_subject(module: str | None = None, subscription: str | None = None) -> str:
    """The DLQ subjects of one module, of a subscription name (of any module, or of that module), or all
    (pure)."""
    return f"{PREFIX}.{module or '*'}.{subscription or '*'}"


def parse(msg: RawStreamMsg) -> DeadLetter:
    """A stored dead-letter message as the consumer wrote it (pure)."""
    headers = msg.headers or {}
    _, _, module, subscription = (msg.subject or "...").split(".", 3)
    raw = msg.data or b""
    try:
        payload: Any = json.loads(raw)
    except ValueError:
        payload = raw.decode(errors="replace")
    return DeadLetter(
        seq=int(msg.seq or 0),
        module=module,
        subscription=subscription,
        event_id=headers.get("Feedeater-Event-Id", ""),
        subject=headers.get("Feedeater-Subject", ""),
        reason=headers.get("Feedeater-Error", ""),
        deliveries=int(headers.get("Feedeater-Deliveries") or 0),
        dead_at=msg.time,
        payload=payload,
    )


async def listing(js: JetStreamContext, subject: str, *, limit: int = 100) -> list[DeadLetter]:
    """The oldest `limit` dead letters on `subject` (a filter_subject), in the order they died."""
    from nats.js.errors import NotFoundError

    out: list[DeadLetter] = []
    seq = 1
    while len(out) < limit:
        try:
            msg = await js.get_msg(streams.DLQ, seq=seq, subject=subject, next=True)
        except NotFoundError:  # none after seq, or no stream yet: nothing has died
            break
        out.append(parse(msg))
        seq = int(msg.seq or seq) + 1
    return out


async def count(js: JetStreamContext, subject: str = f"{PREFIX}.>") -> int:
    """How many dead letters wait (0 when the stream does not exist yet)."""
    from nats.js.errors import NotFoundError

    try:
        info = await js.stream_info(streams.DLQ, subjects_filter=subject)
    except NotFoundError:
        return 0
    return sum((info.state.subjects or {}).values())


async def get(js: JetStreamContext, seq: int) -> DeadLetter:
    from nats.js.errors import NotFoundError

    try:
        return parse(await js.get_msg(streams.DLQ, seq=seq))
    except NotFoundError:
        raise UserError(
            f"no dead letter {seq}",
            "list them with `feedeater bus dlq list` (replayed or purged ones are gone)",
        ) from None


async def delete(js: JetStreamContext, seq: int) -> None:
    from nats.js.errors import NotFoundError

    with contextlib.suppress(NotFoundError):  # deleted already (a replay or purge elsewhere)
        await js.delete_msg(streams.DLQ, seq)


async def purge(js: JetStreamContext, subject: str) -> int:
    """Delete every dead letter on `subject`; returns how many there were."""
    from nats.js.errors import NotFoundError

    n = await count(js, subject)
    if n:
        with contextlib.suppress(NotFoundError):
            await js.purge_stream(streams.DLQ, subject=subject)
    return n


async def replay(
    js: JetStreamContext,
    seq: int,
    specs: Mapping[str, ModuleSpec],
    context: Callable[[str], Awaitable[ModuleContext]],
) -> tuple[DeadLetter, bool]:
    """Hand dead letter `seq` to its subscription's handler again (exactly once, see the module doc) and
    delete it; returns it and whether it was handled now (False: it had been processed already).
    A handler that raises again leaves it where it is (UserError with the reason). `specs` are the
    installed modules, `context(name)` sets one up (Host.context)."""
    from host import consumers, module
    from host.module import ReceivedEvent
    from host.supervise import Unit

    letter = await get(js, seq)
    spec = module.get(specs, letter.module)
    sub = next((s for s in spec.manifest.subscriptions if s.name == letter.subscription), None)
    if sub is None:
        raise UserError(
            f"module {letter.module} has no subscription {letter.subscription} any more",
            f"purge it: `feedeater bus dlq purge {seq}`",
        )
    if not isinstance(letter.payload, dict):
        raise UserError(f"dead letter {seq} is not a JSON object: no handler can take it", "purge it")
    ctx = await context(letter.module)
    event = ReceivedEvent(
        letter.event_id, letter.subject, letter.payload, letter.deliveries + 1, letter.dead_at
    )
    consumer = consumers.Consumer(ctx, sub, js, Unit(letter.module, sub.name, "subscription"))
    try:
        handled = await consumer.replay(event)
    except Exception as exc:
        raise UserError(
            f"dead letter {seq} failed again: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}",
            "it stays in the dead letters: fix the cause (a setting, the module) and replay it again",
        ) from None
    await delete(js, seq)
    return letter, handled
