"""The real discord.py client (in a real `feedeater run`) against the Discord stand-in: every command
through INTERACTION_CREATE, ephemeral replies, posted embeds, new entries arriving over the bus."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.discord.harness import Rig, ephemeral, reply_text, rig
from tests.discordstub import GENERAL, LOCKED, MANAGER_USER, NEWS, PLAIN_USER
from tests.feedserver import Item, Route, ago, rss
from tests.services import until

BASE = ago(hours=5)


def items(n: int, start: int = 0) -> list[Item]:
    return [
        (f"g{i}", f"Item {i}", BASE + timedelta(minutes=i), f"&lt;p&gt;Body &lt;b&gt;{i}&lt;/b&gt;&lt;/p&gt;")
        for i in range(start, n)
    ]


async def test_add_posts_a_preview_then_new_entries_from_the_bus(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    async with rig(tmp_path, database_url, nats_url) as r:
        r.feeds.route("/f/stub", Route(body=rss(items(6), title="Stub News")))
        host = await r.connect()

        replies = await r.command(MANAGER_USER, "add", {"url": r.feeds.url("/f/stub")})
        assert ephemeral(replies)
        assert reply_text(replies).startswith("Feed added: **Stub News** (ID: "), reply_text(replies)

        # The 3 most recent items as a preview, oldest first; the older 3 are never posted.
        await until(lambda: r.has_posted(GENERAL, 3), what="the preview", timeout=60)
        assert await r.posted_titles(GENERAL) == ["Item 3", "Item 4", "Item 5"]

        # A new entry: rss polls it, publishes messageCreated, our subscription queues it, the bot posts it.
        r.feeds.route("/f/stub", Route(body=rss(items(8), title="Stub News")))
        await r.poll_now()
        await until(lambda: r.has_posted(GENERAL, 5), what="the new entries", timeout=90)
        assert await r.posted_titles(GENERAL) == ["Item 3", "Item 4", "Item 5", "Item 6", "Item 7"]
        embed = r.stub.posted(GENERAL)[-1]["embeds"][0]
        assert embed["description"] == "Body 7"
        assert embed["author"]["name"] == "Stub News"
        assert embed["url"] == "http://example.org/g7" or embed["url"].endswith("g7")
        assert host.proc.poll() is None


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
        await r.connect()
        url = r.feeds.url("/f/stub")

        async def say(user: int, sub: str, options: dict[str, object] | None = None) -> str:
            replies = await r.command(user, sub, options)
            assert ephemeral(replies), replies
            return reply_text(replies)

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

        # The manager adds to another channel; list shows it; remove takes it away.
        added = await say(MANAGER_USER, "add", {"url": url, "channel": NEWS})
        sub_id = int(added.rsplit("(ID: ", 1)[1].rstrip(")"))
        assert added == f"Feed added: **Stub News** (ID: {sub_id})"
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


async def test_gateway_reconnect_resumes_the_session(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    async with rig(tmp_path, database_url, nats_url) as r:
        await r.connect()
        await until(lambda: _heartbeats(r), what="a heartbeat")
        await r.stub.reconnect()
        await r.stub.connected()
        assert (r.stub.identifies, r.stub.resumes) == (1, 1)
        replies = await r.command(PLAIN_USER, "list")
        assert reply_text(replies).startswith("No feeds in this server yet")


async def _heartbeats(r: Rig) -> bool:
    return r.stub.heartbeats >= 1
