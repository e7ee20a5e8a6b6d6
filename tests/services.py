"""The host's own test helpers: the kit's (host.testing, whose pytest plugin brings the service fixtures)
under the names the tests import, and the rss-specific exactly-once check."""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import asyncpg
from nats.js import JetStreamContext

from host import logs
from host.testing.services import *  # noqa: F403
from host.testing.services import BusReader, pending_events, until
from host.testing.services import __all__ as _KIT

__all__ = [*_KIT, "assert_exactly_once", "restored_logging"]


async def assert_exactly_once(pool: asyncpg.Pool, js: JetStreamContext) -> list[dict[str, Any]]:
    """Nothing lost, nothing duplicated: every entry has one event in the outbox and exactly one in the
    stream (MessageUpdated revisions too), every outbox row was delivered once, and each feed's events
    of one subject reached their stream in the order they were written. Returns the RSS messages."""
    # Generous: it may include a `feedeater run` starting (minutes of imports on a loaded 2-core machine).
    await until(lambda: _no_pending(pool), timeout=240, what="outbox drained")
    rows = await pool.fetch(
        "SELECT event_id FROM host.outbox WHERE subject LIKE 'feedeater.rss.%' ORDER BY id"
    )
    outbox_ids = [str(r["event_id"]) for r in rows]
    rss_outbox = set(outbox_ids)
    got = await BusReader(js).all("feedeater.rss.>", expect=len(outbox_ids), timeout=60)
    stream_ids = [m["_msg_id"] for m in got]
    assert len(stream_ids) == len(set(stream_ids)), "a Nats-Msg-Id reached the stream twice"
    assert set(stream_ids) == rss_outbox, "the stream and the outbox disagree"
    created = [m["message"]["id"] for m in got if m["type"] == "MessageCreated"]
    assert len(created) == len(set(created)), "an entry was announced twice"
    entries = {str(r["message_id"]) for r in await pool.fetch("SELECT message_id FROM mod_rss.entries")}
    assert set(created) == entries, "entries without their MessageCreated event, or the reverse"
    position = {event_id: i for i, event_id in enumerate(outbox_ids)}
    per_feed: dict[tuple[str, str], list[int]] = defaultdict(list)
    for m in got:
        per_feed[m["message"]["source"]["stream"], m["_subject"]].append(position[m["_msg_id"]])
    for (feed, subject), order in per_feed.items():
        assert order == sorted(order), f"feed {feed}: {subject} events out of order"
    return got


async def _no_pending(pool: asyncpg.Pool) -> bool:
    return await pending_events(pool) == 0


@contextlib.contextmanager
def restored_logging() -> Iterator[None]:
    """Logging as it was before the block: an in-process `host.cli.main()` points the root logger at the
    stderr of the moment (pytest's capture, closed after the test), where later tests' logs then went."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    noisy = {name: logging.getLogger(name).level for name in logs.NOISY}
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        for name, was in noisy.items():
            logging.getLogger(name).setLevel(was)
