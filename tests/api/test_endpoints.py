"""Every REST endpoint against a running host: real feeds fetched through the poll path, real database."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from host import contexts
from modules.rss.ingest.publish import CONTENT_HTML_MAX, context_key
from tests.api.conftest import Api
from tests.feedserver import FeedServer, Route, rss

START = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
ITEMS = [
    (f"g{i}", f"Story {i} about solar power", START + timedelta(hours=i), f"Body {i}") for i in range(25)
]
RSS = {"content-type": "application/rss+xml"}


def error_of(res: Any, status: int) -> dict[str, Any]:
    """The one JSON error shape, with the expected status."""
    assert res.status_code == status, res.text
    body: dict[str, Any] = res.json()
    assert set(body) == {"error", "fix"} and body["error"], body
    return body


@pytest.fixture(scope="module")
async def feed(api: Api, feeds: FeedServer) -> dict[str, Any]:
    """A feed subscribed through the API and fetched once through the API (25 entries)."""
    feeds.route("/alpha.xml", Route(body=rss(ITEMS, title="Alpha"), headers=RSS))
    res = await api.client.post(
        "/api/v1/feeds", json={"url": feeds.url("/alpha.xml"), "folder": "News"}, headers=api.auth
    )
    assert res.status_code == 201, res.text
    body: dict[str, Any] = res.json()
    fetched = await api.client.post(f"/api/v1/feeds/{body['id']}/refetch", headers=api.auth)
    assert fetched.status_code == 200, fetched.text
    assert fetched.json() == {"feeds": 1, "fetched": 1, "failed": {}, "deferred": {}, "new_entries": 25}
    return body


async def test_subscribe_is_idempotent_and_listed(api: Api, feeds: FeedServer, feed: dict[str, Any]) -> None:
    assert feed["title"] == "Alpha" and feed["folder"] == "News" and feed["state"] == "new"
    again = await api.client.post("/api/v1/feeds", json={"url": feeds.url("/alpha.xml")}, headers=api.auth)
    assert again.status_code == 200 and again.json()["id"] == feed["id"]
    listed = (await api.client.get("/api/v1/feeds", params={"folder": "News"})).json()
    assert [f["id"] for f in listed] == [feed["id"]]
    one = (await api.client.get(f"/api/v1/feeds/{feed['id']}")).json()
    assert one["entries"] == 25 and one["state"] == "ok" and one["last_status"] == 200


async def test_unknown_and_malformed_feed_ids(api: Api) -> None:
    error_of(await api.client.get("/api/v1/feeds/999999"), 404)
    error_of(await api.client.get("/api/v1/feeds/999999/entries"), 404)
    error_of(await api.client.delete("/api/v1/feeds/999999", headers=api.auth), 404)
    assert "feed_id" in error_of(await api.client.get("/api/v1/feeds/abc"), 422)["error"]
    error_of(await api.client.get("/api/v1/feeds/0"), 422)
    error_of(await api.client.get("/api/v1/no/such/thing"), 404)


async def test_entries_page_through_with_the_cursor(api: Api, feed: dict[str, Any]) -> None:
    seen: list[dict[str, Any]] = []
    cursor, pages = None, 0
    while True:
        params: dict[str, Any] = {"limit": 10} | ({"cursor": cursor} if cursor else {})
        page = (await api.client.get(f"/api/v1/feeds/{feed['id']}/entries", params=params)).json()
        seen += page["items"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and len(seen) == 25
    assert [e["title"] for e in seen] == [f"Story {i} about solar power" for i in reversed(range(25))]
    since = (START + timedelta(hours=20)).isoformat()
    recent = (await api.client.get(f"/api/v1/feeds/{feed['id']}/entries", params={"since": since})).json()
    assert len(recent["items"]) == 5 and recent["next_cursor"] is None


async def test_bad_cursor_and_bad_since(api: Api, feed: dict[str, Any]) -> None:
    url = f"/api/v1/feeds/{feed['id']}/entries"
    assert "cursor" in error_of(await api.client.get(url, params={"cursor": "not-a-cursor"}), 400)["error"]
    assert "since" in error_of(await api.client.get(url, params={"since": "yesterday-ish"}), 400)["error"]
    error_of(await api.client.get(url, params={"limit": 0}), 422)


async def test_entry_by_id_and_by_message_id(api: Api, feed: dict[str, Any]) -> None:
    page = (await api.client.get(f"/api/v1/feeds/{feed['id']}/entries", params={"limit": 1})).json()
    first = page["items"][0]
    by_id = (await api.client.get(f"/api/v1/entries/{first['id']}")).json()
    by_message = (await api.client.get(f"/api/v1/entries/{first['message_id']}")).json()
    assert by_id == by_message and by_id["content_text"] == "Body 24" and by_id["authors"]
    error_of(await api.client.get("/api/v1/entries/123456789"), 404)
    error_of(await api.client.get(f"/api/v1/entries/{uuid.uuid4()}"), 404)
    error_of(await api.client.get("/api/v1/entries/not-an-id"), 404)


async def test_mark_entries_and_list_unread_or_starred(api: Api, feed: dict[str, Any]) -> None:
    url = f"/api/v1/feeds/{feed['id']}/entries"
    first, second = (await api.client.get(url, params={"limit": 2})).json()["items"]
    marked = await api.client.patch(
        f"/api/v1/entries/{first['id']}", json={"read": True, "starred": True}, headers=api.auth
    )
    assert marked.status_code == 200, marked.text
    assert marked.json()["read_at"] and marked.json()["starred_at"]
    by_message = await api.client.patch(
        f"/api/v1/entries/{second['message_id']}", json={"read": True}, headers=api.auth
    )
    assert by_message.json()["read_at"] and by_message.json()["starred_at"] is None
    unread = (await api.client.get(url, params={"unread": "true", "limit": 100})).json()["items"]
    assert len(unread) == 23 and {first["id"], second["id"]}.isdisjoint(e["id"] for e in unread)
    starred = (await api.client.get(url, params={"starred": "true"})).json()["items"]
    assert [e["id"] for e in starred] == [first["id"]]
    # false clears, an absent field stays
    cleared = (
        await api.client.patch(f"/api/v1/entries/{first['id']}", json={"read": False}, headers=api.auth)
    ).json()
    assert cleared["read_at"] is None and cleared["starred_at"] == marked.json()["starred_at"]
    await api.client.patch(f"/api/v1/entries/{first['id']}", json={"starred": False}, headers=api.auth)
    await api.client.patch(f"/api/v1/entries/{second['id']}", json={"read": False}, headers=api.auth)
    assert len((await api.client.get(url, params={"unread": "true", "limit": 100})).json()["items"]) == 25
    error_of(await api.client.patch("/api/v1/entries/123456789", json={"read": True}, headers=api.auth), 404)
    error_of(
        await api.client.patch(f"/api/v1/entries/{first['id']}", json={"seen": True}, headers=api.auth), 422
    )
    error_of(await api.client.patch(f"/api/v1/entries/{first['id']}", json={"read": True}), 401)


async def test_raw_fetch_has_the_exact_headers_and_bytes(api: Api, feed: dict[str, Any]) -> None:
    raw_id = await api.host.require_pool().fetchval(
        "SELECT max(id) FROM mod_rss.raw_fetches WHERE feed_id = $1", feed["id"]
    )
    raw = (await api.client.get(f"/api/v1/raw/{raw_id}")).json()
    sent = rss(ITEMS, title="Alpha")
    assert base64.b64decode(raw["body_base64"]) == sent and raw["size"] == len(sent)
    assert raw["status"] == 200 and raw["headers"]["content-type"] == "application/rss+xml"
    body = await api.client.get(f"/api/v1/raw/{raw_id}/body")
    assert body.content == sent and body.headers["content-type"] == "application/octet-stream"
    assert body.headers["content-disposition"].startswith("attachment")
    error_of(await api.client.get("/api/v1/raw/987654321"), 404)


async def test_patch_overrides(api: Api, feed: dict[str, Any]) -> None:
    url = f"/api/v1/feeds/{feed['id']}"
    patched = await api.client.patch(
        url, json={"title": "Renamed", "interval_minutes": 30, "folder": "/Tech/"}, headers=api.auth
    )
    assert patched.status_code == 200, patched.text
    got = patched.json()
    assert (got["title"], got["interval_override_s"], got["folder"]) == ("Renamed", 1800, "Tech")
    reset = (await api.client.patch(url, json={"interval_minutes": None}, headers=api.auth)).json()
    assert reset["interval_override_s"] is None and reset["title"] == "Renamed"
    assert (
        "interval_minutes"
        in error_of(await api.client.patch(url, json={"interval_minutes": 0}, headers=api.auth), 422)["error"]
    )
    error_of(await api.client.patch(url, json={"colour": "red"}, headers=api.auth), 422)
    error_of(await api.client.patch("/api/v1/feeds/999999", json={"title": "x"}, headers=api.auth), 404)


async def test_search(api: Api, feed: dict[str, Any]) -> None:
    res = await api.client.get(
        "/api/v1/search", params={"q": "Story 7 about solar power", "feed": feed["id"]}
    )
    assert res.status_code == 200, res.text
    reply = res.json()
    assert reply["mode"] == "text" and reply["results"][0]["title"] == "Story 7 about solar power"
    error_of(await api.client.get("/api/v1/search"), 422)
    assert (
        "feed 999999"
        in error_of(await api.client.get("/api/v1/search", params={"q": "x", "feed": 999999}), 400)["error"]
    )


async def test_search_since_until(api: Api, feed: dict[str, Any]) -> None:
    async def titles(**params: str) -> list[str]:
        res = await api.client.get(
            "/api/v1/search", params={"q": "solar power", "feed": feed["id"], "limit": 100, **params}
        )
        assert res.status_code == 200, res.text
        return sorted(r["title"] for r in res.json()["results"])

    since, until = (START + timedelta(hours=20)).isoformat(), (START + timedelta(hours=22)).isoformat()
    assert await titles(since=since, until=until) == [f"Story {i} about solar power" for i in (20, 21, 22)]
    day = START.date()  # a bare date as until: every story of that day, not only those before its midnight
    on_day = sorted(
        f"Story {i} about solar power" for i, (_, _, at, _) in enumerate(ITEMS) if at.date() == day
    )
    assert await titles(until=day.isoformat()) == on_day
    swapped = error_of(
        await api.client.get("/api/v1/search", params={"q": "x", "since": until, "until": since}), 400
    )
    assert swapped["error"] == f"until={since!r} is before since={until!r}"
    assert (
        swapped["fix"] == "swap them: until must be on or after since; a date as until covers that whole day"
    )
    assert (
        "until"
        in error_of(await api.client.get("/api/v1/search", params={"q": "x", "until": "soon"}), 400)["error"]
    )
    described = {
        p["name"]: p
        for p in (await api.client.get("/openapi.json")).json()["paths"]["/api/v1/search"]["get"][
            "parameters"
        ]
    }
    assert "end of that day" in described["until"]["description"] and not described["until"]["required"]


async def test_bad_urls_are_refused_with_one_error(api: Api, feeds: FeedServer) -> None:
    add = "/api/v1/feeds"
    assert error_of(await api.client.post(add, json={"url": "ftp://example.org/x"}, headers=api.auth), 400)[
        "fix"
    ]
    feeds.route(
        "/page.html",
        Route(body=b"<html><body>no feed here</body></html>", headers={"content-type": "text/html"}),
    )
    error_of(await api.client.post(add, json={"url": feeds.url("/page.html")}, headers=api.auth), 400)
    error_of(await api.client.post(add, json={"url": ""}, headers=api.auth), 422)
    error_of(
        await api.client.post(
            add, content=b"{not json", headers=api.auth | {"content-type": "application/json"}
        ),
        422,
    )


async def test_opml_round_trip_and_bad_opml(api: Api, feed: dict[str, Any]) -> None:
    exported = await api.client.get("/api/v1/opml")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/x-opml")
    assert feed["url"].encode() in exported.content
    doc = b"""<?xml version="1.0"?><opml version="2.0"><head/><body><outline text="Py">
        <outline type="rss" text="One" xmlUrl="http://example.org/one.xml"/>
        <outline type="rss" text="Two" xmlUrl="http://example.org/two.xml"/></outline></body></opml>"""
    headers = api.auth | {"content-type": "text/x-opml"}
    first = await api.client.post("/api/v1/opml", content=doc, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json()["added"] == 2 and len(first.json()["feed_ids"]) == 2
    again = (await api.client.post("/api/v1/opml", content=doc, headers=headers)).json()
    assert again["added"] == 0 and again["already_present"] == 2
    error_of(await api.client.post("/api/v1/opml", content=b"<opml><body><outline", headers=headers), 400)
    for feed_id in first.json()["feed_ids"]:
        assert (await api.client.delete(f"/api/v1/feeds/{feed_id}", headers=api.auth)).status_code == 204
        error_of(await api.client.get(f"/api/v1/feeds/{feed_id}"), 404)


async def test_contexts(api: Api, feed: dict[str, Any]) -> None:
    key = context_key(feed["id"])
    emit = (await api.host.context("rss")).emit
    async with api.host.require_pool().acquire() as conn, conn.transaction():
        await contexts.update(
            conn,
            emit,
            module="rss",
            source_key=key,
            summary_short="Solar",
            summary_long="About solar.",
            key_points=["a"],
        )
    listed = (await api.client.get("/api/v1/contexts", params={"module": "rss"})).json()
    assert [c["source_key"] for c in listed] == [key]
    one = (await api.client.get(f"/api/v1/contexts/rss:{key}")).json()
    # the host linked each entry's MessageCreated to the feed's context (contextRef)
    assert one["summary_short"] == "Solar" and one["message_count"] == 25 and len(one["messages"]) == 20
    error_of(await api.client.get("/api/v1/contexts/rss:feed:999999"), 404)
    error_of(await api.client.get("/api/v1/contexts/nothing"), 404)


async def test_paging_neither_repeats_nor_skips_on_ties_or_new_entries(api: Api, feeds: FeedServer) -> None:
    same = START + timedelta(hours=1)
    items = [(f"t{i}", f"Tie {i}", same, "x") for i in range(7)]
    feeds.route("/ties.xml", Route(body=rss(items, title="Ties"), headers=RSS))
    feed = await api.client.post("/api/v1/feeds", json={"url": feeds.url("/ties.xml")}, headers=api.auth)
    feed_id = feed.json()["id"]
    await api.client.post(f"/api/v1/feeds/{feed_id}/refetch", headers=api.auth)
    url = f"/api/v1/feeds/{feed_id}/entries"
    first = (await api.client.get(url, params={"limit": 3})).json()
    # a newer entry arrives while the client pages: it belongs before the cursor, not in later pages
    newer = [("t-new", "Newer", START + timedelta(hours=2), "x"), *items]
    feeds.route("/ties.xml", Route(body=rss(newer, title="Ties"), headers=RSS))
    fetched = await api.client.post(f"/api/v1/feeds/{feed_id}/refetch", headers=api.auth)
    assert fetched.json()["new_entries"] == 1
    ids = [e["id"] for e in first["items"]]
    cursor = first["next_cursor"]
    while cursor:
        page = (await api.client.get(url, params={"limit": 3, "cursor": cursor})).json()
        ids += [e["id"] for e in page["items"]]
        cursor = page["next_cursor"]
    assert len(ids) == len(set(ids)) == 7  # the 7 tied entries, each once, the newer one not among them
    assert ids == sorted(ids, reverse=True)  # ties ordered by id, newest first


async def test_why_an_item_was_not_announced(api: Api, feed: dict[str, Any]) -> None:
    """Issue 27: the same explanation as `feedeater rss why` (tests/rss/test_explain.py)."""
    res = await api.client.get(f"/api/v1/feeds/{feed['id']}/why", params={"item": "g3"})
    assert res.status_code == 200, res.text
    got = res.json()
    assert (got["verdict"], got["reason"], got["announced"], got["listed"]) == (
        "not-announced",
        "first-poll",
        False,
        True,
    )
    assert got["guid"] == "g3" and got["fetch_id"] == got["last_fetch_id"] and got["entry_id"]
    assert got["lines"][0].startswith(f"feed {feed['id']} (")  # (its title, renamed by another test)
    by_id = (await api.client.get(f"/api/v1/feeds/{feed['id']}/why", params={"item": got["entry_id"]})).json()
    assert by_id["guid"] == "g3"
    unseen = (await api.client.get(f"/api/v1/feeds/{feed['id']}/why", params={"item": "nope"})).json()
    assert (unseen["verdict"], unseen["listed"]) == ("not-seen", False)
    error_of(await api.client.get("/api/v1/feeds/999999/why", params={"item": "g3"}), 404)
    error_of(await api.client.get(f"/api/v1/feeds/{feed['id']}/why"), 422)


async def test_a_lean_event_refers_to_the_whole_entry(api: Api, feeds: FeedServer) -> None:
    """Issue 25: the event carries at most CONTENT_HTML_MAX characters of HTML and `entryUrl`; that URL
    answers the whole sanitized HTML."""
    long = "".join(
        f"&lt;p&gt;Paragraph {i} of a long article about grid storage.&lt;/p&gt;" for i in range(80)
    )
    feeds.route("/long.xml", Route(body=rss([("long", "A long one", START, long)], title="L"), headers=RSS))
    res = await api.client.post("/api/v1/feeds", json={"url": feeds.url("/long.xml")}, headers=api.auth)
    fetched = await api.client.post(f"/api/v1/feeds/{res.json()['id']}/refetch", headers=api.auth)
    assert fetched.json()["new_entries"] == 1, fetched.text
    async with api.host.require_pool().acquire() as conn:
        payload = await conn.fetchval(
            "SELECT payload FROM host.outbox WHERE subject = 'feedeater.rss.messageCreated'"
            " AND convert_from(payload, 'UTF8')::jsonb #>> '{message,rss,guid}' = 'long'"
        )
    rss_key = json.loads(payload)["message"]["rss"]
    assert rss_key["contentTruncated"] and len(rss_key["contentHtml"]) <= CONTENT_HTML_MAX
    assert rss_key["contentHtml"].endswith("</p>")
    whole = (await api.client.get(rss_key["entryUrl"])).json()
    assert whole["id"] == rss_key["entryId"] and whole["title"] == "A long one"
    assert len(whole["content_html"]) > 4000 and whole["content_html"].startswith(rss_key["contentHtml"][:-4])
    assert whole["content_html"].count("<p>") == 80
