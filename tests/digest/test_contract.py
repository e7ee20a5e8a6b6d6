"""One message contract (issue #20 item 6): what rss publishes is what the digest and discord accept.

Every entry of the shared corpus goes through rss's intake (events in the outbox, as a poll writes them),
the relay onto JetStream and the digest's durable consumers, and none is dead-lettered: the host log of a
first import showed `MessageCreated … dead-lettered: message has neither a title nor a body`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from host import outbox
from host.events import contract_violation
from host.module import ModuleContext
from host.runtime import Host
from host.streams import DLQ as DLQ_STREAM
from modules.digest import MANIFEST
from modules.digest.intake.event import to_article
from modules.discord.format import Item, Source, embed
from modules.rss import store
from modules.rss.ingest.publish import message_text
from modules.rss.model import Entry
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.public import html_to_text
from tests.digest.test_end_to_end import consumers
from tests.rss.seed import ingest
from tests.services import BusReader, until

__all__ = ["consumers"]
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_an_entry_without_title_or_text_still_has_a_message() -> None:
    """A Tumblr photo post: no title, an <img> for a description. The link names it."""
    photo = Entry(guid="p", guid_source="id", title="", link="https://x.tumblr.com/post/1", content_hash="h")
    assert message_text(photo) == "https://x.tumblr.com/post/1"
    bare = Entry(guid="q", guid_source="id", title="", link=None, content_hash="h")
    assert message_text(bare) == "(an entry without text)"


def test_the_contract_names_what_a_message_lacks() -> None:
    ok = {
        "type": "MessageCreated",
        "message": {
            "id": "6f1c3b7e-5a52-4d0e-9a53-0c1f6f0e7d21",
            "createdAt": "2026-01-01T00:00:00.000Z",
            "source": {"module": "slack", "stream": "general"},
            "Message": "hello",
        },
    }
    assert contract_violation(ok) is None
    empty = {**ok, "message": {**ok["message"], "Message": "  "}}
    assert contract_violation(empty) == "message.Message is missing, not a string or empty"
    naive = {**ok, "message": {**ok["message"], "createdAt": "2026-01-01T00:00:00"}}
    assert contract_violation(naive) == "message.createdAt has no time zone: '2026-01-01T00:00:00'"
    assert (
        contract_violation({**ok, "type": "Ping"})
        == "type is 'Ping', expected MessageCreated or MessageUpdated"
    )


@pytest.fixture
async def corpus_published(host: Host, shared_fixtures: Path) -> AsyncIterator[int]:
    """Every corpus entry stored as a first poll stores it (events in the same transaction), relayed."""
    files = json.loads((shared_fixtures / "realworld" / "manifest.json").read_text())["files"]
    pool = host.require_pool()
    for record in files:
        url = f"https://feeds.example.com/{record['path']}"
        try:
            parsed = parse_feed(
                (shared_fixtures / "realworld" / record["path"]).read_bytes(), url=url, now=NOW
            )
        except FeedParseError:
            continue
        async with pool.acquire() as conn, conn.transaction():
            feed, _ = await store.add_feed(conn, url=url, title=parsed.title)
            await ingest(conn, feed, parsed.entries, first_poll=True, now=NOW)
    assert host.js is not None
    await outbox.Relay(pool, host.js).drain_all()
    yield int(
        await pool.fetchval("SELECT count(*) FROM host.outbox WHERE subject = 'feedeater.rss.messageCreated'")
    )


@pytest.mark.timeout(900)  # ~7,000 entries through PostgreSQL, NATS and the digest on a loaded 2-core VM
async def test_every_corpus_entry_reaches_the_digest_and_discord_without_a_dead_letter(
    host: Host, corpus_published: int, consumers: ModuleContext
) -> None:
    assert host.js is not None and corpus_published > 5000
    published = await BusReader(host.js).all(
        "feedeater.rss.messageCreated", expect=corpus_published, timeout=120
    )
    assert len(published) == corpus_published
    refused: dict[str, str] = {}
    for event in published:
        payload: dict[str, Any] = {k: v for k, v in event.items() if not k.startswith("_")}
        if (why := contract_violation(payload)) is not None:
            refused[payload["message"]["id"]] = why
        to_article(payload)  # the digest's reading of it: raises MalformedEvent
        item = Item.from_rss(payload["message"]["rss"])  # discord's reading of the same event
        embed(item, Source(1, "Feed", "https://feeds.example.com/", None), now=NOW, to_text=html_to_text)
    assert refused == {}

    async def all_taken() -> bool:
        got = await host.require_pool().fetchval("SELECT count(*) FROM mod_digest.articles")
        return int(got) >= corpus_published

    await until(all_taken, timeout=600, interval=2, what="every corpus entry taken in by the digest")
    assert await BusReader(host.js, stream=DLQ_STREAM).all("feedeater.dlq.>") == []
    assert [s.name for s in MANIFEST.subscriptions] == ["created", "updated"]
