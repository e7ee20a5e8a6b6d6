"""Issue #30, finding 3: a feed server's Link headers went through a regex with quadratic backtracking
on the event loop (3 × 16 KB of `<` took 7.6 s; the fetcher accepts many such lines). A hostile server
sends 100 header lines of `<` with a valid feed; `feedeater rss add` must fetch, parse and store it.

The CLI runs in a subprocess so that a stalled parse fails the test at the deadline instead of freezing
the test's own event loop; the deadline is generous (start-up on a loaded machine), old code needed hours.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import feedeater, feedeater_env

LINES, LINE = 100, "<" * 16_000  # the fetcher reads header lines of up to 16 KiB


async def test_a_hostile_link_header_does_not_stall_the_poll(
    tmp_path: Path, database_url: str, nats_url: str, feed_server: FeedServer
) -> None:
    items = [("a", "First", ago(hours=2), "one"), ("b", "Second", ago(hours=1), "two")]
    headers = {"Content-Type": "application/rss+xml", "Link": [LINE] * LINES}
    feed_server.route("/feed.xml", Route(body=rss(items), headers=headers))
    # WebSub on: discovery reads the Link header after every parsed poll.
    env = feedeater_env(
        tmp_path, database_url, nats_url, FEEDEATER_RSS_WEBSUB_CALLBACK_BASE="https://feeds.example.org"
    )
    res = await asyncio.to_thread(
        feedeater, env, "rss", "add", feed_server.url("/feed.xml"), "--json", timeout=600
    )
    assert res.returncode == 0, res.stderr[-2000:]
    fetched = json.loads(res.stdout)["fetch"]
    assert (fetched["fetched"], fetched["new_entries"]) == (1, 2)
