"""Issue 27: "why wasn't this item announced?" — the pure decision over stored facts, then the three front
doors (`feedeater rss why`, GET /api/v1/feeds/{id}/why — in tests/api — and the console's entry page) over
real polls of a real feed server."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from host.cli import main
from host.runtime import Host
from modules.rss.explain import why
from modules.rss.explain.decision import Document, Facts, FeedFacts, Skipped, StoredEntry, explain
from tests.feedserver import FeedServer, Route, ago, rss
from tests.rss.test_poll import add, make_due, poll
from tests.services import feedeater_env

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
FEED = FeedFacts(
    id=7, title="Example", url="https://example.com/feed", enabled=True, dead=False, lookback_hours=48,
    lookback_source="default", grace_minutes=15, successful_polls=3, next_poll_at=NOW + 12 * timedelta(minutes=1),
    interval_reason="not-modified+ewma",
)  # fmt: skip


def stored(**kw: object) -> StoredEntry:
    base = dict(
        id=55, guid="https://example.com/2", guid_source="id", link="https://example.com/2", title="Second",
        message_id="3f1c…", published=NOW - 3 * H, first_seen=NOW - 2 * H, last_seen=NOW - H, seen_count=3,
        revision=1, fetch_id=120, last_fetch_id=130, announced=True, intake_reason="realtime",
    )  # fmt: skip
    return StoredEntry(**(base | kw))  # type: ignore[arg-type]


LISTED = Document(130, NOW - H, listed=True, content_hash="h1")


# --- the decision (pure) -----------------------------------------------------------------------------------


def test_an_announced_entry_names_its_fetches_identity_and_the_next_poll() -> None:
    got = explain(Facts("https://example.com/2", FEED, NOW, stored(), document=LISTED, stored_hash="h1"))
    assert (got.verdict, got.reason, got.announced, got.listed) == ("announced", "realtime", True, True)
    assert (got.fetch_id, got.last_fetch_id, got.entry_id) == (120, 130, 55)
    text = "\n".join(got.lines)
    assert (
        "first 2026-03-02T10:00:00.000Z in fetch 120" in text
        and "last 2026-03-02T11:00:00.000Z in fetch 130" in text
    )
    assert "guid 'https://example.com/2' (from the feed's id)" in text
    assert "the current document carries it unchanged: nothing is announced" in text
    assert got.next_poll.startswith("next poll in 12 min at 2026-03-02T12:12:00.000Z (not-modified+ewma)")
    assert "never a second MessageCreated" in got.next_poll


def test_an_old_entry_was_before_the_cutoff_of_the_poll_that_first_saw_it() -> None:
    entry = stored(published=NOW - 100 * H, announced=False, intake_reason="before-cutoff")
    got = explain(Facts("x", FEED, NOW, entry, document=LISTED))
    assert (got.verdict, got.reason) == ("not-announced", "before-cutoff")
    # first seen 10:00 minus 48 h and the 15 min grace
    assert (
        "before the cutoff 2026-02-28T09:45:00.000Z (48 h lookback (default, +15 min grace))" in got.summary
    )


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("first-poll", "part of the feed's first poll"),
        ("archive-page", "RFC 5005 archive page"),
        ("future", "dated in the future"),
    ],
)
def test_recorded_reasons(reason: str, words: str) -> None:
    got = explain(Facts("x", FEED, NOW, stored(announced=False, intake_reason=reason)))
    assert (got.verdict, got.reason) == ("not-announced", reason) and words in got.summary


def test_entries_stored_before_decisions_were_recorded_are_inferred_from_their_dates() -> None:
    old = explain(Facts("x", FEED, NOW, stored(announced=None, intake_reason=None, published=NOW - 90 * H)))
    assert (old.reason, old.announced) == (
        "before-cutoff",
        False,
    ) and "inferred from its dates" in old.summary
    fresh = explain(Facts("x", FEED, NOW, stored(announced=None, intake_reason=None, fetch_id=None)))
    assert (fresh.reason, fresh.announced) == ("unknown", None)
    assert "seen: first 2026-03-02T10:00:00.000Z, last" in "\n".join(fresh.lines)  # no fetch to name


def test_an_item_the_feed_no_longer_lists_says_when_it_was_last_seen() -> None:
    gone = Document(131, NOW - H / 2, listed=False)
    got = explain(Facts("x", FEED, NOW, stored(), document=gone))
    assert got.listed is False
    text = "\n".join(got.lines)
    assert (
        "no longer listed: the current document (fetch 131 at 2026-03-02T11:30:00.000Z) does not carry it;"
        in text
    )
    assert "last seen 2026-03-02T11:00:00.000Z in fetch 130" in text
    assert got.next_poll.endswith("the item is no longer listed, so nothing will happen to it")


def test_a_revised_entry_and_a_changed_current_version() -> None:
    got = explain(Facts("x", FEED, NOW, stored(revision=3), document=LISTED, stored_hash="h0"))
    text = "\n".join(got.lines)
    assert "revised 2 times: each revision went out as MessageUpdated" in text
    assert "the current document carries a changed version" in text


def test_filtered_over_cap_deleted_unseen_and_duplicate_guids() -> None:
    skip = Skipped("g9", "filtered by the processor drop_sponsored", "Ad", 140, NOW - 2 * H, NOW - H)
    filtered = explain(Facts("g9", FEED, NOW, skipped=skip, document=Document(140, NOW - H, listed=True)))
    assert (filtered.verdict, filtered.reason) == ("not-stored", "filtered")
    assert "drop_sponsored" in filtered.summary
    capped = explain(Facts("g1", FEED, NOW, document=Document(140, NOW - H, over_cap=True)))
    assert (capped.verdict, capped.reason) == ("not-seen", "over-cap")
    assert "over the item cap" in "\n".join(capped.lines)
    deleted = explain(Facts("g2", FEED, NOW, tombstoned=True))
    assert (deleted.verdict, deleted.reason) == ("not-stored", "deleted")
    unseen = explain(Facts("g3", FEED, NOW, document=Document(140, NOW - H)))
    assert (unseen.verdict, unseen.reason, unseen.listed) == ("not-seen", "not-listed", False)
    assert "announced in real time when published after 2026-02-28T11:57:00.000Z" in unseen.next_poll
    new_feed = explain(Facts("g3", replace(FEED, successful_polls=0), NOW))
    assert new_feed.reason == "never-polled" and "first poll" in new_feed.next_poll
    copies = explain(Facts("x", FEED, NOW, stored(), document=replace(LISTED, copies=2)))
    assert "lists 3 items under this guid" in "\n".join(copies.lines)


def test_a_feed_that_is_not_polled_says_so() -> None:
    dead = explain(Facts("x", replace(FEED, dead=True), NOW, stored()))
    assert dead.next_poll.startswith("the feed answered 410 Gone")
    push = explain(Facts("x", replace(FEED, push_until=NOW + 9 * 24 * H, push_only=True), NOW, stored()))
    assert (
        "pushes new entries until 2026-03-11T12:00:00.000Z (push only: no polling meanwhile)"
        in push.next_poll
    )


# --- the facts from real polls, and `feedeater rss why` -----------------------------------------------------


async def test_why_over_real_polls_and_from_the_command_line(
    host: Host,
    feed_server: FeedServer,
    tmp_path: Path,
    database_url: str,
    nats_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sponsored_filter: None,
) -> None:
    backlog = ("old", "From the backlog", ago(days=3), "x")
    feed_server.route("/f", Route(body=rss([backlog])))
    feed = await add(host, feed_server.url("/f"))
    ctx = await host.context("rss")
    await poll(host)
    items = [("fresh", "Fresh", ago(hours=1), "y"), ("stale", "Stale", ago(days=5), "z"), ("ad", "Sponsored", ago(minutes=5), "buy")]  # fmt: skip
    feed_server.route("/f", Route(body=rss(items)))  # the backlog item is gone from the document
    await make_due(host)
    await poll(host)
    now = datetime.now(UTC)

    async def ask(item: str) -> tuple[str, str, bool | None]:
        async with host.require_pool().acquire() as conn:
            got = await why(conn, ctx.settings, feed.id, item, now=now, push=False)
        return got.verdict, got.reason, got.listed

    assert await ask("old") == ("not-announced", "first-poll", False)
    assert await ask("fresh") == ("announced", "realtime", True)
    assert await ask("http://example.org/stale") == ("not-announced", "before-cutoff", True)  # by link
    assert await ask("ad") == ("not-stored", "filtered", True)
    assert await ask("never-there") == ("not-seen", "not-listed", False)

    for key, value in feedeater_env(tmp_path, database_url, nats_url).items():
        monkeypatch.setenv(key, value)
    code = await asyncio.to_thread(main, ["rss", "why", str(feed.id), "old", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and (data["verdict"], data["reason"], data["guid"]) == (
        "not-announced",
        "first-poll",
        "old",
    )
    assert data["fetch_id"] and data["last_fetch_id"] == data["fetch_id"]  # seen in the first fetch only
    code = await asyncio.to_thread(main, ["rss", "why", str(feed.id), "fresh"])
    text = capsys.readouterr().out
    assert code == 0 and "announced in real time" in text and "listed in the feed's current document" in text
    code = await asyncio.to_thread(main, ["rss", "why", "999999", "fresh"])
    assert code == 2 and "no feed '999999'" in capsys.readouterr().err
