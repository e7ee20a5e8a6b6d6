"""The Miniflux API v1 driven by the official `miniflux` client from PyPI (which no one here wrote),
against a running host: authentication (login and password, API token, wrong ones), feeds, categories
(folders), entries with status/starred filters, ordering and paging, status changes, the bookmark
toggle, mark-all-as-read, refresh, OPML; every change checked where feedeater keeps it (the CLI)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
import miniflux
import pytest

from tests.api.conftest import Api
from tests.feedserver import FeedServer
from tests.reader.conftest import Cli, add_feed, starred_in_cli, unread_in_cli

T = TypeVar("T")


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """The client blocks; the host under test runs on this event loop."""
    return await asyncio.to_thread(fn, *args, **kwargs)


@pytest.fixture(scope="module")
def client(api: Api, login: tuple[str, str]) -> miniflux.Client:
    return miniflux.Client(api.base, username=login[0], password=login[1], timeout=60)


async def test_credentials_login_token_and_refusals(api: Api, client: miniflux.Client) -> None:
    assert (await call(client.me))["username"] == "reader"
    with_token = miniflux.Client(api.base, api_key=api.token)
    assert (await call(with_token.me))["id"] == 1
    for wrong in (
        miniflux.Client(api.base, username="reader", password="not the password"),
        miniflux.Client(api.base, username="nobody", password="whatever-password"),
        miniflux.Client(api.base, api_key="fe_not-a-token"),
    ):
        with pytest.raises(miniflux.AccessUnauthorized) as refused:
            await call(wrong.get_feeds)
        assert "feedeater api login set" in str(refused.value)  # the fix, in Miniflux's error_message
    # No credentials at all: even reads on loopback need one here (unlike the REST API's reads).
    bare = await api.client.get("/v1/feeds")
    assert bare.status_code == 401 and bare.headers["www-authenticate"].startswith("Basic")
    assert "error_message" in bare.json()


async def test_feeds_categories_and_entries_as_miniflux_shapes_them(
    api: Api, feeds: FeedServer, client: miniflux.Client
) -> None:
    feed = await add_feed(api, feeds, "shapes", 3, folder="Science")
    listed = {f["id"]: f for f in await call(client.get_feeds)}
    got = listed[feed.id]
    assert got["feed_url"] == feed.url and got["title"] == "Shapes" and got["disabled"] is False
    categories = {c["title"]: c["id"] for c in await call(client.get_categories)}
    assert got["category"] == {
        "id": categories["Science"],
        "title": "Science",
        "user_id": 1,
        "hide_globally": False,
    }
    assert "All" in categories  # the feeds without a folder
    assert [f["id"] for f in await call(client.get_category_feeds, categories["Science"])] == [feed.id]

    page = await call(client.get_feed_entries, feed.id, direction="desc")
    assert page["total"] == 3 and [e["id"] for e in page["entries"]] == feed.entries
    entry = page["entries"][0]
    assert entry["status"] == "unread" and entry["starred"] is False and entry["feed_id"] == feed.id
    assert entry["title"] == "shapes item 0" and entry["url"] == "http://example.org/shapes-0"
    assert "text 0" in entry["content"] and entry["feed"]["id"] == feed.id
    assert entry["published_at"].endswith("Z") and entry["author"] == "Ann"
    assert (await call(client.get_entry, entry["id"]))["id"] == entry["id"]
    assert (await call(client.get_feed_entry, feed.id, entry["id"]))["id"] == entry["id"]
    with pytest.raises(miniflux.ResourceNotFound):
        await call(client.get_feed, 987654)

    # Paging as apps page: offset/limit with the total, oldest first by default (Miniflux's default).
    first = await call(client.get_feed_entries, feed.id, limit=2, offset=0)
    rest = await call(client.get_feed_entries, feed.id, limit=2, offset=2)
    assert first["total"] == rest["total"] == 3
    assert [e["id"] for e in first["entries"] + rest["entries"]] == feed.entries[::-1]
    by_id = await call(client.get_entries, feed_id=feed.id, order="id", direction="desc", limit=1)
    assert by_id["entries"][0]["id"] == max(feed.entries)
    with pytest.raises(miniflux.BadRequest):
        await call(client.get_entries, order="category_title")
    with pytest.raises(miniflux.BadRequest):
        await call(client.get_entries, feed_id=987654)


async def test_status_and_bookmark_changes_are_feedeaters_own_state(
    api: Api, feeds: FeedServer, client: miniflux.Client, cli: Cli
) -> None:
    feed = await add_feed(api, feeds, "status", 4)
    newest, second, third, oldest = feed.entries
    assert await unread_in_cli(cli, feed) == set(feed.entries)

    await call(client.update_entries, [newest, second], status="read")
    assert await unread_in_cli(cli, feed) == {third, oldest}
    unread = await call(client.get_feed_entries, feed.id, status="unread")
    read = await call(client.get_feed_entries, feed.id, status="read")
    assert {e["id"] for e in unread["entries"]} == {third, oldest} and read["total"] == 2
    await call(client.update_entries, [second], status="unread")
    assert await unread_in_cli(cli, feed) == {second, third, oldest}
    with pytest.raises(miniflux.BadRequest):  # feedeater keeps no "removed" status
        await call(client.update_entries, [third], status="removed")

    await call(client.toggle_bookmark, third)
    assert await starred_in_cli(cli, feed) == {third}
    starred = await call(client.get_entries, feed_id=feed.id, starred=True)
    assert [e["id"] for e in starred["entries"]] == [third] and starred["entries"][0]["starred"] is True
    await call(client.toggle_bookmark, third)
    assert await starred_in_cli(cli, feed) == set()
    with pytest.raises(miniflux.ResourceNotFound):
        await call(client.toggle_bookmark, 987654)

    counters = await call(client.get_feed_counters)
    assert counters["unreads"][str(feed.id)] == 3 and counters["reads"][str(feed.id)] == 1
    await call(client.mark_feed_entries_as_read, feed.id)
    assert await unread_in_cli(cli, feed) == set()
    # A change made by the CLI is what the client sees next.
    assert await cli("rss", "mark", str(oldest), "--unread", "--star")
    after = await call(client.get_entries, feed_id=feed.id, status="unread")
    assert [(e["id"], e["starred"]) for e in after["entries"]] == [(oldest, True)]


async def test_categories_are_folders(
    api: Api, feeds: FeedServer, client: miniflux.Client, login: tuple[str, str], cli: Cli
) -> None:
    feed = await add_feed(api, feeds, "folders", 2)
    created = await call(client.create_category, "Reading")
    with pytest.raises(miniflux.BadRequest):
        await call(client.create_category, "Reading")
    await call(client.update_feed, feed.id, category_id=created["id"], title="Renamed", crawler=True)
    shown = await cli("rss", "show", str(feed.id))
    assert shown["folder"] == "Reading" and shown["title"] == "Renamed" and shown["full_text"] is True
    counted = await api.client.get("/v1/categories", params={"counts": "true"}, auth=httpx.BasicAuth(*login))
    reading = next(c for c in counted.json() if c["id"] == created["id"])
    assert (reading["feed_count"], reading["total_unread"]) == (1, 2)
    await call(client.mark_category_entries_as_read, created["id"])
    assert await unread_in_cli(cli, feed) == set()
    renamed = await call(client.update_category, created["id"], "Later")
    assert renamed == {"id": created["id"], "title": "Later", "user_id": 1, "hide_globally": False}
    assert (await cli("rss", "show", str(feed.id)))["folder"] == "Later"
    await call(client.delete_category, created["id"])  # the feed stays, without a folder
    assert (await cli("rss", "show", str(feed.id)))["folder"] is None
    assert created["id"] not in {c["id"] for c in await call(client.get_categories)}


async def test_subscribe_refresh_unsubscribe_and_opml(
    api: Api, feeds: FeedServer, client: miniflux.Client, cli: Cli
) -> None:
    from tests.feedserver import Route, rss
    from tests.reader.conftest import RSS, items

    feeds.route("/via-client.xml", Route(body=rss(items("client", 2), title="Via client"), headers=RSS))
    feed_id = await call(client.create_feed, feeds.url("/via-client.xml"))
    with pytest.raises(miniflux.BadRequest):  # Miniflux refuses a duplicate
        await call(client.create_feed, feeds.url("/via-client.xml"))
    before = len(feeds.requests_to("/via-client.xml"))
    assert await call(client.refresh_feed, feed_id)
    assert len(feeds.requests_to("/via-client.xml")) == before + 1  # refreshed now, not later
    assert len(await cli("rss", "entries", str(feed_id))) == 2
    opml = await call(client.export_feeds)
    assert feeds.url("/via-client.xml") in opml
    await call(client.delete_feed, feed_id)
    assert feed_id not in {f["id"] for f in await call(client.get_feeds)}
    with pytest.raises(miniflux.BadRequest):
        await call(client.create_feed, feeds.url("/nothing-here.xml"))  # the same check as `rss add`


async def test_json_bodies_are_read_whatever_their_content_type(
    api: Api, feeds: FeedServer, login: tuple[str, str]
) -> None:
    """newsboat (curl) labels its JSON as a form; Miniflux reads it all the same, and so do we."""
    feed = await add_feed(api, feeds, "curlish", 1)
    res = await api.client.put(
        "/v1/entries",
        content=f'{{"entry_ids":[{feed.entries[0]}],"status":"read"}}',
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        auth=httpx.BasicAuth(*login),
    )
    assert res.status_code == 204, res.text
    bad = await api.client.put("/v1/entries", content="{", auth=httpx.BasicAuth(*login))
    assert bad.status_code == 400 and bad.json()["error_message"]


async def test_logins_from_the_cli(api: Api, cli: Cli) -> None:
    """`feedeater api login set NAME` (password on stdin), list, a new password, remove."""
    assert (await cli("api", "login", "set", "phone", stdin="first-password\n"))["created"] is True
    assert "phone" in {r["name"] for r in await cli("api", "login", "list")}
    phone = miniflux.Client(api.base, username="phone", password="first-password")
    assert (await call(phone.me))["username"] == "phone"
    old = await api.client.post("/accounts/ClientLogin", data={"Email": "phone", "Passwd": "first-password"})
    old_token = dict(line.split("=", 1) for line in old.text.splitlines())["Auth"]
    assert (await cli("api", "login", "set", "phone", stdin="second-password\n"))["created"] is False
    with pytest.raises(miniflux.AccessUnauthorized):
        await call(phone.me)
    revoked = await api.client.get(
        "/reader/api/0/token", headers={"Authorization": f"GoogleLogin auth={old_token}"}
    )
    assert revoked.status_code == 401  # a new password revokes the app tokens given before
    assert await cli("api", "login", "remove", "phone")
    with pytest.raises(miniflux.AccessUnauthorized):
        await call(miniflux.Client(api.base, username="phone", password="second-password").me)
    code, err = await cli("api", "login", "set", "two words", stdin="whatever-password\n")
    assert code == 2 and "not usable" in err
    code, err = await cli("api", "login", "set", "shorty", stdin="short\n")
    assert code == 2 and "shorter than 8" in err


async def test_hostile_input_never_makes_a_5xx(api: Api, login: tuple[str, str]) -> None:
    """Out-of-range numbers, NULs, garbage ids and timestamps through both protocols: a refusal, or
    (a feed id that does not exist as a stream) an empty answer, never a server error."""
    auth = httpx.BasicAuth(*login)
    huge = str(10**30)
    requests = [
        ("GET", "/v1/entries", {"after": huge}),
        ("GET", "/v1/entries", {"feed_id": huge}),
        ("GET", "/v1/entries", {"category_id": "99999999999"}),
        ("GET", "/v1/entries", {"before_entry_id": huge}),
        ("GET", "/v1/entries", {"search": "a\x00b"}),
        ("GET", "/v1/categories/99999999999/entries", {}),
        ("GET", "/v1/feeds/9223372036854775807", {}),
        ("GET", "/reader/api/0/stream/contents/feed/99999999999999999999999", {}),
        ("GET", "/reader/api/0/stream/items/ids", {"s": "user/-/state/com.google/reading-list", "ot": huge}),
        ("GET", "/reader/api/0/stream/items/ids", {"s": "user/-/label/a\x00b"}),
        ("GET", "/reader/api/0/stream/contents/user/-/state/com.google/reading-list", {"c": "!!", "n": "x"}),
        (
            "POST",
            "/reader/api/0/edit-tag",
            {"i": "tag:google.com,2005:reader/item/zz", "a": "user/-/state/com.google/read"},
        ),
        ("POST", "/reader/api/0/mark-all-as-read", {"s": "feed/1", "ts": huge}),
        ("POST", "/reader/api/0/subscription/edit", {"ac": "edit", "s": "feed/1", "a": "user/-/label/\x00"}),
    ]
    for method, path, params in requests:
        if method == "GET":
            res = await api.client.get(path, params=params, auth=auth)
        else:
            res = await api.client.post(path, data=params, auth=auth)
        assert res.status_code < 500, (method, path, params, res.status_code, res.text)
        assert res.status_code >= 400 or path.endswith("9" * 23), (method, path, params, res.text)
