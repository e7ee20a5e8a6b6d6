"""Seed 004's remainder: lookback grace, typical order, the per-feed summary line, WARN once per condition."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from host.runtime import Host
from modules.rss.ingest import order, processors, publish, summary
from modules.rss.ingest.poll import NO_DATES
from modules.rss.ingest.schedule import Decision
from tests.feedserver import FeedServer, Route, ago, rss
from tests.rss.test_intake import NOW, entry, intents_of
from tests.rss.test_poll import add, make_due, poll
from tests.services import BusReader

H = timedelta(hours=1)


@pytest.mark.parametrize(
    ("hours_ago", "expected"),
    [
        ([1, 2, 3, 4], "newest_first"),
        ([4, 3, 2, 1], "oldest_first"),
        ([1, 3, 2, 5, 4], "unordered"),
        ([100, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], "newest_first"),  # a pinned post on top
        ([1, 1, 2, None, 3], "newest_first"),  # ties and undated entries count for nothing
        ([1, 2], None),  # one step tells nothing
        ([1, 1, 1, 1], None),
        ([None, None], None),
    ],
)
def test_typical_order_from_the_dates_in_document_order(
    hours_ago: list[int | None], expected: str | None
) -> None:
    dates = [NOW - h * H if h is not None else None for h in hours_ago]
    assert order.typical_order(dates) == expected


def test_chronological_positions_undated_entries_by_the_feeds_order() -> None:
    dates = [NOW, None, NOW - 2 * H]  # newest first: the undated one sits between
    assert order.chronological(dates, "newest_first") == [2, 1, 0]
    assert order.chronological(dates, "oldest_first") == [0, 1, 2]
    assert order.chronological(dates, None) == [0, 1, 2]
    assert order.chronological(dates, "unordered") == [2, 0, 1]  # by date, undated (first seen now) last


def test_new_entries_are_announced_oldest_first() -> None:
    entries = [entry("c", published=NOW - H), entry("b", published=NOW - 2 * H), entry("a", published=None)]
    got = intents_of(entries, {}, set())
    got.typical_order = "newest_first"
    events = publish.events(processors.run(got), inserted={"a": 1, "b": 2, "c": 3})
    assert [e.payload["message"]["rss"]["guid"] for e in events] == ["a", "b", "c"]


def test_lookback_grace_widens_the_realtime_window() -> None:
    edge = [entry("inside-grace", published=NOW - 48 * H - timedelta(minutes=10))]
    edge.append(entry("past-grace", published=NOW - 48 * H - timedelta(minutes=20)))
    strict = processors.run(intents_of(edge, {}, set()))
    assert not any(n.realtime for n in strict.new)
    graced = intents_of(edge, {}, set())
    graced.grace_minutes = 15
    assert {n.entry.guid: n.realtime for n in processors.run(graced).new} == {
        "inside-grace": True,
        "past-grace": False,
    }


def test_summary_fields_and_message() -> None:
    decision = Decision(900.0, NOW + timedelta(minutes=20), "error-backoff", None)
    cutoff = NOW - timedelta(hours=48, minutes=15)
    f = summary.fields(
        run_id="42",
        feed_id=7,
        url="https://example.org/feed",
        status=503,
        counts={"new": 0},
        size=0,
        seconds=0.25,
        decision=decision,
        now=NOW,
        error="HTTP 503",
        cutoff=cutoff,
        lookback_hours=48,
        lookback_source="default",
    )
    assert f == {
        "run_id": "42",
        "feed_id": 7,
        "url": "https://example.org/feed",
        "status": 503,
        "etag_hit": False,
        "changed": False,
        "items": 0,
        "dated": 0,
        "undated": 0,
        "skipped": 0,
        "new": 0,
        "updated": 0,
        "unchanged": 0,
        "raw_same": 0,
        "cutoff": "2026-11-24T11:45:00.000Z",
        "lookback_hours": 48,
        "lookback": "default",
        "bytes": 0,
        "duration_ms": 250,
        "next_poll": "2026-11-26T12:20:00.000Z",
        "next_poll_in_s": 1200,
        "reason": "error-backoff",
        "error": "HTTP 503",
    }
    assert summary.message(f) == (
        "feed 7: 503 (HTTP 503); cutoff 2026-11-24T11:45:00.000Z (48 h, default);"
        " next poll in 20 min (error-backoff)"
    )


def test_summary_of_a_parsed_document_and_of_a_304() -> None:
    """Seed 004 §2.5: items, dated, undated, skipped; ETag hit or changed; the lookback and its source."""
    decision = Decision(900.0, NOW + timedelta(minutes=15), "new-entries+ewma", 3600.0)
    counts = {
        "items": 12,
        "dated": 10,
        "undated": 2,
        "skipped": 1,
        "filtered": 1,
        "new": 3,
        "unchanged": 9,
        "raw_same": 8,
    }
    common = dict(
        run_id="1", feed_id=3, url="u", size=10, seconds=0.1, decision=decision, now=NOW, error=None,
        cutoff=NOW - timedelta(hours=6), lookback_hours=6, lookback_source="override",
    )  # fmt: skip
    parsed = summary.fields(status=200, counts=counts, **common)  # type: ignore[arg-type]
    assert (parsed["etag_hit"], parsed["changed"], parsed["skipped"], parsed["raw_same"]) == (
        False,
        True,
        2,
        8,
    )
    assert summary.message(parsed) == (
        "feed 3: 200, 12 items (10 dated, 2 undated, 2 skipped), 3 new, 0 updated, 9 unchanged;"
        " cutoff 2026-11-26T06:00:00.000Z (6 h, override); next poll in 15 min (new-entries+ewma)"
    )
    hit = summary.fields(status=304, counts={}, **common)  # type: ignore[arg-type]
    assert (hit["etag_hit"], hit["changed"]) == (True, False)
    assert summary.message(hit).startswith("feed 3: 304 not modified; cutoff")


def _summaries(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "feedeater.rss.poll" and hasattr(r, "run_id")]


async def test_a_poll_stores_the_order_announces_oldest_first_and_logs_one_summary_per_feed(
    host: Host, bus: BusReader, feed_server: FeedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedeater.rss.poll")
    base = ago(hours=3)
    feed_server.route("/new", Route(body=rss([(g, g, base - i * H, "x") for i, g in enumerate("cba")])))
    feed_server.route("/down", Route(status=503))
    ordered = await add(host, feed_server.url("/new"))
    down = await add(host, feed_server.url("/down"))
    result = await host.run_job_once("rss.poll")
    await poll(host)  # relays the first run's events (nothing is due any more)
    pool = host.require_pool()
    assert await pool.fetchval("SELECT typical_order FROM mod_rss.feeds WHERE id = $1", ordered.id) == (
        "newest_first"
    )
    created = await bus.all("feedeater.rss.messageCreated", expect=3)
    assert [e["message"]["rss"]["guid"] for e in created] == ["a", "b", "c"]
    fetch_ids = {e["message"]["rss"]["fetchId"] for e in created}
    assert fetch_ids == {await pool.fetchval("SELECT max(id) FROM rss_public.raw_fetches")}

    lines = {r.feed_id: r for r in _summaries(caplog) if r.run_id == str(result.run_id)}
    assert set(lines) == {ordered.id, down.id}
    ok, failed = lines[ordered.id], lines[down.id]
    assert (ok.status, ok.new, ok.updated, ok.unchanged, ok.url) == (200, 3, 0, 0, ordered.url)
    assert ok.bytes > 0 and ok.reason and ok.next_poll.endswith("Z")
    assert (failed.status, failed.new, failed.error) == (503, 0, "HTTP 503 Service Unavailable")
    assert ok.levelno == logging.INFO


async def test_warnings_come_once_per_condition_and_again_after_it_cleared(
    host: Host, feed_server: FeedServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedeater.rss.poll")
    feed = await add(host, feed_server.url("/f"))

    def warnings(condition: str) -> int:
        """Lines about `condition`: a failing feed is a WARNING (act on it), a document the parser had to
        repair or date is INFO (the publisher's problem, handled); neither repeats its text in an extra
        field (issue #20 item 9: each line said it twice, `condition=…`)."""
        said = [
            r
            for r in caplog.records
            if hasattr(r, "check") and r.getMessage().startswith(f"feed {feed.id}: {condition}")
        ]
        assert all(not hasattr(r, "condition") for r in said)
        want = logging.WARNING if condition.startswith("failing") else logging.INFO
        assert all(r.levelno == want for r in said), [(r.levelname, r.getMessage()) for r in said]
        return len(said)

    async def poll_with(route: Route) -> None:
        feed_server.route("/f", route)
        await make_due(host)
        await poll(host)

    undated = [("u1", "one", None, "x")]
    await poll_with(Route(body=rss(undated)))
    await poll_with(Route(body=rss([*undated, ("u2", "two", None, "x")])))  # parsed again, still undated
    await poll_with(Route(status=500))
    await poll_with(Route(status=500))
    assert (warnings(NO_DATES), warnings("failing (500)")) == (1, 1)
    await poll_with(Route(body=rss([("d1", "dated", ago(hours=1), "x"), *undated])))  # both cleared
    await poll_with(Route(body=rss(undated)))
    await poll_with(Route(status=500))  # one failure is only in the summary line
    assert warnings("failing (500)") == 1
    await poll_with(Route(status=500))
    assert (warnings(NO_DATES), warnings("failing (500)")) == (2, 2)
    assert all(getattr(r, "feed_id", feed.id) == feed.id for r in caplog.records)
