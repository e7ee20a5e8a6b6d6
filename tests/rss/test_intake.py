"""The intake seam: diff → intents → processors, without SQL or NATS; and a processor hooked into a real poll."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from host.runtime import Host
from modules.rss.ingest import processors, publish
from modules.rss.ingest.diff import diff
from modules.rss.model import Entry, Intents, Known
from modules.rss.public import register_processor
from tests.feedserver import FeedServer, Route, ago, rss
from tests.rss.conftest import drop_sponsored
from tests.rss.test_poll import add, make_due, poll
from tests.services import BusReader

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def entry(guid: str, text: str = "x", published: datetime | None = NOW) -> Entry:
    return Entry(
        guid, "id", guid.upper(), f"https://example.org/{guid}", published=published, content_hash=text
    )


def intents_of(
    entries: list[Entry], known: dict[str, Known], gone: set[str], first_poll: bool = False
) -> Intents:
    return diff(
        entries, known, gone, feed_id=7, feed_title="Seven", now=NOW, first_poll=first_poll, lookback_hours=48
    )


def test_diff_sorts_each_entry_into_exactly_one_intent() -> None:
    known = {"same": Known("x", 1, NOW), "edited": Known("old", 3, NOW - timedelta(days=1))}
    got = intents_of(
        [entry("same"), entry("edited", "new"), entry("fresh"), entry("deleted")], known, {"deleted"}
    )
    assert [n.entry.guid for n in got.new] == ["fresh"]
    assert [(r.entry.guid, r.revision) for r in got.revised] == [("edited", 4)]
    assert got.unchanged == ["same"] and got.gone == ["deleted"]
    assert sorted(got.seen) == ["edited", "same"]


def test_a_tombstone_wins_over_a_stored_row() -> None:
    got = intents_of([entry("a")], {"a": Known("x", 1, NOW)}, {"a"})
    assert got.gone == ["a"] and not got.new and not got.unchanged


def test_mark_realtime_uses_the_lookback_window_and_never_marks_a_first_poll() -> None:
    entries = [
        entry("fresh", published=NOW - timedelta(hours=1)),
        entry("old", published=NOW - timedelta(hours=49)),
        entry("undated", published=None),
        entry("far-future", published=NOW + timedelta(hours=2)),
    ]
    got = processors.run(intents_of(entries, {}, set()))
    assert {n.entry.guid: n.realtime for n in got.new} == {
        "fresh": True,
        "old": False,
        "undated": True,
        "far-future": False,
    }
    backfill = processors.run(intents_of(entries, {}, set(), first_poll=True))
    assert not any(n.realtime for n in backfill.new)


def test_a_registered_processor_runs_after_the_defaults_until_taken_out() -> None:
    remove = register_processor(drop_sponsored)
    try:
        assert processors.steps() == (*processors.DEFAULT, drop_sponsored)
    finally:
        remove()
    assert processors.steps() == processors.DEFAULT


def test_events_announce_only_what_storage_inserted() -> None:
    got = processors.run(
        intents_of([entry("a"), entry("b"), entry("c", "new")], {"c": Known("old", 1, NOW)}, set())
    )
    events = publish.events(got, inserted={"a": 1})
    assert [(e.payload["type"], e.payload["message"]["rss"]["guid"]) for e in events] == [
        ("MessageCreated", "a"),
        ("MessageUpdated", "c"),
    ]
    assert events[1].payload["message"]["rss"]["revision"] == 2


async def test_a_processor_hooked_into_the_poll_filters_before_storage_and_bus(
    host: Host, bus: BusReader, feed_server: FeedServer, sponsored_filter: None
) -> None:
    real = ("a", "Real news", ago(hours=1), "x")
    feed_server.route("/feed", Route(body=rss([real])))
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    items = [real, ("s", "Sponsored: buy this", ago(minutes=5), "ad")]
    feed_server.route("/feed", Route(body=rss(items)))
    await make_due(host)
    metrics = await poll(host)
    assert metrics.get("new", 0) == 0 and metrics["unchanged"] == 1
    guids = await host.require_pool().fetch("SELECT guid FROM mod_rss.entries WHERE feed_id = $1", feed.id)
    assert [r["guid"] for r in guids] == ["a"]
    events = await bus.all("feedeater.rss.messageCreated", expect=2, timeout=1)
    assert [e["message"]["rss"]["guid"] for e in events] == ["a"]
