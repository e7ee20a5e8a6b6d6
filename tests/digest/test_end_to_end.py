"""rss polls real feeds → its events on JetStream → the digest's durable consumer → dedup → a digest
stored and published on the bus. Real PostgreSQL, NATS JetStream and HTTP feed server."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from email.utils import format_datetime

import pytest

from host import outbox
from host.consumers import ERROR_HEADER, Consumer
from host.module import ModuleContext
from host.runtime import Host
from host.streams import DLQ as DLQ_STREAM
from host.supervise import Supervisor, Unit
from modules.digest import MANIFEST
from modules.digest.deliver import job
from modules.digest.settings import TYPES
from modules.rss import store
from tests.feedserver import FeedServer, Route, ago
from tests.services import BusReader, until

STORY = (
    "The city council of Springfield approved a new light rail line on Tuesday after a six hour debate. "
    "Mayor Jane Alvarez said construction of the 12 kilometre line will start in March and cost 480 million "
    "dollars, paid by state and federal grants. Opponents led by councillor Tom Becker argued the money "
    "should go to buses instead. The line will connect the university, the hospital and the main station, "
    "and planners expect 40,000 riders a day by 2030. Residents along Elm Street worry about noise during "
    "the three years of works, while local businesses welcomed the decision."
)
OTHER = (
    "Researchers at the Northfield Observatory have catalogued a comet that will pass close to Earth next "
    "spring. The object, about two kilometres wide, poses no danger, astronomers said, and should be visible "
    "with binoculars for several weeks. Amateur observers are invited to submit photographs to the project, "
    "which studies how comets lose material when they approach the Sun."
)

Item = tuple[str, str, datetime, str, str]  # guid, title, published, link, description


def feed(title: str, items: Sequence[Item]) -> bytes:
    parts = [
        f"<title>{title}</title><link>https://{title.lower()}.example/</link><description>d</description>"
    ]
    for guid, item_title, published, link, desc in items:
        parts.append(
            f"<item><guid isPermaLink='false'>{guid}</guid><title>{item_title}</title><link>{link}</link>"
            f"<pubDate>{format_datetime(published)}</pubDate><description>{desc}</description></item>"
        )
    return f"<?xml version='1.0'?><rss version='2.0'><channel>{''.join(parts)}</channel></rss>".encode()


@pytest.fixture
async def consumers(host: Host) -> AsyncIterator[ModuleContext]:
    """The digest module's declared subscriptions, supervised (restarted after a NATS timeout) as
    `feedeater run` runs them."""
    ctx = await host.context("digest")
    assert host.js is not None
    supervisor = Supervisor(host.require_pool(), "test-host")
    for sub in MANIFEST.subscriptions:
        unit = supervisor.add(Unit("digest", sub.name, "subscription"))
        supervisor.start(unit, Consumer(ctx, sub, host.js, unit).run)
    yield ctx
    await supervisor.stop()


async def subscribe_and_poll(host: Host, *urls: str) -> None:
    async with host.require_pool().acquire() as conn:
        for url in urls:
            await store.add_feed(conn, url=url)
    await host.require_pool().execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
    result = await host.run_job_once("rss.poll")
    assert result.status == "ok", result.error
    assert host.js is not None
    await outbox.Relay(host.require_pool(), host.js).drain_all()


async def articles(host: Host, n: int) -> list[dict[str, object]]:
    async def enough() -> list[dict[str, object]] | None:
        rows = await host.require_pool().fetch("SELECT * FROM mod_digest.articles ORDER BY id")
        return [dict(r) for r in rows] if len(rows) >= n else None

    result: list[dict[str, object]] = await until(enough, what=f"{n} articles taken in")
    return result


async def test_digest_from_events_the_rss_module_published(
    host: Host, bus: BusReader, feed_server: FeedServer, consumers: ModuleContext
) -> None:
    when = ago(hours=2)
    feed_server.route(
        "/wire",
        Route(
            body=feed(
                "Wire",
                [
                    ("w1", "Springfield approves light rail line", when, "https://wire.example/rail", STORY),
                    (
                        "w2",
                        "Comet to pass close to Earth next spring",
                        when,
                        "https://wire.example/comet",
                        OTHER,
                    ),
                ],
            )
        ),
    )
    feed_server.route(
        "/local",
        Route(
            body=feed(
                "Local",
                [
                    # The same article through a newsletter link: layer 2 (canonical URL).
                    ("l1", "Springfield approves light rail line", when,
                     "http://www.wire.example/rail/?utm_source=newsletter&utm_medium=email", STORY),
                ],
            )
        ),
    )  # fmt: skip
    feed_server.route(
        "/daily",
        Route(
            body=feed(
                "Daily",
                [  # A syndicated copy: prefixed title, own URL, lightly edited body (layers 3 + 4).
                    ("d1", "BREAKING: Springfield approves light rail line", ago(hours=1),
                     "https://daily.example/2026/rail-line", STORY.replace("on Tuesday", "late on Tuesday")),
                ],
            )
        ),
    )  # fmt: skip
    await subscribe_and_poll(host, feed_server.url("/wire"))
    await articles(host, 2)  # the wire story is stored first, so it is the original
    await subscribe_and_poll(host, feed_server.url("/local"), feed_server.url("/daily"))
    rows = await articles(host, 4)
    by_link = {r["url"]: r for r in rows}
    original = by_link["https://wire.example/rail"]
    newsletter = next(r for r in rows if str(r["url"]).startswith("http://www.wire.example"))
    syndicated = by_link["https://daily.example/2026/rail-line"]
    comet = by_link["https://wire.example/comet"]
    assert (original["disposition"], comet["disposition"]) == ("unique", "unique")
    # rss hashes the link with the content, but the words are the same: an exact copy at the same URL.
    assert (newsletter["disposition"], newsletter["layer"]) == ("exact_duplicate", "url")
    assert (syndicated["disposition"], syndicated["layer"]) == ("near_duplicate", "title+fingerprint")
    assert newsletter["cluster_id"] == syndicated["cluster_id"] == original["id"]
    assert original["feed_id"] is not None and original["source_name"] == "Wire"

    built = await job.build(consumers, TYPES["morning"])
    assert built.stored
    assert host.js is not None
    await outbox.Relay(host.require_pool(), host.js).drain_all()
    digests = await bus.all("feedeater.digest.messageCreated", expect=1)
    assert len(digests) == 1
    message = digests[0]["message"]
    assert message["isDigest"] is True and message["id"] == built.digest_id
    assert message["contextRef"] == {"ownerModule": "digest", "sourceKey": "digest:morning"}
    markdown = message["Message"]
    assert markdown.startswith("# Morning Brief")
    assert "4 articles · 2 duplicates removed" in markdown
    assert markdown.count("Springfield approves light rail line") == 1  # the story once, not three times
    rail = next(i for i in message["digest"]["items"] if "rail" in i["title"])
    assert rail["related_count"] == 2 and set(rail["related_sources"]) == {"Local", "Daily"}
    assert "Feed Health" in markdown and "Feeds polled: 3" in markdown
    contexts = await bus.all("feedeater.digest.contextUpdated", expect=1)
    assert contexts[0]["context"]["sourceKey"] == "digest:morning"
    assert contexts[0]["messageId"] == built.digest_id
    # Our own digest came back through the wildcard subscription and was not taken in as an article.
    await until(lambda: _consumed(host), what="digest event consumed")
    assert await host.require_pool().fetchval("SELECT count(*) FROM mod_digest.articles") == 4


async def _consumed(host: Host) -> bool:
    assert host.js is not None
    info = await host.js.consumer_info("feedeater_bus", "digest_created")
    return info.num_pending == 0 and info.num_ack_pending == 0


async def test_a_malformed_event_is_dead_lettered_with_its_reason_and_does_not_block(
    host: Host, consumers: ModuleContext
) -> None:
    assert host.js is not None
    bad_id, good_id = str(uuid.uuid4()), str(uuid.uuid4())
    bad = {
        "type": "MessageCreated",
        "message": {"id": "not-a-uuid", "Message": "x", "createdAt": "2026-01-01T00:00:00Z"},
    }
    good = {
        "type": "MessageCreated",
        "message": {
            "id": str(uuid.uuid4()),
            "createdAt": "2026-11-20T10:00:00.000Z",
            "source": {"module": "slack", "stream": "general"},
            "Message": "Quarterly planning notes\n\nThe team agreed on the roadmap for next quarter.",
            "From": "Ann",
            "tags": {"title": "Quarterly planning notes"},
        },
    }
    for event_id, body in ((bad_id, bad), (good_id, good)):
        await host.js.publish(
            "feedeater.slack.messageCreated", json.dumps(body).encode(), headers={"Nats-Msg-Id": event_id}
        )
    rows = await articles(host, 1)  # the good event is handled while the bad one waits for its retries
    assert rows[0]["title"] == "Quarterly planning notes" and rows[0]["source_module"] == "slack"
    assert rows[0]["disposition"] == "unique"

    async def parked() -> list[dict[str, object]]:
        dead = await BusReader(host.js, stream=DLQ_STREAM).all("feedeater.dlq.digest.created")
        return [d for d in dead if d["_headers"].get("Feedeater-Event-Id") == bad_id]

    dead = await until(parked, what="malformed event dead-lettered")
    assert "MalformedEvent: message.id is not a UUID: 'not-a-uuid'" in dead[0]["_headers"][ERROR_HEADER]
