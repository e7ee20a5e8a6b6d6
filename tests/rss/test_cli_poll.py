"""`feedeater rss poll FEED…`: named feeds are fetched now, due or not, through the poll job's code; a
disabled feed is refused with the fix (as the API's refetch refuses it)."""

from __future__ import annotations

import json
from pathlib import Path

from host.runtime import Host
from tests.feedserver import FeedServer, Route, ago, rss
from tests.host.test_cli import assert_one_line_error
from tests.services import feedeater, feedeater_env


def test_poll_named_feeds_now(
    tmp_path: Path, database_url: str, nats_url: str, feed_server: FeedServer
) -> None:
    env = feedeater_env(tmp_path, database_url, nats_url)
    stamp = ago(hours=1)
    feed_server.route("/a", Route(body=rss([("a1", "First", stamp, "x")])))
    feed_server.route("/b", Route(body=rss([("b1", "Other", stamp, "y")])))
    added = [json.loads(feedeater(env, "rss", "add", feed_server.url(p), "--no-fetch", "--json").stdout)
             for p in ("/a", "/b")]  # fmt: skip
    a, b = (str(f["id"]) for f in added)
    done = feedeater(env, "rss", "poll", a, feed_server.url("/b"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "feeds": 2,
        "fetched": 2,
        "failed": {},
        "deferred": {},
        "new_entries": 2,
    }
    feed_server.route("/a", Route(body=rss([("a1", "First", stamp, "x"), ("a2", "Second", stamp, "z")])))
    again = feedeater(env, "rss", "poll", a)
    assert again.returncode == 0 and again.stdout.strip() == "fetched 1 of 1 feed: 1 new entry", again.stdout
    assert feedeater(env, "rss", "set", b, "enabled=false").returncode == 0
    assert_one_line_error(feedeater(env, "rss", "poll", a, b), f"feed {b} is disabled")
    assert_one_line_error(feedeater(env, "rss", "poll", "424242"), "no feed '424242'")


async def test_console_poll_refuses_a_disabled_feed_as_the_cli_does(host: Host) -> None:
    import re

    from tests.console.test_access import _client

    pool = host.require_pool()
    feed = await pool.fetchval(
        "INSERT INTO mod_rss.feeds (url, title, enabled) VALUES ('https://f.example/x', 'F', false) RETURNING id"
    )
    await pool.execute("INSERT INTO mod_rss.poll_state (feed_id) VALUES ($1) ON CONFLICT DO NOTHING", feed)
    async with await _client(host, "127.0.0.1", rss_pages=True) as client:
        page = await client.get(f"/rss/feeds/{feed}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None, page.text
        res = await client.post(f"/rss/feeds/{feed}/poll", data={"csrf": csrf[1]})
        assert res.status_code == 303 and res.headers["location"].endswith("?polling=refused")
        shown = await client.get(res.headers["location"])
        assert "Not polled: this feed is disabled" in shown.text
    assert (
        await pool.fetchval("SELECT last_polled_at FROM mod_rss.poll_state WHERE feed_id = $1", feed) is None
    )
