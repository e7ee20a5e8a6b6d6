"""FeedEater's bus archiver (apps/worker/src/bus/archiver.ts, nats.js 2.x) as it talks to JetStream.

At every start it asks for the stream `feedeater_bus`; if it exists, nats.js's `streams.update(name, cfg)`
reads the old configuration and sends it back with the archiver's fields laid over it (Object.assign):
subjects exactly `feedeater.*.messageCreated` and `feedeater.tags.appended`, limits retention, file
storage, max age (its `jetstream_max_age_seconds` setting, 30 days by default). Otherwise it creates the
stream with only those fields. Then it binds two durable push consumers (`feedeater_archiver` on
messages, `feedeater_archiver_tags` on tags), parses each message and acks it once archived.
"""

from __future__ import annotations

import json
from typing import Any

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig

from host.bus import ApiError, api

STREAM = "feedeater_bus"
SUBJECT_MESSAGES = "feedeater.*.messageCreated"
SUBJECT_TAGS = "feedeater.tags.appended"
DURABLE = "feedeater_archiver"
DEFAULT_MAX_AGE_S = 30 * 24 * 3600


class Archiver:
    """The archiver of one FeedEater worker; `archived` holds the message ids it stored (its
    bus_messages table, which outlives restarts)."""

    def __init__(self, nc: Client, *, max_age_s: float = DEFAULT_MAX_AGE_S) -> None:
        self.nc = nc
        self.max_age_ns = max(100_000_000, int(max_age_s * 1_000_000_000))
        self.archived: set[str] = set()
        self.unparsable = 0
        self._subs: list[Subscription] = []

    def stream_config(self) -> dict[str, Any]:
        return {
            "name": STREAM,
            "subjects": [SUBJECT_MESSAGES, SUBJECT_TAGS],
            "retention": "limits",
            "storage": "file",
            "max_age": self.max_age_ns,
        }

    async def start(self) -> None:
        try:  # the archiver's try/catch: any failure of info or update means "add"
            info = await api(self.nc, f"STREAM.INFO.{STREAM}")
            await api(self.nc, f"STREAM.UPDATE.{STREAM}", {**info["config"], **self.stream_config()})
        except ApiError:
            await api(self.nc, f"STREAM.CREATE.{STREAM}", self.stream_config())
        js = self.nc.jetstream()
        for durable, subject in ((DURABLE, SUBJECT_MESSAGES), (f"{DURABLE}_tags", SUBJECT_TAGS)):
            inbox = f"{durable}_inbox"
            await js.add_consumer(
                STREAM,
                ConsumerConfig(
                    durable_name=durable,
                    deliver_subject=inbox,
                    filter_subject=subject,
                    ack_policy=AckPolicy.EXPLICIT,
                ),
            )
            self._subs.append(await self.nc.subscribe(inbox, cb=self._archive))

    async def _archive(self, msg: Msg) -> None:
        """Parse, store a MessageCreated (INSERT … ON CONFLICT (id) DO NOTHING), ack; an event it cannot
        parse is not acked (redelivered)."""
        try:
            event = json.loads(msg.data)
            if event["type"] == "MessageCreated":
                self.archived.add(str(event["message"]["id"]))
        except (ValueError, KeyError, TypeError):
            self.unparsable += 1
            return
        await msg.ack()

    async def stop(self) -> None:
        """The worker stops (its durable consumers stay, as they do in JetStream)."""
        for sub in self._subs:
            await sub.unsubscribe()
        self._subs.clear()
