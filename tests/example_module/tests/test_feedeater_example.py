"""The example module's own tests, written only with the host's test kit (host.testing) and the documented
module API: a real PostgreSQL, a real NATS JetStream, the host running in this process."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
from feedeater_example import entry_seen

from host.events import Event, iso_z, message_created, stable_uuid
from host.runtime import Host
from host.testing import BusReader, make_host, publish_event, reset_stream, running, until


def entry(title: str) -> Event:
    """An rss messageCreated event as the rss module publishes it (the FeedEater message fields)."""
    message_id = str(stable_uuid("example-test", title))
    message = {
        "id": message_id,
        "createdAt": iso_z(datetime.now(UTC)),
        "source": {"module": "rss", "stream": "feed:1"},
        "Message": title,
        "tags": {"title": title},
    }
    return message_created("rss", message)


async def seen(pool: asyncpg.Pool) -> list[asyncpg.Record]:
    return list(await pool.fetch("SELECT message_id, title, delivery FROM mod_example.seen ORDER BY title"))


async def start(tmp_path: Path, database_url: str, nats_url: str, **env: str) -> Host:
    await reset_stream(nats_url)  # the streams of earlier tests are not this one's
    return make_host(tmp_path, database_url, nats_url, env=env)


async def test_an_entry_is_remembered_and_announced_exactly_once(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    host = await start(tmp_path, database_url, nats_url)
    async with running(host):
        assert host.js is not None
        first, second = entry("first"), entry("second")
        for event in (first, second, first):  # the repeat is dropped by its event id
            await publish_event(host.js, event)
        pool = host.require_pool()
        rows = await until(lambda: _at_least(pool, 2), timeout=120, what="both entries remembered")
        assert [(str(r["message_id"]), r["title"]) for r in rows] == [
            (str(first.event_id), "first"),
            (str(second.event_id), "second"),
        ]
        announced = await BusReader(host.js).all("feedeater.example.entrySeen", expect=2, timeout=60)
    assert sorted(m["title"] for m in announced) == ["first", "second"]
    assert {m["_msg_id"] for m in announced} == {
        str(entry_seen(str(e.event_id), t).event_id) for e, t in ((first, "first"), (second, "second"))
    }


async def test_a_refused_entry_is_dead_lettered_and_the_next_one_still_heard(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    host = await start(tmp_path, database_url, nats_url, FEEDEATER_EXAMPLE_FAIL_ON="poison")
    async with running(host):
        assert host.js is not None
        await publish_event(host.js, entry("poison pill"))
        await publish_event(host.js, entry("fine"))
        pool = host.require_pool()
        await until(lambda: _at_least(pool, 1), timeout=120, what="the fine entry heard")
        dead = await BusReader(host.js, stream="feedeater_dlq").all("feedeater.dlq.example.entries", expect=1)
        assert [r["title"] for r in await seen(pool)] == ["fine"]
    assert len(dead) == 1 and "refusing 'poison pill'" in dead[0]["_headers"].get("Feedeater-Error", "")
    assert dead[0]["message"]["tags"]["title"] == "poison pill"


async def _at_least(pool: asyncpg.Pool, n: int) -> list[asyncpg.Record] | None:
    rows = await seen(pool)
    return rows if len(rows) >= n else None


def test_the_announcement_id_comes_from_the_message() -> None:
    message_id = str(uuid.uuid4())
    assert entry_seen(message_id, "a").event_id == entry_seen(message_id, "b").event_id
