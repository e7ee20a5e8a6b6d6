"""The real discord.py client (in a real `feedeater run`) against the Discord stand-in: every command
through INTERACTION_CREATE, ephemeral replies, posted embeds, new entries arriving over the bus."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from tests.discord.harness import ephemeral, reply_text, rig
from tests.discordstub import GENERAL, MANAGER_USER
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
        r.feeds.route("/feed.xml", Route(body=rss(items(6), title="Stub News")))
        host = r.start_host()
        await r.stub.connected()
        await until(lambda: _ready(r), timeout=60, what="the /feed command registered")

        replies = await r.command(MANAGER_USER, "add", {"url": r.feeds.url("/feed.xml")})
        assert ephemeral(replies)
        assert reply_text(replies).startswith("Feed added: **Stub News** (ID: "), reply_text(replies)

        # The 3 most recent items as a preview, oldest first; the older 3 are never posted.
        await until(lambda: _count(r, GENERAL, 3), what="the preview", timeout=60)
        assert await r.posted_titles(GENERAL) == ["Item 3", "Item 4", "Item 5"]

        # A new entry: rss polls it, publishes messageCreated, our subscription queues it, the bot posts it.
        r.feeds.route("/feed.xml", Route(body=rss(items(8), title="Stub News")))
        await r.poll_now()
        await until(lambda: _count(r, GENERAL, 5), what="the new entries", timeout=90)
        assert await r.posted_titles(GENERAL) == ["Item 3", "Item 4", "Item 5", "Item 6", "Item 7"]
        embed = r.stub.posted(GENERAL)[-1]["embeds"][0]
        assert embed["description"] == "Body 7"
        assert embed["author"]["name"] == "Stub News"
        assert embed["url"] == "http://example.org/g7" or embed["url"].endswith("g7")
        assert host.proc.poll() is None


async def _ready(r) -> bool:  # type: ignore[no-untyped-def]
    return bool(r.stub.commands)


async def _count(r, channel: int, n: int) -> bool:  # type: ignore[no-untyped-def]
    return len(r.stub.posted(channel)) >= n
