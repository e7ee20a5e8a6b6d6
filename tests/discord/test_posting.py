"""Posting under Discord's limits and failures: 429 storms and rate-limit buckets honoured, a host killed
mid-posting (nothing posted twice or lost), a deleted channel pauses its subscription, a 410 feed is
announced once."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.discord.harness import Rig, reply_text, rig
from tests.discordstub import ALERTS, GENERAL, MANAGER_USER, NEWS
from tests.feedserver import Item, Route, ago, rss
from tests.services import until

BASE = ago(hours=5)
MESSAGES = r"^POST /channels/\d+/messages$"


def items(n: int, start: int = 0) -> list[Item]:
    return [(f"g{i}", f"Item {i}", BASE + timedelta(seconds=i), f"text {i}") for i in range(start, n)]


def titles(n: int, start: int = 0) -> list[str]:
    return [f"Item {i}" for i in range(start, n)]


async def start(r: Rig, path: str, n: int, channel: int = GENERAL, name: str = "a") -> int:
    """A host, connected, with `path` (n items) added to `channel`; returns the subscription id."""
    r.feeds.route(path, Route(body=rss(items(n), title=f"Feed {path}")))
    if not r.hosts:
        await r.connect(name)
    text = reply_text(await r.command(MANAGER_USER, "add", {"url": r.feeds.url(path), "channel": channel}))
    assert text.startswith("Feed added"), text
    return int(text.rsplit("(ID: ", 1)[1].rstrip(")"))


async def test_429_storms_and_rate_limit_buckets_are_honoured(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    async with rig(tmp_path, database_url, nats_url, bucket_limit=2, bucket_window=1.0) as r:
        r.stub.storm(MESSAGES, 3, retry_after=0.8)  # the route's bucket
        r.stub.storm(MESSAGES, 1, retry_after=0.6, is_global=True)  # then the global limit
        r.stub.fail_after_create = 1  # and one message created whose answer is lost (a 500)
        await start(r, "/f/a", 3)
        r.feeds.route("/f/a", Route(body=rss(items(9), title="Feed /f/a")))
        await r.poll_now()
        await until(lambda: r.has_posted(GENERAL, 9), timeout=120, what="every item posted")
        assert await r.posted_titles(GENERAL) == titles(9)  # each once, oldest first
        assert r.stub.nonce_repeats == 1  # the retry carried the same nonce: no second message

        sends = [q for q in r.stub.requests if q.method == "POST" and q.path.startswith("/channels/")]
        sends = [q for q in sends if q.status != 500]
        storms = [i for i, q in enumerate(sends) if q.status == 429]
        # Bucket headers honoured: the stub counts each route's fixed window (as Discord does) and would
        # have answered a request beyond its limit with a 429 of its own ("bucket"); none came.
        assert [sends[i].why for i in storms] == ["storm"] * 4
        for i in storms:  # after every 429 the client waited at least retry_after before trying again
            waited = sends[i + 1].at - sends[i].at
            assert waited >= (0.6 if i == storms[-1] else 0.8) - 0.01, (i, waited)


async def test_killed_mid_posting_nothing_is_posted_twice_or_lost(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    async with rig(tmp_path, database_url, nats_url, bucket_limit=2, bucket_window=1.0) as r:
        await start(r, "/f/a", 3)
        await until(lambda: r.has_posted(GENERAL, 3), what="the preview")
        r.feeds.route("/f/a", Route(body=rss(items(40), title="Feed /f/a")))
        await r.poll_now()
        await until(lambda: r.has_posted(GENERAL, 12), timeout=120, what="posting under way")
        r.hosts[0].kill()  # SIGKILL mid-posting: maybe between Discord's answer and our commit
        assert len(r.stub.posted(GENERAL)) < 40
        r.start_host("b")
        empty = "SELECT count(*) = 0 FROM mod_discord.outgoing"
        await until(lambda: r.pool.fetchval(empty), timeout=180, what="the queue drained after the restart")
        assert await r.posted_titles(GENERAL) == titles(40)
        stored = await r.pool.fetchval(
            "SELECT count(*) FROM mod_discord.posted_items WHERE message_id IS NOT NULL"
        )
        assert stored == 40


async def test_deleted_channel_pauses_and_a_gone_feed_is_announced_once(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    async with rig(tmp_path, database_url, nats_url) as r:
        news = await start(r, "/f/news", 1, channel=NEWS)
        alerts = await start(r, "/f/alerts", 1, channel=ALERTS)
        await start(r, "/f/gone", 1, channel=GENERAL)
        await until(lambda: r.has_posted(NEWS, 1), what="the news preview")
        await until(lambda: r.has_posted(ALERTS, 1), what="the alerts preview")
        await start(r, "/f/live", 1, channel=GENERAL)
        await until(lambda: r.has_posted(GENERAL, 2), what="the general previews")

        r.stub.deleted.add(NEWS)
        r.stub.forbidden.add(ALERTS)  # the bot's permission was revoked
        r.feeds.route("/f/news", Route(body=rss(items(3), title="Feed /f/news")))
        r.feeds.route("/f/alerts", Route(body=rss(items(3), title="Feed /f/alerts")))
        r.feeds.route("/f/gone", Route(status=410, body=b"gone"))
        await r.poll_now()
        paused = "SELECT paused_reason FROM mod_discord.subscriptions WHERE id = $1"
        await until(lambda: r.pool.fetchval(paused, news), what="the subscription paused")
        assert await r.pool.fetchval(paused, news) == "was deleted"
        await until(lambda: r.pool.fetchval(paused, alerts), what="the other one paused")
        assert await r.pool.fetchval(paused, alerts) == "refuses our posts (Missing Permissions)"
        notice = "answers 410 Gone"
        await until(lambda: _notices(r, notice, 1), what="the 410 notice")

        # Later rounds: Discord refuses one item for good (400 Invalid Form Body): it is skipped, not
        # retried every round; the next items still go out. Each round also looks for gone feeds again:
        # the notice is not repeated, and the paused channel is not retried.
        tries = len([q for q in r.stub.requests if q.path == f"/channels/{NEWS}/messages"])
        r.stub.refused.add("Item 1")
        r.feeds.route("/f/live", Route(body=rss(items(3), title="Feed /f/live")))
        await r.poll_now()
        await until(lambda: _live(r, ["Item 0", "Item 2"]), what="the live feed's items")
        r.feeds.route("/f/live", Route(body=rss(items(4), title="Feed /f/live")))
        await r.poll_now()  # Item 3 goes out in a round that starts after Item 2's round ended
        await until(lambda: _live(r, ["Item 0", "Item 2", "Item 3"]), what="another round")
        assert await _notices(r, notice, 1)
        assert len([q for q in r.stub.requests if q.path == f"/channels/{NEWS}/messages"]) == tries
        refused = [q for q in r.stub.requests if q.status == 400]
        assert [q.body["embeds"][0]["title"] for q in refused] == ["Item 1"]  # tried once
        waiting = """SELECT count(*) FROM mod_discord.outgoing o JOIN mod_discord.subscriptions s
                     ON s.id = o.subscription_id WHERE s.paused_at IS NULL"""
        assert await r.pool.fetchval(waiting) == 0  # (the paused channels' items wait for a resume)
        log = r.hosts[0].output()
        assert f"discord: channel {NEWS} was deleted; 1 subscription(s) paused" in log
        assert "service discord.bot failed" not in log  # a log line, not a crash loop
        assert "discord: Discord refused item 'g1' for channel" in log
        listing = reply_text(await r.command(MANAGER_USER, "list"))
        assert "paused: was deleted" in listing and "gone (410)" in listing

        # The permission given back, `/feed add` again resumes the subscription, and what waited goes out.
        r.stub.forbidden.discard(ALERTS)
        r.stub.refused.clear()  # (the refusal above was by title: Item 1 waits here too)
        again = {"url": r.feeds.url("/f/alerts"), "channel": ALERTS}
        text = reply_text(await r.command(MANAGER_USER, "add", again))
        assert text == f"Feed already here, resumed: **Feed /f/alerts** (ID: {alerts})"
        assert await r.pool.fetchval(paused, alerts) is None
        await until(lambda: r.has_posted(ALERTS, 3), what="the waiting items after the resume")
        assert await r.posted_titles(ALERTS) == titles(3)  # no second preview, nothing twice


async def _live(r: Rig, want: list[str]) -> bool:
    """The titles posted to #general for the feed /f/live are exactly `want`."""
    live = [
        m["embeds"][0]["title"]
        for m in r.stub.posted(GENERAL)
        if m["embeds"] and m["embeds"][0]["author"]["name"] == "Feed /f/live"
    ]
    return live == want


async def _notices(r: Rig, text: str, n: int) -> bool:
    return len([m for m in r.stub.posted(GENERAL) if text in m["content"]]) == n
