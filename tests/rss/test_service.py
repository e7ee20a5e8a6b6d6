"""The rss service layer (modules/rss/service): the decisions every front door shares, called directly,
on a real database and a real feed server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from host.errors import UserError
from host.runtime import Host
from modules.rss import store
from modules.rss.model import Entry
from modules.rss.service import cursor, entries, feeds
from modules.rss.service.search import search
from tests.feedserver import FeedServer, Route, ago, rss
from tests.rss.seed import ingest

NOW = datetime.now(UTC)


def row(**kw: Any) -> dict[str, Any]:
    base = {
        "dead": False,
        "enabled": True,
        "circuit": "closed",
        "consecutive_errors": 0,
        "last_status": 200,
        "stale": False,
        "last_polled_at": NOW,
    }
    return base | kw


@pytest.mark.parametrize(
    ("kw", "state"),
    [
        ({"dead": True, "enabled": False}, "dead"),
        ({"enabled": False, "consecutive_errors": 3}, "disabled"),
        ({"circuit": "open", "consecutive_errors": 5}, "circuit open (failing ×5)"),
        ({"circuit": "open"}, "circuit open"),
        ({"consecutive_errors": 2, "last_status": 403}, "forbidden ×2"),
        ({"consecutive_errors": 4, "last_status": 500, "stale": True}, "failing ×4 (stale)"),
        ({"last_polled_at": None}, "new"),
        ({}, "ok"),
    ],
)
def test_feed_state_says_the_first_thing_to_know(kw: dict[str, Any], state: str) -> None:
    assert feeds.feed_state(row(**kw)) == state


def test_not_pollable_names_the_fix() -> None:
    assert feeds.not_pollable(7, enabled=True, dead=False) is None
    dead = feeds.not_pollable(7, enabled=False, dead=True)
    assert dead is not None and dead[0] == "feed 7 is dead" and "rss set 7 enabled=true" in dead[1]
    disabled = feeds.not_pollable(7, enabled=False, dead=False)
    assert disabled is not None and disabled[0] == "feed 7 is disabled"


def test_changed_settings_keeps_only_what_differs() -> None:
    """The console's form sends every field: only the ones that differ from the row are written."""
    current = {"title": "T", "folder": None, "interval_override_s": 1800, "enabled": True, "full_text": False}
    changes = {"title": "T", "folder": "News", "interval": 1800, "enabled": False, "full_text": False}
    assert feeds.changed_settings(current, changes) == {"folder": "News", "enabled": False}


async def test_add_feed_applies_changes_to_new_feeds_and_to_existing_ones_only_when_asked(
    host: Host, feed_server: FeedServer
) -> None:
    feed_server.route("/feed", Route(body=rss([("g1", "One", ago(hours=1), "Body.")], title="Daily")))
    ctx = await host.context("rss")
    url = feed_server.url("/feed")
    first = await feeds.add_feed(ctx, url, folder="News", changes={"full_text": True})
    assert first.created and first.feed.folder == "News" and first.feed.full_text
    again = await feeds.add_feed(ctx, url, changes={"title": "Mine"})  # Miniflux: a duplicate changes nothing
    assert not again.created and again.feed.id == first.feed.id and again.feed.title == "Daily"
    renamed = await feeds.add_feed(ctx, url, changes={"title": "Mine"}, change_existing=True)  # Google Reader
    assert not renamed.created and renamed.feed.title == "Mine"
    with pytest.raises(UserError, match="too short"):
        await feeds.add_feed(ctx, url, interval_minutes=0.5)


async def test_remove_feeds_removes_all_or_nothing(host: Host) -> None:
    pool = host.require_pool()
    async with pool.acquire() as conn:
        a, _ = await store.add_feed(conn, url="http://example.org/a")
        b, _ = await store.add_feed(conn, url="http://example.org/b")

    async def no_context() -> Any:
        raise AssertionError("no feed was pushed: the module context is not needed")

    with pytest.raises(UserError, match="no feed"):
        await feeds.remove_feeds(pool, [a.id, "http://example.org/missing"], no_context)
    async with pool.acquire() as conn:
        assert len(await feeds.feed_rows(conn)) == 2
    assert await feeds.remove_feeds(pool, [a.id, "http://example.org/b"], no_context) == [a.id, b.id]
    async with pool.acquire() as conn:
        assert await feeds.feed_rows(conn) == []


async def test_pollable_refuses_disabled_feeds_and_names_each_once(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        a, _ = await store.add_feed(conn, url="http://example.org/a")
        b, _ = await store.add_feed(conn, url="http://example.org/b")
        assert await feeds.pollable(conn, [str(a.id), "http://example.org/a", b.id]) == [a.id, b.id]
        await store.update_feed(conn, b.id, {"enabled": False})
        with pytest.raises(UserError, match=f"feed {b.id} is disabled"):
            await feeds.pollable(conn, [a.id, b.id])


async def test_entry_pages_chain_by_cursor_and_an_unknown_feed_is_no_such_feed(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        feed, _ = await store.add_feed(conn, url="http://example.org/a", title="A")
        empty, _ = await store.add_feed(conn, url="http://example.org/empty")
        items = [
            Entry(
                guid=f"g{i}",
                guid_source="id",
                title=f"Story {i}",
                link=None,
                published=NOW - timedelta(hours=i),
            )
            for i in range(5)
        ]
        await ingest(conn, feed, items, now=NOW)
        first, token = await entries.page(conn, feed=feed.id, limit=2)
        second, token = await entries.page(conn, feed=feed.id, before=position(token), limit=2)
        last, token = await entries.page(conn, feed=feed.id, before=position(token), limit=2)
        assert [e["title"] for e in first + second + last] == [f"Story {i}" for i in range(5)]
        assert token is None
        by_id, _ = await entries.page(conn, feed="http://example.org/a", before=first[-1]["id"], limit=2)
        assert by_id == second  # an entry id as `before` (the CLI's --before), a URL as the feed
        assert await entries.page(conn, feed=empty.id, limit=2) == ([], None)
        with pytest.raises(entries.NoSuchFeed):
            await entries.page(conn, feed=10**9, limit=2)


def position(token: str | None) -> Any:
    """A next_cursor as the position the next page starts before."""
    assert token is not None, "a next page was expected"
    return cursor.decode(token)


async def test_mark_by_feed_and_missing_ids_are_named(host: Host) -> None:
    pool = host.require_pool()
    async with pool.acquire() as conn:
        feed, _ = await store.add_feed(conn, url="http://example.org/a", title="A")
        items = [
            Entry(guid=f"g{i}", guid_source="id", title=f"S{i}", link=None, published=NOW) for i in range(3)
        ]
        await ingest(conn, feed, items, now=NOW)
    marked = await entries.mark(pool, feed=feed.id, read=True, starred=None)
    assert len(marked) == 3
    async with pool.acquire() as conn:
        unread, _ = await entries.page(conn, feed=feed.id, unread=True, limit=10)
    assert unread == []
    with pytest.raises(UserError, match="no entry 999999"):
        await entries.mark(pool, entries=[marked[0], 999999], read=False, starred=None)


async def test_search_checks_the_request_before_searching(host: Host) -> None:
    ctx = await host.context("rss")
    with pytest.raises(UserError, match="JSON object"):
        await search(ctx.pool, ctx.ai, ["not", "an", "object"])
    with pytest.raises(UserError, match="query is missing"):
        await search(ctx.pool, ctx.ai, {"query": "  "})
