"""SSRF with the default policy: private, loopback and metadata addresses, in every spelling, are refused by
`feedeater rss add` and by the poll job, and no request reaches the (loopback) test server.

Redirects into the private network are refused at the fetcher level (tests/host/test_fetch.py), which the
poll job and `rss add` share.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from host.errors import UserError
from host.runtime import Host
from modules.rss import store
from modules.rss.subscriptions import subscribe
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import feedeater_env, make_host

BODY = rss([("a", "A", ago(hours=1), "x")])
# Spellings of the test server's own address (127.0.0.1) and names that resolve to loopback.
LOOPBACK_SPELLINGS = [
    "127.0.0.1",
    "127.1",
    "2130706433",  # decimal
    "0177.0.0.1",  # octal
    "0x7f.0.0.1",  # hex
    "0x7f000001",
    "017700000001",
    "localhost",
    "LocalHost",
    "[::ffff:127.0.0.1]",  # IPv4-mapped IPv6
    "[::ffff:7f00:1]",
    "0.0.0.0",  # reaches the local host on Linux
    "0",
]
# Elsewhere in the private ranges (nothing listens there; the refusal must come before connecting).
OTHER_PRIVATE = [
    "[::1]",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "[fe80::1]",
    "[fc00::1]",
    "100.64.0.1",  # carrier-grade NAT
    "[::ffff:169.254.169.254]",
]


@pytest.fixture
async def strict_host(tmp_path: Path, database_url: str, nats_url: str) -> Host:
    h = make_host(tmp_path, database_url, nats_url, env={"FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS": "false"})
    await h.open(with_bus=False)
    yield h  # type: ignore[misc]
    await h.close()


def urls(server: FeedServer) -> list[str]:
    return [server.url("/feed", host=h) for h in LOOPBACK_SPELLINGS] + [
        f"http://{h}:{server.port}/feed" for h in OTHER_PRIVATE
    ]


async def test_rss_add_refuses_every_private_spelling(strict_host: Host, feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=BODY))
    ctx = await strict_host.context("rss")
    async with ctx.pool.acquire() as conn:
        for url in urls(feed_server):
            with pytest.raises(UserError) as caught:
                await subscribe.subscribe(conn, ctx.state["fetcher"], url)
            assert "private" in str(caught.value).lower() or "not allowed" in str(caught.value).lower(), (
                url,
                caught.value,
            )
        assert await conn.fetchval("SELECT count(*) FROM mod_rss.feeds") == 0
    assert feed_server.requests == []


async def test_poll_job_refuses_feeds_stored_before_the_policy_changed(
    strict_host: Host, feed_server: FeedServer
) -> None:
    """Feeds imported from OPML or added while private networks were allowed are still refused at fetch time."""
    feed_server.route("/feed", Route(body=BODY))
    async with strict_host.require_pool().acquire() as conn:
        for url in urls(feed_server):
            await store.add_feed(conn, url=url)
    result = await strict_host.run_job_once("rss.poll")
    assert result.status == "ok" and result.metrics["feeds"] == len(urls(feed_server))
    assert result.metrics.get("status_blocked") == len(urls(feed_server)), result.metrics
    rows = await strict_host.require_pool().fetch(
        "SELECT consecutive_errors, last_error FROM mod_rss.poll_state"
    )
    assert all(r["consecutive_errors"] == 1 and r["last_error"] for r in rows)
    assert await strict_host.require_pool().fetchval("SELECT count(*) FROM mod_rss.raw_fetches") == 0
    assert feed_server.requests == []


def test_cli_add_of_a_decimal_loopback_is_one_clear_error(
    tmp_path: Path, database_url: str, nats_url: str, feed_server: FeedServer
) -> None:
    feed_server.route("/feed", Route(body=BODY))
    env = feedeater_env(tmp_path, database_url, nats_url, FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS="false")
    res = subprocess.run(
        [sys.executable, "-m", "host.cli", "rss", "add", feed_server.url("/feed", host="2130706433")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 2 and res.stderr.startswith("feedeater: error: "), res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert feed_server.requests == []
