"""The Google Reader API (FreshRSS/BazQux dialect) against a running host, three ways: the PyPI client
libgreader (pointed at this server: it predates configurable servers), a replay of the requests a
mobile app sends when it syncs (as Reeder, NetNewsWire and ReadYou do against FreshRSS and Miniflux:
login, token, lists, unread ids, contents by id, edits, mark-all-as-read with a timestamp), and the
Atom streams newsboat's "feedhq" source reads. Every change is checked where feedeater keeps it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from lxml import etree

from modules.rss.reader.greaderwire import ITEM_PREFIX
from tests.api.conftest import Api
from tests.feedserver import FeedServer, Route, rss
from tests.reader.conftest import RSS, Cli, add_feed, items, starred_in_cli, unread_in_cli

READ, STARRED, READING_LIST = (f"user/-/state/com.google/{s}" for s in ("read", "starred", "reading-list"))


class App:
    """A mobile app's HTTP conversation: form posts, GoogleLogin header, the T token on edits."""

    def __init__(self, api: Api) -> None:
        self.client, self.auth, self.token = api.client, "", ""

    async def login(self, user: str, password: str) -> httpx.Response:
        res = await self.client.post(
            "/accounts/ClientLogin",
            data={"Email": user, "Passwd": password, "service": "reader", "accountType": "HOSTED_OR_GOOGLE"},
        )
        if res.status_code == 200:
            lines = dict(line.split("=", 1) for line in res.text.splitlines() if "=" in line)
            self.auth = lines["Auth"]
        return res

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"GoogleLogin auth={self.auth}"}

    async def get(self, path: str, **params: Any) -> Any:
        res = await self.client.get(
            f"/reader/api/0/{path}", params={"output": "json", **params}, headers=self.headers
        )
        assert res.status_code == 200, (path, res.status_code, res.text)
        return res.json()

    async def post(self, path: str, data: list[tuple[str, str]]) -> httpx.Response:
        return await self.client.post(
            f"/reader/api/0/{path}",
            content=str(httpx.QueryParams([*data, ("T", self.token)])).encode(),
            headers={**self.headers, "Content-Type": "application/x-www-form-urlencoded"},
        )


def long_id(entry_id: int) -> str:
    return f"{ITEM_PREFIX}{entry_id:016x}"


async def test_replay_of_a_mobile_app_sync(
    api: Api, feeds: FeedServer, login: tuple[str, str], cli: Cli
) -> None:
    tech = await add_feed(api, feeds, "replay", 5, folder="Tech")
    app = App(api)
    # 1. Login, the action token, the account.
    assert (await app.login(login[0], "wrong password")).status_code == 401
    res = await app.login(*login)
    assert res.status_code == 200 and res.text.startswith("SID=") and app.auth.startswith("reader/")
    token = await app.client.get("/reader/api/0/token", headers=app.headers)
    assert token.status_code == 200 and token.text
    app.token = token.text.strip()
    info = await app.get("user-info")
    assert info["userName"] == "reader" and info["userId"]

    # 2. Folders, subscriptions, unread counts.
    tags = {t["id"] for t in (await app.get("tag/list"))["tags"]}
    assert {STARRED, "user/-/label/Tech"} <= tags
    subs = {s["id"]: s for s in (await app.get("subscription/list"))["subscriptions"]}
    sub = subs[f"feed/{tech.id}"]
    assert sub["url"] == tech.url and sub["title"] == "Replay"
    assert sub["categories"] == [{"id": "user/-/label/Tech", "label": "Tech", "type": "folder"}]
    counts = {c["id"]: c["count"] for c in (await app.get("unread-count"))["unreadcounts"]}
    assert counts[f"feed/{tech.id}"] == 5 and counts["user/-/label/Tech"] >= 5 and counts[READING_LIST] >= 5

    # 3. Unread ids, paged by continuation (short decimal ids), and starred ids.
    refs: list[str] = []
    params = {"s": f"feed/{tech.id}", "xt": READ, "n": "2"}
    while True:
        page = await app.get("stream/items/ids", **params)
        refs += [r["id"] for r in page["itemRefs"]]
        if "continuation" not in page:
            break
        params["c"] = page["continuation"]
    assert refs == [str(i) for i in tech.entries]  # newest first, each once
    mine = {str(i) for i in tech.entries}
    assert not {r["id"] for r in (await app.get("stream/items/ids", s=STARRED, n="1000"))["itemRefs"]} & mine

    # 4. Their contents, by id (a POST of repeated i=, short and long forms mixed).
    wanted = [("i", refs[0]), ("i", long_id(tech.entries[1]))]
    res = await app.post("stream/items/contents", wanted)
    assert res.status_code == 200, res.text
    got = res.json()["items"]
    assert [g["id"] for g in got] == [long_id(i) for i in tech.entries[:2]]
    first = got[0]
    assert first["title"] == "replay item 0" and first["origin"]["streamId"] == f"feed/{tech.id}"
    assert "text 0" in first["summary"]["content"] and first["alternate"][0]["href"].endswith("/replay-0")
    assert READING_LIST in first["categories"] and "user/-/label/Tech" in first["categories"]
    assert READ not in first["categories"] and int(first["timestampUsec"]) > 0

    # 5. Edits: read (long id), starred (short id), then unread again; seen by the CLI.
    for data in (
        [("i", long_id(tech.entries[0])), ("a", READ), ("ac", "edit")],
        [("i", str(tech.entries[1])), ("a", STARRED), ("a", READ)],
        [("i", str(tech.entries[1])), ("r", READ)],
    ):
        res = await app.post("edit-tag", data)
        assert res.status_code == 200 and res.text == "OK", res.text
    assert await unread_in_cli(cli, tech) == set(tech.entries[1:])
    assert await starred_in_cli(cli, tech) == {tech.entries[1]}
    starred = await app.get("stream/items/ids", s=STARRED, n="1000")
    assert {r["id"] for r in starred["itemRefs"]} & mine == {str(tech.entries[1])}

    # 6. Stream contents, oldest first, paged; the read/starred state in the categories.
    seen: list[dict[str, Any]] = []
    params = {"n": "2", "r": "o"}
    while True:
        page = await app.get(f"stream/contents/feed/{tech.id}", **params)
        seen += page["items"]
        if "continuation" not in page:
            break
        params["c"] = page["continuation"]
    assert [s["id"] for s in seen] == [long_id(i) for i in reversed(tech.entries)]
    state = {s["id"]: s["categories"] for s in seen}
    assert READ in state[long_id(tech.entries[0])] and STARRED in state[long_id(tech.entries[1])]
    by_url = await app.get(f"stream/contents/feed/{quote(tech.url, safe='')}", n="100")  # feed/<its URL>
    assert [s["id"] for s in by_url["items"]] == [long_id(i) for i in tech.entries]
    label = await app.get("stream/contents/user/-/label/Tech", n="100", xt=READ)
    assert long_id(tech.entries[0]) not in {s["id"] for s in label["items"]}

    # 7. Mark all as read up to the moment the app last synced: what arrived later stays unread.
    synced = time.time_ns() // 1000  # µs, as Reeder sends it
    await asyncio.sleep(0.01)
    feeds.route("/replay.xml", Route(body=rss(items("late", 1) + items("replay", 5)), headers=RSS))
    assert (await api.client.post(f"/api/v1/feeds/{tech.id}/refetch", headers=api.auth)).status_code == 200
    late = await api.host.require_pool().fetchval("SELECT id FROM mod_rss.entries WHERE guid = 'late-0'")
    res = await app.post("mark-all-as-read", [("s", f"feed/{tech.id}"), ("ts", str(synced))])
    assert res.status_code == 200 and res.text == "OK"
    assert await unread_in_cli(cli, tech) == {late}

    # 8. Refusals, in the protocol's own terms.
    no_auth = await app.client.get("/reader/api/0/subscription/list")
    assert no_auth.status_code == 401 and no_auth.headers["google-bad-token"] == "true"
    forged = await app.client.get(
        "/reader/api/0/tag/list", headers={"Authorization": "GoogleLogin auth=reader/0000"}
    )
    assert forged.status_code == 401
    # A POST without the header may carry the login token as T (Miniflux accepts that); a wrong one is refused.
    t_only = await app.client.post(
        "/reader/api/0/edit-tag", data={"i": str(late), "a": STARRED, "T": app.auth}
    )
    assert t_only.status_code == 200 and await starred_in_cli(cli, tech) >= {late}
    wrong_t = await app.client.post(
        "/reader/api/0/edit-tag", data={"i": str(late), "r": STARRED, "T": "reader/00"}
    )
    assert wrong_t.status_code == 401
    bad = await app.client.get("/reader/api/0/stream/contents/nonsense", headers=app.headers)
    assert bad.status_code == 400 and "unknown stream" in bad.text


async def test_subscriptions_and_folders_through_the_api(
    api: Api, feeds: FeedServer, login: tuple[str, str], cli: Cli
) -> None:
    app = App(api)
    await app.login(*login)
    feeds.route("/quick.xml", Route(body=rss(items("quick", 2), title="Quick"), headers=RSS))
    res = await app.post("subscription/quickadd", [("quickadd", feeds.url("/quick.xml"))])
    assert res.status_code == 200, res.text
    added = res.json()
    assert added["numResults"] == 1 and added["streamId"].startswith("feed/")
    feed_id = int(added["streamId"].removeprefix("feed/"))
    res = await app.post(
        "subscription/edit",
        [("ac", "edit"), ("s", f"feed/{feed_id}"), ("t", "Quick, renamed"), ("a", "user/-/label/News")],
    )
    assert res.text == "OK", res.text
    shown = await cli("rss", "show", str(feed_id))
    assert shown["title"] == "Quick, renamed" and shown["folder"] == "News"
    assert (
        await app.post("rename-tag", [("s", "user/-/label/News"), ("dest", "user/-/label/Daily")])
    ).text == "OK"
    assert (await cli("rss", "show", str(feed_id)))["folder"] == "Daily"
    assert (await app.post("disable-tag", [("s", "user/-/label/Daily")])).text == "OK"
    assert (await cli("rss", "show", str(feed_id)))["folder"] is None  # the feed stays
    assert (
        await app.post("subscription/edit", [("ac", "unsubscribe"), ("s", f"feed/{feed_id}")])
    ).text == "OK"
    assert f"feed/{feed_id}" not in {s["id"] for s in (await app.get("subscription/list"))["subscriptions"]}
    res = await app.post(
        "subscription/edit",
        [("ac", "subscribe"), ("s", f"feed/{feeds.url('/quick.xml')}"), ("a", "user/-/label/Again")],
    )
    assert res.text == "OK"
    listed = [
        s
        for s in (await app.get("subscription/list"))["subscriptions"]
        if s["url"] == feeds.url("/quick.xml")
    ]
    assert [s["categories"][0]["label"] for s in listed] == ["Again"]


async def test_atom_stream_carries_the_state_newsboat_reads(
    api: Api, feeds: FeedServer, login: tuple[str, str]
) -> None:
    feed = await add_feed(api, feeds, "atomic", 2)
    app = App(api)
    await app.login(*login)
    await app.post("edit-tag", [("i", str(feed.entries[0])), ("a", READ), ("a", STARRED)])
    res = await app.client.get(f"/reader/atom/feed%2F{feed.id}", params={"n": "20"}, headers=app.headers)
    assert res.status_code == 200 and res.headers["content-type"].startswith("application/atom+xml")
    ns = {"a": "http://www.w3.org/2005/Atom"}
    doc = etree.fromstring(res.content)
    assert doc.findtext("a:title", namespaces=ns) == "Atomic"
    labels = {
        e.findtext("a:id", namespaces=ns): {
            c.get("label")
            for c in e.findall("a:category", ns)
            if c.get("scheme") == "http://www.google.com/reader/"
        }
        for e in doc.findall("a:entry", ns)
    }
    assert labels == {
        long_id(feed.entries[0]): {"reading-list", "read", "starred"},
        long_id(feed.entries[1]): {"reading-list", "fresh"},
    }


@pytest.fixture
def libgreader_here(api: Api, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """libgreader's URLs are Google's, as class constants: point every one of them at this server."""
    from libgreader import ClientAuthMethod, ReaderUrl

    google = "https://www.google.com/reader/api"
    for name, value in vars(ReaderUrl).items():
        if isinstance(value, str) and value.startswith(google):
            monkeypatch.setattr(ReaderUrl, name, api.base + "/reader/api" + value.removeprefix(google))
    monkeypatch.setattr(ClientAuthMethod, "CLIENT_URL", api.base + "/accounts/ClientLogin")
    yield


async def test_libgreader_client(
    api: Api, feeds: FeedServer, login: tuple[str, str], cli: Cli, libgreader_here: None
) -> None:
    from libgreader import ClientAuthMethod, GoogleReader

    feed = await add_feed(api, feeds, "libgreader", 3, folder="Lib")

    def sync() -> tuple[list[Any], list[Any], Any]:
        reader = GoogleReader(ClientAuthMethod(*login))
        assert reader.buildSubscriptionList()
        mine = next(f for f in reader.getSubscriptionList() if f.id == f"feed/{feed.id}")
        assert (
            mine.title == "Libgreader"
            and mine.unread == 3
            and [c.label for c in mine.getCategories()] == ["Lib"]
        )
        mine.loadItems(loadLimit=2)
        mine.loadMoreItems(loadLimit=2)
        loaded = mine.getItems()
        assert [i.id for i in loaded] == [long_id(i) for i in feed.entries]
        assert loaded[0].markRead() and loaded[1].markStarred()
        category = next(c for c in reader.getCategories() if c.label == "Lib")
        category.loadItems()
        return loaded, category.getItems(), reader

    loaded, in_category, reader = await asyncio.to_thread(sync)
    assert loaded[0].title == "libgreader item 0" and loaded[0].url == "http://example.org/libgreader-0"
    assert {i.id for i in in_category} >= {long_id(i) for i in feed.entries}
    assert await unread_in_cli(cli, feed) == set(feed.entries[1:])
    assert await starred_in_cli(cli, feed) == {feed.entries[1]}
    await asyncio.to_thread(lambda: reader.markFeedAsRead(reader.getFeed(f"feed/{feed.id}")))
    assert await unread_in_cli(cli, feed) == set()
