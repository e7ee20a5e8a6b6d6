"""RFC 5005 backfill: a 3-page archive chain on a real feed server, walked once on the backfill queue."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from host.errors import UserError
from host.runtime import Host
from modules.rss import cli as rss_cli
from tests.feedserver import FeedServer, Route, ago
from tests.rss.test_poll import add, poll
from tests.rss.test_websub import atom
from tests.services import BusReader

PAGES = {"/a3": "/a2", "/a2": "/a1", "/a1": None}  # page → the older archive it links (prev-archive)


def serve_archive(server: FeedServer, *, rel: str = "prev-archive") -> None:
    """The current document links /a3; each archive page holds two old entries and links the next older."""
    server.route(
        "/feed",
        Route(body=atom([("now", "Current", ago(minutes=5))], links=f"<link rel='{rel}' href='/a3'/>")),
    )
    for page, older in PAGES.items():
        links = f"<link rel='{rel}' href='{older}'/>" if older else ""
        links += "<link rel='current' href='/feed'/><link rel='next-archive' href='/feed'/>"
        server.route(
            page,
            Route(
                body=atom([(f"{page[1:]}-{n}", f"Old {page} {n}", ago(days=30)) for n in (1, 2)], links=links)
            ),
        )


async def walk_state(host: Host, feed_id: int) -> dict[str, Any]:
    row = await host.require_pool().fetchrow("SELECT * FROM mod_rss.backfill WHERE feed_id = $1", feed_id)
    assert row is not None
    return dict(row)


async def guids(host: Host, feed_id: int) -> list[str]:
    rows = await host.require_pool().fetch(
        "SELECT guid FROM mod_rss.entries WHERE feed_id = $1 ORDER BY guid", feed_id
    )
    return [r["guid"] for r in rows]


async def test_a_polled_archive_chain_is_walked_once_and_never_realtime(
    host: Host, feed_server: FeedServer
) -> None:
    serve_archive(feed_server)
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)  # first poll: sees prev-archive and queues the walk
    assert (await walk_state(host, feed.id))["state"] == "queued"
    result = await host.run_job_once("rss.backfill")
    assert result.status == "ok" and result.metrics["pages"] == 3 and result.metrics["new"] == 6
    st = await walk_state(host, feed.id)
    assert (st["state"], st["pages_done"], st["entries_new"], st["next_url"]) == ("done", 3, 6, None)
    assert await guids(host, feed.id) == ["a1-1", "a1-2", "a2-1", "a2-2", "a3-1", "a3-2", "now"]
    await poll(host)  # drains the outbox too
    assert host.js is not None
    created = await BusReader(host.js).all("feedeater.rss.messageCreated", expect=7)
    archived = [e["message"] for e in created if e["message"]["rss"]["guid"] != "now"]
    assert len(archived) == 6 and not any(m["realtime"] for m in archived)

    # Walked once: later polls and runs fetch no archive page again.
    await host.require_pool().execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")
    await poll(host)
    assert (await host.run_job_once("rss.backfill")).metrics.get("pages", 0) == 0
    assert [len(feed_server.requests_to(p)) for p in PAGES] == [1, 1, 1]


async def test_an_interrupted_walk_resumes_at_its_page_and_the_page_bound_holds(
    host: Host, feed_server: FeedServer
) -> None:
    serve_archive(feed_server, rel="next")  # a paged feed (RFC 5005 §3): `next` leads to older pages
    good = feed_server.route_for("/a2")
    feed_server.route("/a2", Route(status=500))
    feed = await add(host, feed_server.url("/feed"))
    await poll(host)
    await host.require_pool().execute("UPDATE mod_rss.backfill SET max_pages = 2")  # rss.backfill_max_pages
    first = await host.run_job_once("rss.backfill")
    assert first.metrics["pages"] == 1 and first.metrics["page_errors"] == 1
    st = await walk_state(host, feed.id)
    assert (st["state"], st["pages_done"], st["attempts"]) == ("queued", 1, 1)
    assert st["next_url"] == feed_server.url("/a2") and "500" in st["last_error"]
    assert st["due_at"] > st["requested_at"]  # backs off before retrying

    feed_server.route("/a2", good)
    await host.require_pool().execute("UPDATE mod_rss.backfill SET due_at = now()")
    second = await host.run_job_once("rss.backfill")
    assert second.metrics["pages"] == 1  # the bound: 2 pages in all
    st = await walk_state(host, feed.id)
    assert (st["state"], st["pages_done"], st["next_url"]) == ("done", 2, feed_server.url("/a1"))
    assert len(feed_server.requests_to("/a3")) == 1  # resumed at /a2, not from the start
    assert feed_server.requests_to("/a1") == []
    assert await guids(host, feed.id) == ["a2-1", "a2-2", "a3-1", "a3-2", "now"]


async def test_rss_backfill_walks_by_hand_and_explains_a_feed_without_archive(
    host: Host, feed_server: FeedServer
) -> None:
    serve_archive(feed_server)
    feed_server.route("/plain", Route(body=atom([("x", "X", ago(hours=1))])))
    feed = await add(host, feed_server.url("/feed"))
    data, text = await rss_cli._backfill(host, argparse.Namespace(feed=str(feed.id), max_pages=2))
    assert data == {
        "feed": feed.id,
        "rel": "prev-archive",
        "pages": 2,
        "new": 4,
        "state": "done",
        "next_url": feed_server.url("/a1"),
        "last_error": None,
    }
    assert text(data) == f"feed {feed.id}: walked 2 archive pages along prev-archive, 4 new; done"
    again, _ = await rss_cli._backfill(host, argparse.Namespace(feed=str(feed.id), max_pages=None))
    assert (again["pages"], again["new"], again["state"]) == (3, 2, "done")  # by hand walks again, in full
    shown, show_text = await rss_cli._show(host, argparse.Namespace(feed=str(feed.id)))
    assert shown["backfill"]["state"] == "done"
    assert "archive:      done: 3 pages along prev-archive" in show_text(shown)
    plain = await add(host, feed_server.url("/plain"))
    with pytest.raises(UserError, match="links no archive"):
        await rss_cli._backfill(host, argparse.Namespace(feed=str(plain.id), max_pages=None))
    with pytest.raises(UserError, match="not a page count"):
        await rss_cli._backfill(host, argparse.Namespace(feed=str(feed.id), max_pages=0))
