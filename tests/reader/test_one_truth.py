"""One truth for read and starred: the CLI, the REST API, the console, the Miniflux API and the Google
Reader API read and write the same flags (store.reading), so a change made through any one of them is
what all the others show; and a read entry stays read when its feed revises it."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.api.conftest import Api
from tests.feedserver import FeedServer, Route, rss
from tests.reader.conftest import RSS, Cli, add_feed, items

READ, STARRED = "user/-/state/com.google/read", "user/-/state/com.google/starred"


async def every_view(
    api: Api, cli: Cli, login: tuple[str, str], entry_id: int
) -> dict[str, tuple[bool, bool]]:
    """(read, starred) of one entry as each front door shows it."""
    basic = httpx.BasicAuth(*login)
    listed = await cli("rss", "entries", str(await feed_of(api, entry_id)), "--limit", "1000")
    mine = next(e for e in listed if e["id"] == entry_id)
    rest = (await api.client.get(f"/api/v1/entries/{entry_id}")).json()
    mini = (await api.client.get(f"/v1/entries/{entry_id}", auth=basic)).json()
    greader = await api.client.post(
        "/reader/api/0/stream/items/contents", data={"i": str(entry_id)}, auth=basic
    )
    categories = greader.json()["items"][0]["categories"]
    page = (await api.client.get(f"/rss/entries/{entry_id}")).text
    state = re.search(r'<span id="state">([^<]*)</span>', page)
    assert state is not None, page[:2000]
    return {
        "cli": (mine["read_at"] is not None, mine["starred_at"] is not None),
        "rest": (rest["read_at"] is not None, rest["starred_at"] is not None),
        "miniflux": (mini["status"] == "read", mini["starred"]),
        "greader": (READ in categories, STARRED in categories),
        "console": (state[1].startswith("read"), "starred" in state[1]),
    }


async def feed_of(api: Api, entry_id: int) -> int:
    found: int = await api.host.require_pool().fetchval(
        "SELECT feed_id FROM mod_rss.entries WHERE id = $1", entry_id
    )
    return found


def agree(views: dict[str, tuple[bool, bool]], expected: tuple[bool, bool]) -> None:
    assert views == dict.fromkeys(views, expected), views


async def console_form(api: Api, entry_id: int, **fields: str) -> None:
    page = (await api.client.get(f"/rss/entries/{entry_id}")).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    res = await api.client.post(f"/rss/entries/{entry_id}/state", data={"csrf": csrf[1], **fields})
    assert res.status_code == 303, res.text


@pytest.fixture
def basic(login: tuple[str, str]) -> httpx.BasicAuth:
    return httpx.BasicAuth(*login)


async def test_a_change_through_any_door_shows_through_all(
    api: Api, feeds: FeedServer, login: tuple[str, str], basic: httpx.BasicAuth, cli: Cli
) -> None:
    entry = (await add_feed(api, feeds, "truth", 2)).entries[0]
    agree(await every_view(api, cli, login, entry), (False, False))

    await cli("rss", "mark", str(entry), "--read")  # the CLI
    agree(await every_view(api, cli, login, entry), (True, False))
    await console_form(api, entry, starred="1")  # the console
    agree(await every_view(api, cli, login, entry), (True, True))
    res = await api.client.patch(f"/api/v1/entries/{entry}", json={"read": False}, headers=api.auth)  # REST
    assert res.status_code == 200
    agree(await every_view(api, cli, login, entry), (False, True))
    assert (await api.client.put(f"/v1/entries/{entry}/bookmark", auth=basic)).status_code == 204  # Miniflux
    agree(await every_view(api, cli, login, entry), (False, False))
    res = await api.client.post(
        "/reader/api/0/edit-tag", data={"i": str(entry), "a": READ}, auth=basic
    )  # GReader
    assert res.text == "OK"
    agree(await every_view(api, cli, login, entry), (True, False))
    await console_form(api, entry, read="0")
    agree(await every_view(api, cli, login, entry), (False, False))


async def test_a_read_entry_stays_read_when_its_feed_revises_it(
    api: Api, feeds: FeedServer, login: tuple[str, str], basic: httpx.BasicAuth, cli: Cli
) -> None:
    feed = await add_feed(api, feeds, "revised", 2)
    entry = feed.entries[0]
    res = await api.client.post(
        "/reader/api/0/edit-tag", data={"i": str(entry), "a": [READ, STARRED]}, auth=basic
    )
    assert res.text == "OK"
    before: dict[str, Any] = (await api.client.get(f"/v1/entries/{entry}", auth=basic)).json()

    # The feed rewrites the item (same guid, new text): intake revises the entry in place.
    feeds.route("/revised.xml", Route(body=rss(items("revised", 2, body="rewritten")), headers=RSS))
    assert (await api.client.post(f"/api/v1/feeds/{feed.id}/refetch", headers=api.auth)).status_code == 200
    revision = await api.host.require_pool().fetchval(
        "SELECT revision FROM mod_rss.entries WHERE id = $1", entry
    )
    assert revision == 2

    agree(await every_view(api, cli, login, entry), (True, True))
    after = (await api.client.get(f"/v1/entries/{entry}", auth=basic)).json()
    assert "rewritten 0" in after["content"] and before["content"] != after["content"]
    unread = (
        await api.client.get("/v1/entries", params={"status": "unread", "feed_id": feed.id}, auth=basic)
    ).json()
    assert [e["id"] for e in unread["entries"]] == [feed.entries[1]]
    ids = await api.client.get(
        "/reader/api/0/stream/items/ids", params={"s": f"feed/{feed.id}", "xt": READ, "n": "100"}, auth=basic
    )
    assert [r["id"] for r in ids.json()["itemRefs"]] == [str(feed.entries[1])]
