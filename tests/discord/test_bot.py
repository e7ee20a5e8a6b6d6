"""The real discord.py client (in a real `feedeater run`) against the Discord stand-in: every command
through INTERACTION_CREATE, ephemeral replies, posted embeds, new entries arriving over the bus."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from modules.discord.format import colour
from tests import discordstub
from tests.discord.harness import Rig, ephemeral, reply_text, rig
from tests.discordstub import GENERAL, LOCKED, MANAGER_USER, NEWS, PLAIN_USER
from tests.feedserver import Item, Route, ago, rss
from tests.services import HostProcess, feedeater, feedeater_env, until

BASE = ago(hours=5)


def items(n: int, start: int = 0) -> list[Item]:
    return [
        (f"g{i}", f"Item {i}", BASE + timedelta(minutes=i), f"&lt;p&gt;Body &lt;b&gt;{i}&lt;/b&gt;&lt;/p&gt;")
        for i in range(start, n)
    ]


async def test_add_posts_a_preview_then_new_entries_from_the_bus(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    interval = 4.0  # the poster's interval: each feed posts at most 5 items per interval to a channel
    async with rig(tmp_path, database_url, nats_url, bucket_limit=50) as r:
        r.feeds.route("/f/stub", Route(body=rss(items(6), title="Stub News")))
        host = await r.connect(FEEDEATER_DISCORD_POST_INTERVAL_SECONDS=str(interval))

        replies = await r.command(MANAGER_USER, "add", {"url": r.feeds.url("/f/stub")})
        assert ephemeral(replies)
        assert reply_text(replies).startswith("Feed added: **Stub News** (ID: "), reply_text(replies)

        # The 3 most recent items as a preview, oldest first; the older 3 are never posted.
        await until(lambda: r.has_posted(GENERAL, 3), what="the preview")
        assert await r.posted_titles(GENERAL) == ["Item 3", "Item 4", "Item 5"]

        # Discord asks the bot to reconnect (op 7); a command sent while it is away is replayed when it
        # resumes the session (no new IDENTIFY) and answered; nothing is re-posted.
        await until(lambda: _heartbeats(r), what="a heartbeat")
        r.stub.hold_resume = asyncio.Event()
        await r.stub.reconnect()
        await until(lambda: _away(r), what="the bot away, its RESUME held")
        iid = await r.stub.interact(PLAIN_USER, "list")
        r.stub.hold_resume.set()
        await r.stub.connected()
        assert (r.stub.identifies, r.stub.resumes) == (1, 1)
        assert reply_text(await r.reply(iid, "list")).startswith("`1` **Stub News** → ")

        # New entries: rss polls them, publishes messageCreated, our subscription queues them, the bot
        # posts them, oldest first, at most 5 per interval (the preview counts).
        r.feeds.route("/f/stub", Route(body=rss(items(14), title="Stub News")))
        await r.poll_now()
        await until(lambda: r.has_posted(GENERAL, 11), what="the new entries", timeout=120)
        assert await r.posted_titles(GENERAL) == [f"Item {i}" for i in range(3, 14)]
        embed = r.stub.posted(GENERAL)[-1]["embeds"][0]
        assert embed["description"] == "Body 13"
        assert embed["author"]["name"] == "Stub News"
        assert embed["url"].endswith("g13")
        assert embed["footer"]["text"].endswith(" ago · Feed 1")  # relative date, subscription id
        assert embed["color"] == colour(r.feeds.url("/f/stub"))
        posted_at = await r.pool.fetch(
            "SELECT posted_at FROM mod_discord.posted_items WHERE message_id IS NOT NULL ORDER BY posted_at"
        )
        spans = [(posted_at[k + 5][0] - posted_at[k][0]).total_seconds() for k in range(len(posted_at) - 5)]
        assert min(spans) >= interval, spans  # never a 6th item within one interval
        assert host.proc.poll() is None

        # The token is a secret setting: neither the host's log nor `feedeater settings` shows it.
        env = feedeater_env(r.tmp / "cli", r.database_url, r.nats_url, **r.env)
        for args in (("settings", "get", "discord"), ("settings", "get", "discord.bot_token", "--json")):
            shown = feedeater(env, *args)
            assert shown.returncode == 0 and "bot_token" in shown.stdout, shown
            assert discordstub.TOKEN not in shown.stdout + shown.stderr
        assert discordstub.TOKEN not in host.output()


async def test_every_command_with_and_without_the_manager_role(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    async with rig(tmp_path, database_url, nats_url) as r:
        r.feeds.route("/f/stub", Route(body=rss(items(2), title="Stub News")))
        r.feeds.route(
            "/page.html",
            Route(
                body=b"<html><head><title>x</title></head><body>hi</body></html>",
                headers={"Content-Type": "text/html"},
            ),
        )
        r.feeds.route(
            "/blog.html",
            Route(
                body=b'<html><head><link rel="alternate" type="application/rss+xml" href="/f/stub">'
                b"</head><body>blog</body></html>",
                headers={"Content-Type": "text/html"},
            ),
        )
        await r.connect()
        idle = r.start_host("idle", FEEDEATER_DISCORD_BOT_TOKEN="")  # no token: no bot on this host
        wrong = r.start_host("wrong", FEEDEATER_DISCORD_BOT_TOKEN="not-the-token")  # refused by Discord
        # Registered as one application command group with its five subcommands.
        (feed,) = r.stub.commands
        assert feed["name"] == "feed" and feed["type"] == 1
        subs = {o["name"]: o for o in feed["options"]}
        assert sorted(subs) == ["add", "config", "list", "preview", "remove"]
        assert [(o["name"], o.get("required", False)) for o in subs["add"]["options"]] == [
            ("url", True),
            ("channel", False),
        ]
        url = r.feeds.url("/f/stub")

        async def say(user: int, sub: str, options: dict[str, object] | None = None) -> str:
            replies = await r.command(user, sub, options)
            assert ephemeral(replies), replies
            text = reply_text(replies)
            assert text and "\n" not in text, text  # one line (only /feed list has one per feed)
            return text

        # Without the role: add, remove and config are refused, with one line naming the role.
        for sub, options in (("add", {"url": url}), ("remove", {"id": 1}), ("config", None)):
            assert await say(PLAIN_USER, sub, options) == (
                f"You need the **Feed Manager** role to use /feed {sub}."
            )
        # Everyone may list and preview.
        assert (await say(PLAIN_USER, "list")).startswith("No feeds in this server yet")
        preview = await r.command(PLAIN_USER, "preview", {"url": url})
        assert ephemeral(preview) and reply_text(preview) == "Latest item of **Stub News**:"
        assert preview[-1]["embeds"][0]["title"] == "Item 1"

        # Errors: one line each.
        assert (await say(MANAGER_USER, "add", {"url": "ftp://nope"})).startswith(
            "Can't use that feed: cannot subscribe to 'ftp://nope'"
        )
        assert (await say(MANAGER_USER, "add", {"url": r.feeds.url("/page.html")})).startswith(
            "Can't use that feed: "
        )
        assert (await say(MANAGER_USER, "add", {"url": r.feeds.url("/missing")})).startswith(
            "Can't use that feed: "
        )
        assert await say(MANAGER_USER, "add", {"url": url, "channel": LOCKED}) == (
            f"I can't post in <#{LOCKED}>: I need the Embed Links and Send Messages permission there."
        )
        assert await say(MANAGER_USER, "remove", {"id": 999}) == (
            "There is no feed with ID 999 in this server; /feed list shows the IDs."
        )
        assert not r.stub.posted(LOCKED)

        # The manager adds a blog page to another channel: its advertised feed is discovered and
        # subscribed; list shows it; remove takes it away.
        added = await say(MANAGER_USER, "add", {"url": r.feeds.url("/blog.html"), "channel": NEWS})
        sub_id = int(added.rsplit("(ID: ", 1)[1].rstrip(")"))
        assert added == f"Feed added: **Stub News** (ID: {sub_id})"
        feed_url = "SELECT feed_url FROM mod_discord.subscriptions WHERE id = $1"
        assert await r.pool.fetchval(feed_url, sub_id) == url
        await until(lambda: r.has_posted(NEWS, 2), what="the preview in #news")
        listing = await say(PLAIN_USER, "list")
        assert listing.startswith(f"`{sub_id}` **Stub News** → <#{NEWS}> · ")
        assert (await say(MANAGER_USER, "config")).startswith("Feeds: 1 · in error: 0 · uptime: 0d 0h ")
        assert (
            await say(MANAGER_USER, "remove", {"id": sub_id}) == f"Removed feed **Stub News** (ID: {sub_id})"
        )
        assert (await say(PLAIN_USER, "list")).startswith("No feeds in this server yet")
        assert not r.stub.posted(GENERAL)
        # Nothing but interaction replies went out for the refused commands.
        assert [m["embeds"][0]["title"] for m in r.stub.posted(NEWS)] == ["Item 0", "Item 1"]
        # The host without a token ran all along with its bot offline, saying so once.
        offline = "discord.bot_token is not set; the bot stays offline"
        await until(lambda: _said(idle, offline), what="the offline line")
        assert idle.output().count(offline) == 1 and idle.proc.poll() is None
        # Offline as configured is "idle", not "running" (issue #20): /healthz stays ok, status says why.
        env = feedeater_env(r.tmp / "cli", r.database_url, r.nats_url, **r.env)

        async def idle_unit() -> dict[str, Any] | None:
            done = await asyncio.to_thread(feedeater, env, "status", "--json")
            units = json.loads(done.stdout)["units"]
            return next((u for u in units if u["host_id"] == "host-idle" and u["name"] == "bot"), None)

        bot = await until(idle_unit, what="the idle host's bot unit")
        assert bot["state"].startswith("idle: discord.bot_token is not set"), bot
        assert all("voice will NOT be supported" not in h.output() for h in r.hosts)  # no PyNaCl noise
        # A wrong token: one line that says which setting and how to fix it, retried with backoff; the
        # host keeps running and the token is not printed.
        refused = "discord.bot_token was refused by Discord (copy the bot's token from the Developer Portal"
        await until(lambda: _said(wrong, refused), what="the refused-token line")
        assert "Traceback" not in wrong.output() and "not-the-token" not in wrong.output()
        assert wrong.proc.poll() is None
        assert r.stub.identifies == 1  # only the host with the right token reached the gateway


async def _said(host: HostProcess, line: str) -> bool:
    return line in host.output()


async def _away(r: Rig) -> bool:
    return r.stub.away()


async def _heartbeats(r: Rig) -> bool:
    return r.stub.heartbeats >= 1
