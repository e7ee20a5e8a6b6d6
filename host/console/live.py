"""The live bus: NATS core messages on `feedeater.>` (everything the relay publishes) as server-sent
events, filtered by subject on the server (NATS does the matching)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from host.events import describe

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient
    from nats.aio.msg import Msg

ROOT = "feedeater.>"
KEEPALIVE_S = 15.0
QUEUE = 500  # a slow browser loses events rather than growing memory
_TOKEN = re.compile(r"^(?:[A-Za-z0-9_-]+|\*|>)$")


def subject_filter(raw: str | None) -> str | None:
    """A NATS subject under `feedeater.` (wildcards allowed), or None when it is not one (pure)."""
    text = (raw or "").strip() or ROOT
    tokens = text.split(".")
    if tokens[0] != "feedeater" or not all(_TOKEN.match(t) for t in tokens):
        return None
    if ">" in tokens[:-1] or len(tokens) < 2:
        return None
    return text


def event_data(msg: Msg) -> dict[str, Any]:
    """What the browser shows of one message: subject, message id, time, type and a one-line summary."""
    try:
        body: Any = json.loads(msg.data)
    except ValueError:
        body = None
    at, kind, about = (
        describe(body) if isinstance(body, dict) else ("", "?", msg.data[:200].decode(errors="replace"))
    )
    headers = msg.headers or {}
    return {
        "subject": msg.subject,
        "id": headers.get("Nats-Msg-Id", ""),
        "at": at,
        "type": kind,
        "about": about[:300],
    }


async def stream(nats: NatsClient | None, subject: str) -> AsyncIterator[str]:
    """`text/event-stream` lines until the browser leaves; comments while the bus is not attached."""
    yield "retry: 3000\n\n"
    if nats is None:
        yield ": the bus is not attached yet\n\n"
        return
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE)

    async def on_msg(msg: Msg) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(event_data(msg))

    sub = await nats.subscribe(subject, cb=on_msg)
    try:
        yield f": subscribed to {subject}\n\n"
        while True:  # Starlette cancels the generator when the browser disconnects
            try:
                data = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            yield f"event: bus\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
