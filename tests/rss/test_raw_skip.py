"""Issue 25: an item whose raw hash is stored is not normalized or sanitized again (parse_feed(known=)),
and still counts as seen; a changed item, a changed feed-level context or a new item is parsed in full.
Over fixtures/rss/raw_hash_skip.xml (xml:base on the feed, a feed author, identities by id, link, hash)."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from host.runtime import Host
from modules.rss import store
from modules.rss.ingest import document
from modules.rss.ingest.diff import StaleSkip, diff
from modules.rss.model import Entry, Feed, Known, SameItem
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.parse.normalize import NORMALIZER_VERSION
from tests.feedserver import FeedServer, Route
from tests.rss.test_poll import add, make_due, poll
from tests.services import BusReader

FIXTURE_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "rss"
FIXTURE = (FIXTURE_DIR / "raw_hash_skip.xml").read_bytes()
URL = "https://feeds.example/blog.xml"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
FIRST, SECOND = "tag:site.example,2026:1", "tag:site.example,2026:2"
THIRD = "https://site.example/blog/posts/3.html"  # no id: the link is its identity
NEW_ENTRY = """<entry>
    <title>Zero, new</title>
    <id>tag:site.example,2026:0</id>
    <link rel="alternate" href="posts/0.html"/>
    <updated>2026-11-30T10:00:00Z</updated>
    <content type="html">&lt;p&gt;New&lt;/p&gt;</content>
  </entry>
  <entry>
    <title>First,"""


def edited(body: bytes, *replacements: tuple[str, str]) -> bytes:
    text = body.decode()
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new, 1)
    return text.encode()


def next_version(body: bytes) -> bytes:
    """One new entry on top, the second entry's summary edited."""
    return edited(
        body,
        ("<entry>\n    <title>First,", NEW_ENTRY),
        ("second entry's summary", "second entry's edited summary"),
    )


def known_of(body: bytes, url: str = URL) -> frozenset[str]:
    """The raw hashes intake stores for this document's entries."""
    return frozenset(
        e.raw_hash for e in parse_feed(body, url=url, now=NOW, known=frozenset()).entries if e.raw_hash
    )


@pytest.mark.parametrize("now", [NOW, datetime(2026, 11, 28, 12, tzinfo=UTC)])  # the second: two are future
def test_known_items_are_not_normalized_and_keep_their_place(now: datetime) -> None:
    full = parse_feed(FIXTURE, url=URL, now=now)
    skipped = parse_feed(FIXTURE, url=URL, now=now, known=known_of(FIXTURE))
    # identified by id or link: not normalized; the note (identity = hash of its title) always is
    assert [s.guid for s in skipped.same] == [FIRST, SECOND, THIRD]
    assert [e.title for e in skipped.entries] == ["A note without id or link"]
    assert [(e.guid, e.published, e.future_dated) for e in skipped.items()] == [
        (e.guid, e.published, e.future_dated) for e in full.entries
    ]
    assert skipped.warnings == full.warnings
    assert all(e.raw_hash is None for e in full.entries)  # no `known`: no raw hashes at all


@pytest.mark.parametrize(
    ("edit", "skipped"),
    [
        (("second entry's summary", "second entry's edited summary"), [FIRST, THIRD]),
        (('href="posts/1.html"', 'href="posts/1.html?x"'), [SECOND, THIRD]),
        # feed-level context: every item is made from it
        (('xml:base="https://site.example/blog/"', 'xml:base="https://mirror.example/blog/"'), []),
        (("<name>Feed Author</name>", "<name>Another Author</name>"), []),
    ],
)
def test_a_changed_item_or_feed_context_is_normalized_again(
    edit: tuple[str, str], skipped: list[str]
) -> None:
    parsed = parse_feed(edited(FIXTURE, edit), url=URL, now=NOW, known=known_of(FIXTURE))
    assert [s.guid for s in parsed.same] == skipped
    assert len(parsed.entries) == 4 - len(skipped) and all(e.raw_hash for e in parsed.entries)


def test_the_document_url_is_context_where_it_is_the_base() -> None:
    body = edited(FIXTURE, ('xml:base="https://site.example/blog/"', ""))
    assert len(parse_feed(body, url=URL, now=NOW, known=known_of(body)).same) == 3
    assert (
        parse_feed(body, url="https://feeds.example/moved/blog.xml", now=NOW, known=known_of(body)).same == ()
    )


def test_a_repeated_guid_beside_a_known_item_normalizes_every_item() -> None:
    """Which copy of a repeated guid gets a suffix depends on normalized fields of both."""
    copy = NEW_ENTRY.replace("tag:site.example,2026:0", FIRST)
    parsed = parse_feed(
        edited(FIXTURE, ("<entry>\n    <title>First,", copy)), url=URL, now=NOW, known=known_of(FIXTURE)
    )
    assert parsed.same == ()
    renamed = [e for e in parsed.entries if e.guid.startswith(FIRST + "#")]
    assert parsed.entries[0].guid == FIRST and len(renamed) == 1
    assert renamed[0].raw_hash is None  # its guid depends on the other copy: never skipped by its hash


def test_diff_takes_same_items_as_unchanged_and_tombstones_still_win() -> None:
    same = [SameItem("a", "ha", NOW, False), SameItem("gone", "hg", NOW, False)]
    known = {"a": Known("x", 1, NOW, raw_hash="ha"), "gone": Known("y", 1, NOW, raw_hash="hg")}
    got = diff(
        [Entry("b", "id", "B", None, content_hash="z", raw_hash="hb")],
        known,
        {"gone"},
        feed_id=1,
        feed_title="t",
        now=NOW,
        first_poll=False,
        lookback_hours=48,
        same=same,
    )
    assert [n.entry.guid for n in got.new] == ["b"] and got.unchanged == ["a"] and got.gone == ["gone"]
    assert got.raw_hashes == {"a": "ha"}
    # its row was deleted, or revised by another intake, since the hashes were read: parse it in full
    for stale in ({}, {"a": Known("b's", 2, NOW, raw_hash="hb")}):
        with pytest.raises(StaleSkip):
            diff([], stale, set(), feed_id=1, feed_title="t", now=NOW, first_poll=False, lookback_hours=48,
                 same=same[:1])  # fmt: skip


# NORMALIZER_VERSION → a digest of what every fixture of fixtures/rss normalizes to.
NORMALIZED = {1: "c7dc750cf753a9a69e1e7331e21921f9e1bc13a5ea097b8ab1ecd1a014d18292"}


def test_a_change_of_normalized_output_comes_with_a_new_normalizer_version() -> None:
    """Stored raw hashes skip items whose Entry would now differ unless the version (in every hash) moves."""
    digest = hashlib.sha256()
    for path in sorted(FIXTURE_DIR.rglob("*.*")):
        if path.suffix in (".xml", ".json", ".rdf"):
            try:
                feed = parse_feed(path.read_bytes(), url=f"https://feeds.example/{path.name}", now=NOW)
            except FeedParseError:
                continue
            for entry in feed.entries:
                digest.update(repr(entry).encode())
    assert NORMALIZED.get(NORMALIZER_VERSION) == digest.hexdigest(), (
        "normalize/sanitize output changed: bump NORMALIZER_VERSION and record the new digest here"
    )


async def entries_of(host: Host, feed_id: int) -> dict[str, dict[str, Any]]:
    rows = await host.require_pool().fetch(
        "SELECT id, guid, revision, seen_count, last_fetch_id, raw_hash FROM mod_rss.entries WHERE feed_id = $1",
        feed_id,
    )
    return {r["guid"]: dict(r) for r in rows}


async def test_a_changed_poll_normalizes_only_the_changed_and_new_items(
    host: Host, bus: BusReader, feed_server: FeedServer
) -> None:
    feed_server.route("/feed", Route(body=FIXTURE, headers={"Content-Type": "application/atom+xml"}))
    feed = await add(host, feed_server.url("/feed"))
    first = await poll(host)
    assert first["new"] == 4 and first.get("raw_same", 0) == 0  # the first poll has no raw hashes
    before = await entries_of(host, feed.id)
    assert all(r["raw_hash"] for r in before.values())

    feed_server.route(
        "/feed", Route(body=next_version(FIXTURE), headers={"Content-Type": "application/atom+xml"})
    )
    await make_due(host)
    second = await poll(host)
    assert (second["new"], second["updated"], second["unchanged"], second["items"]) == (1, 1, 3, 5)
    assert second["raw_same"] == 2  # the first and third: not normalized; the note has no id or link
    created = await bus.all("feedeater.rss.messageCreated", expect=5)
    updated = await bus.all("feedeater.rss.messageUpdated", expect=1)
    assert created[-1]["message"]["rss"]["guid"] == "tag:site.example,2026:0"
    assert [u["message"]["rss"]["guid"] for u in updated] == [SECOND]
    assert "edited summary" in updated[0]["message"]["Message"]
    after = await entries_of(host, feed.id)
    fetch_id = after["tag:site.example,2026:0"]["last_fetch_id"]
    assert all(r["last_fetch_id"] == fetch_id for r in after.values())  # every item seen by this fetch
    assert all(after[g]["seen_count"] == 2 for g in before)
    assert after[SECOND]["raw_hash"] != before[SECOND]["raw_hash"] and after[SECOND]["revision"] == 2
    assert all(after[g]["raw_hash"] == before[g]["raw_hash"] for g in before if g != SECOND)

    # The feed moves its xml:base: every item's links change, so every item is normalized and revised.
    moved = edited(next_version(FIXTURE), ("https://site.example/blog/", "https://mirror.example/blog/"))
    feed_server.route("/feed", Route(body=moved, headers={"Content-Type": "application/atom+xml"}))
    await make_due(host)
    third = await poll(host)
    assert (third.get("raw_same", 0), third["updated"], third["unchanged"], third["new"]) == (0, 3, 1, 1)
    # the third item is identified by its link: under the new base it is another entry (as before this change)
    assert len(await bus.all("feedeater.rss.messageUpdated", expect=4)) == 4


async def test_a_deleted_entry_stays_gone_while_the_others_are_skipped(
    host: Host, bus: BusReader, feed_server: FeedServer
) -> None:
    feed_server.route("/feed", Route(body=FIXTURE))
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    pool = host.require_pool()
    async with pool.acquire() as conn:
        await store.delete_entry(conn, (await entries_of(host, feed.id))[FIRST]["id"])
    feed_server.route("/feed", Route(body=next_version(FIXTURE)))
    await make_due(host)
    metrics = await poll(host)
    assert (metrics["tombstoned"], metrics["raw_same"], metrics["new"]) == (1, 1, 1)
    assert await pool.fetchval("SELECT count(*) FROM mod_rss.entries WHERE guid = $1", FIRST) == 0
    created = await bus.all("feedeater.rss.messageCreated", expect=5, timeout=1)
    assert [e["message"]["rss"]["guid"] for e in created].count(FIRST) == 1


@pytest.mark.parametrize(
    ("change", "inserted", "revised"),
    [
        ("DELETE FROM mod_rss.entries WHERE feed_id = $1 AND guid = $2", {FIRST}, [SECOND]),  # no tombstone
        # another intake (a push) revised it: the feed's version is taken in again, as before skipping
        (
            "UPDATE mod_rss.entries SET content_hash = 'push', raw_hash = 'push' WHERE feed_id = $1 AND guid = $2",
            set(),
            [FIRST, SECOND],
        ),
    ],
)
async def test_an_entry_changed_after_its_raw_hash_was_read_is_parsed_in_full(
    host: Host,
    database_url: str,
    feed_server: FeedServer,
    change: str,
    inserted: set[str],
    revised: list[str],
) -> None:
    """The row changes between the raw-hash query and intake: intake refuses the skipped item
    (diff.StaleSkip) and the document is parsed again without skipping, as it would have been before."""
    feed_server.route("/feed", Route(body=FIXTURE))
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    ctx = await host.context("rss")
    async with host.require_pool().acquire() as conn:
        row = await store.get_feed(conn, str(feed.id))

    def change_first(parsed: Feed) -> str | None:  # runs after the parse, before intake
        assert FIRST in {s.guid for s in parsed.same}

        async def write() -> None:
            conn = await asyncpg.connect(database_url)
            try:
                await conn.execute(change, feed.id, FIRST)
            finally:
                await conn.close()

        writing = threading.Thread(target=asyncio.run, args=(write(),))  # this loop waits in the hook
        writing.start()
        writing.join()
        return None

    body = document.Body(
        feed_server.url("/feed"), {"content-type": "application/atom+xml"}, next_version(FIXTURE)
    )
    stored = await document.ingest_document(ctx, row, body, now=datetime.now(UTC), before=change_first)
    assert stored.parsed is not None and stored.parsed.same == ()  # parsed again, every item in full
    assert stored.intents is not None and FIRST not in stored.intents.unchanged
    assert set(stored.inserted) - {"tag:site.example,2026:0"} == inserted
    assert [r.entry.guid for r in stored.intents.revised] == revised
