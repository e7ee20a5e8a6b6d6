"""Reader-app APIs under test: one running host per test module (tests.api.conftest's `api`, on a free
loopback port), a reader login, feeds served by a local feed server, and `feedeater` CLI commands run
in this process (a subprocess pays seconds of imports per command)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from host import logins
from host.cli import main
from tests.api.conftest import Api, api, feeds, module_db  # noqa: F401  (fixtures for this directory)
from tests.feedserver import FeedServer, Route, rss
from tests.services import feedeater_env

USER, PASSWORD = "reader", "reader-password-29"
RSS = {"content-type": "application/rss+xml"}

Cli = Callable[..., Awaitable[Any]]


@dataclass
class Feed:
    id: int
    url: str
    entries: list[int]  # newest first


@pytest.fixture(scope="module")
async def login(api: Api) -> tuple[str, str]:  # noqa: F811
    async with api.host.require_pool().acquire() as conn:
        await logins.set_login(conn, USER, PASSWORD)
    return USER, PASSWORD


def items(prefix: str, n: int, *, body: str = "text") -> list[tuple[str, str, datetime, str]]:
    """n dated items, the first the newest (an hour apart)."""
    now = datetime.now(UTC).replace(microsecond=0)
    return [
        (f"{prefix}-{i}", f"{prefix} item {i}", now - timedelta(hours=i + 1), f"{body} {i}") for i in range(n)
    ]


async def add_feed(
    api: Api,  # noqa: F811
    server: FeedServer,
    name: str,
    n: int,
    *,
    folder: str | None = None,
    body: str = "text",
) -> Feed:
    """A feed of n entries, subscribed through the REST API and fetched once."""
    server.route(f"/{name}.xml", Route(body=rss(items(name, n, body=body), title=name.title()), headers=RSS))
    url = server.url(f"/{name}.xml")
    res = await api.client.post("/api/v1/feeds", json={"url": url, "folder": folder}, headers=api.auth)
    assert res.status_code == 201, res.text
    feed_id = res.json()["id"]
    assert (await api.client.post(f"/api/v1/feeds/{feed_id}/refetch", headers=api.auth)).status_code == 200
    rows = await api.host.require_pool().fetch(
        "SELECT id FROM mod_rss.entries WHERE feed_id = $1 ORDER BY effective_at DESC, id DESC", feed_id
    )
    assert len(rows) == n
    return Feed(feed_id, url, [r["id"] for r in rows])


@pytest.fixture(scope="module")
def cli_env(tmp_path_factory: pytest.TempPathFactory, module_db: str, nats_url: str) -> dict[str, str]:  # noqa: F811
    return feedeater_env(tmp_path_factory.mktemp("cli-home"), module_db, nats_url)


@pytest.fixture
def cli(cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """`feedeater ARGS --json` in a thread of this process; its parsed output (or (code, stderr) on failure)."""
    for key, value in cli_env.items():
        monkeypatch.setenv(key, value)

    async def run(*args: str, stdin: str | None = None) -> Any:
        if stdin is not None:
            monkeypatch.setattr("sys.stdin", _Lines(stdin))
        code = await asyncio.to_thread(main, [*args, "--json"])
        out = capsys.readouterr()
        return json.loads(out.out) if code == 0 else (code, out.err)

    return run


class _Lines:
    """A non-terminal stdin holding one line (what `api login set` reads from a pipe)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        text, self.text = self.text, ""
        return text


async def unread_in_cli(cli: Cli, feed: Feed) -> set[int]:
    """What `feedeater rss entries FEED --unread` lists."""
    return {e["id"] for e in await cli("rss", "entries", str(feed.id), "--unread", "--limit", "1000")}


async def starred_in_cli(cli: Cli, feed: Feed) -> set[int]:
    return {e["id"] for e in await cli("rss", "entries", str(feed.id), "--starred", "--limit", "1000")}
