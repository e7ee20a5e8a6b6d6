"""An example feedeater module written only against the host contract (host.module, host.events).

It subscribes to the rss module's `feedeater.rss.messageCreated`, records each entry in its own table
`mod_example.seen` and announces it as `feedeater.example.entrySeen` through `ctx.emit`, in the same
transaction the host opened for the delivery, so the row, the announcement and "processed" commit
together. It is installed as its own distribution (pyproject.toml beside this package) and found
through its `feedeater.modules` entry point; CLAUDE.md "How to add a module" walks through it.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import uuid
from datetime import UTC, datetime

import asyncpg

from host.events import Event, iso_z, stable_uuid, subject
from host.module import Manifest, ModuleContext, ModuleSpec, ReceivedEvent, Setting, Subscription

NAME = "example"


async def on_message_created(ctx: ModuleContext, conn: asyncpg.Connection, event: ReceivedEvent) -> None:
    """Remember the entry and announce it; runs inside the host's transaction for this delivery."""
    message = event.payload["message"]
    await asyncio.sleep(float(ctx.settings["work_ms"]) / 1000)  # stands in for real work (an API call)
    title = str((message.get("tags") or {}).get("title", ""))
    if ctx.settings["fail_on"] and ctx.settings["fail_on"] in title:
        raise ValueError(f"refusing {title!r}")
    await conn.execute(
        "INSERT INTO mod_example.seen (message_id, event_id, delivery, title) VALUES ($1, $2, $3, $4)",
        uuid.UUID(message["id"]),
        event.event_id,
        event.delivery,
        title,
    )
    await ctx.emit(conn, entry_seen(message["id"], title))


def entry_seen(message_id: str, title: str) -> Event:
    """The announcement; its id derives from the message, so it is the same event however often built."""
    return Event(
        stable_uuid("entrySeen", message_id),
        subject(NAME, "entrySeen"),
        {
            "type": "EntrySeen",
            "messageId": message_id,
            "title": title,
            "createdAt": iso_z(datetime.now(UTC)),
        },
    )


MODULE = ModuleSpec(
    manifest=Manifest(
        name=NAME,
        version="0.1.0",
        description="hears rss entries, remembers them, announces each once",
        subscriptions=(
            Subscription(
                "entries",
                "feedeater.rss.messageCreated",
                on_message_created,
                max_deliver=3,
                ack_wait_seconds=10,
                description="every new rss entry",
            ),
        ),
        settings=(
            Setting("work_ms", "int", 0, "simulated work per event, in milliseconds", min=0, max=10000),
            Setting("fail_on", "str", "", "entries whose title contains this fail (dead-letter demo)"),
        ),
        events=("entrySeen",),
        migrations=importlib.resources.files(__name__) / "migrations",
    )
)
