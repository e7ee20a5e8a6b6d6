"""The bot service: a discord.py client on the gateway, the /feed commands and the poster loop.

`run(ctx)` is the host-supervised service: it connects (discord.py reconnects and resumes by itself),
registers the /feed commands, answers them, and drains the posting queue. Subscribing goes through the
rss module (`subscriptions.subscribe`: fetch, parse, discovery), so a feed added here is polled by rss
and its new entries come back to us on the bus. Every reply is ephemeral.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket

from host.errors import UserError
from host.module import Idle, ModuleContext
from modules.discord import commands, post, store
from modules.discord.format import Item, Source, embed
from modules.discord.rssapi import FeedEntry, RssApi

log = logging.getLogger("feedeater.discord")
POST_PERMISSIONS = {"send_messages": "Send Messages", "embed_links": "Embed Links"}
BATCH = 100  # queued items considered per posting round (all feeds together)


def configure_endpoints(api_base: str, gateway_url: str) -> None:
    """Point discord.py at an API (Discord's by default; a stand-in in tests). Both are process-wide."""
    discord.http.Route.BASE = api_base.rstrip("/")
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


class DiscordChannels:
    """post.Channels over discord.py: 404 / 403 become ChannelUnavailable (the subscription pauses),
    another 4xx Refused (that item is skipped); anything else is retried next round."""

    def __init__(self, client: discord.Client) -> None:
        self.client = client

    async def _channel(self, channel_id: int) -> discord.abc.Messageable:
        channel = self.client.get_channel(channel_id)
        try:
            if channel is None:
                channel = await self.client.fetch_channel(channel_id)
        except discord.NotFound:
            raise post.ChannelUnavailable("was deleted") from None
        except discord.Forbidden:
            raise post.ChannelUnavailable("is not visible to the bot") from None
        if not isinstance(channel, discord.abc.Messageable):
            raise post.ChannelUnavailable("is not a text channel")
        return channel

    async def send(self, channel_id: int, embed: dict[str, Any], nonce: str) -> int:
        channel = await self._channel(channel_id)
        try:
            message = await channel.send(embed=discord.Embed.from_dict(embed), nonce=nonce)
        except discord.NotFound:
            raise post.ChannelUnavailable("was deleted") from None
        except discord.Forbidden as exc:
            raise post.ChannelUnavailable(f"refuses our posts ({exc.text or 'missing permission'})") from None
        except discord.HTTPException as exc:
            if 400 <= exc.status < 500 and exc.status != 429:  # a 429 left after discord.py's retries
                raise post.Refused(f"{exc.status}: {exc.text}") from None
            raise
        return message.id

    async def say(self, channel_id: int, text: str) -> None:
        channel = await self._channel(channel_id)
        try:
            await channel.send(text)
        except (discord.NotFound, discord.Forbidden) as exc:
            raise post.ChannelUnavailable(f"refuses our posts ({exc})") from None


class FeedBot(discord.Client):
    """The client: only the `guilds` intent (channels, roles); no privileged intents."""

    def __init__(self, ctx: ModuleContext) -> None:
        intents = discord.Intents.none()
        intents.guilds = True
        super().__init__(intents=intents)
        self.ctx = ctx
        # rss's public API, checked against the shape discord uses (a runtime-checkable Protocol: mypy
        # refuses protocols as type[T], python/mypy#4717). One fetcher per command, so `settings set rss.…`
        # reaches the next.
        self.rss = ctx.api("rss", RssApi)  # type: ignore[type-abstract]
        self.started = datetime.now(UTC)
        self.tree = app_commands.CommandTree(self)
        self.tree.add_command(feed_group(self))

    async def setup_hook(self) -> None:
        await self.tree.sync()

    def manager_role(self) -> str:
        return str(self.ctx.settings["manager_role"])

    async def answer(
        self,
        interaction: discord.Interaction,
        command: str,
        work: Callable[[], Awaitable[str | tuple[str, dict[str, Any]]]],
        *,
        slow: bool = False,
    ) -> None:
        """Check the role, run `work`, reply ephemerally with its text (and embed) or with one error line.

        `slow` commands fetch feeds, so they defer first (Discord wants an answer within 3 s)."""
        roles = [r.name for r in getattr(interaction.user, "roles", [])]
        try:
            commands.require_manager(command, roles, self.manager_role())
        except commands.CommandError as exc:
            await interaction.response.send_message(str(exc), ephemeral=True)
            return
        if slow:
            await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            result = await work()
        except commands.CommandError as exc:
            result = str(exc)
        except UserError as exc:
            result = commands.error_line(exc)
        except Exception:
            log.exception("discord: /feed %s failed", command)
            result = commands.INTERNAL_ERROR
        text, em = (result, None) if isinstance(result, str) else result
        kwargs: dict[str, Any] = {"ephemeral": True}
        if em is not None:
            kwargs["embed"] = discord.Embed.from_dict(em)
        if slow:
            await interaction.followup.send(text, **kwargs)
        else:
            await interaction.response.send_message(text, **kwargs)

    def missing_permissions(self, channel: discord.abc.GuildChannel) -> list[str]:
        me = channel.guild.me
        if me is None:
            return []
        allowed = channel.permissions_for(me)
        return [label for attr, label in POST_PERMISSIONS.items() if not getattr(allowed, attr)]

    async def add(self, interaction: discord.Interaction, url: str, channel_id: int) -> str:
        assert interaction.guild is not None
        target = interaction.guild.get_channel(channel_id)
        if not isinstance(target, discord.TextChannel):
            raise commands.CommandError(f"<#{channel_id}> is not a text channel I can see.")
        commands.require_post_permissions(channel_id, self.missing_permissions(target))
        async with self.rss.fetcher() as fetcher:
            validated = await self.rss.validate(fetcher, url)
            async with self.ctx.pool.acquire() as conn, conn.transaction():
                feed = await self.rss.subscribe(conn, fetcher, validated)
                name = commands.name(validated.feed.title or feed.title, validated.url)
                sub, created = await store.add_subscription(
                    conn,
                    guild_id=interaction.guild.id,
                    channel_id=channel_id,
                    feed_id=feed.feed_id,
                    feed_url=validated.url,
                    name=validated.feed.title or feed.title or validated.url,
                    icon_url=validated.feed.image,
                    added_by=interaction.user.id,
                )
                if created:
                    items = recent(validated.feed.entries, commands.PREVIEW_ITEMS)
                    shown = {i.guid for i in items}
                    await store.remember_existing(
                        conn,
                        feed.feed_id,
                        channel_id,
                        (e.guid for e in validated.feed.entries if e.guid not in shown),
                    )
                    now = datetime.now(UTC)
                    for item in items:
                        await store.enqueue(conn, feed.feed_id, item, item.published or now, only=sub.id)
        post.wake(self.ctx).set()
        return commands.added(name, sub.id, created)

    async def remove(self, interaction: discord.Interaction, sub_id: int) -> str:
        assert interaction.guild is not None
        async with self.ctx.pool.acquire() as conn, conn.transaction():
            sub = await store.get_subscription(conn, interaction.guild.id, sub_id)
            if sub is None:
                raise commands.CommandError(commands.unknown_id(sub_id))
            await store.remove_subscription(conn, sub)
        return commands.removed(sub.name, sub.id)

    async def listing(self, interaction: discord.Interaction) -> str:
        assert interaction.guild is not None
        async with self.ctx.pool.acquire() as conn:
            rows = await store.list_for_guild(conn, interaction.guild.id)
        return commands.listing((commands.Listed.from_row(r) for r in rows), datetime.now(UTC))

    async def preview(self, url: str) -> tuple[str, dict[str, Any]] | str:
        async with self.rss.fetcher() as fetcher:
            validated = await self.rss.validate(fetcher, url)
        title = validated.feed.title or validated.url
        items = recent(validated.feed.entries, 1)
        if not items:
            return commands.preview_empty(title)
        source = Source(None, title, validated.url, validated.feed.image)
        return f"Latest item of **{commands.name(title, validated.url)}**:", embed(
            items[0], source, now=datetime.now(UTC), to_text=self.rss.html_to_text
        )

    async def config(self, interaction: discord.Interaction) -> str:
        assert interaction.guild is not None
        async with self.ctx.pool.acquire() as conn:
            total, failing = await store.guild_status(conn, interaction.guild.id)
        return commands.config(total, failing, datetime.now(UTC) - self.started)


def recent(entries: Sequence[FeedEntry], n: int) -> list[Item]:
    """The `n` most recent entries (by date; undated ones keep document order), oldest first."""
    dated = sorted(
        enumerate(entries),
        key=lambda p: (p[1].published or datetime.min.replace(tzinfo=UTC), -p[0]),
        reverse=True,
    )
    return [Item.from_entry(e) for _, e in reversed(dated[:n])]


def feed_group(bot: FeedBot) -> app_commands.Group:
    """/feed add | remove | list | preview | config."""
    group = app_commands.Group(
        name="feed", description="RSS/Atom feeds posted to this server", guild_only=True
    )

    @group.command(name="add", description="Subscribe a channel to a feed (or a page that links one)")
    @app_commands.describe(url="feed or web page URL", channel="where to post (default: here)")
    async def add(
        interaction: discord.Interaction, url: str, channel: discord.TextChannel | None = None
    ) -> None:
        channel_id = channel.id if channel is not None else interaction.channel_id
        assert channel_id is not None
        await bot.answer(interaction, "add", lambda: bot.add(interaction, url, channel_id), slow=True)

    @group.command(name="remove", description="Unsubscribe a feed by its ID (see /feed list)")
    async def remove(interaction: discord.Interaction, id: int) -> None:
        await bot.answer(interaction, "remove", lambda: bot.remove(interaction, id))

    @group.command(name="list", description="The feeds of this server")
    async def list_(interaction: discord.Interaction) -> None:
        await bot.answer(interaction, "list", lambda: bot.listing(interaction))

    @group.command(name="preview", description="Show a feed's latest item without subscribing")
    async def preview(interaction: discord.Interaction, url: str) -> None:
        await bot.answer(interaction, "preview", lambda: bot.preview(url), slow=True)

    @group.command(name="config", description="Bot status: feeds, feeds in error, uptime")
    async def config(interaction: discord.Interaction) -> None:
        await bot.answer(interaction, "config", lambda: bot.config(interaction))

    return group


async def poster(bot: FeedBot) -> None:
    """Drain the queue every `post_interval_seconds`, or at once when something was queued; each feed
    posts at most `items_per_feed` per interval to a channel (the rest in the next ones). Settings are
    read each round: a change applies without a restart."""
    wake = post.wake(bot.ctx)
    channels = DiscordChannels(bot)
    while True:
        settings = bot.ctx.settings
        interval = float(settings["post_interval_seconds"])
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), interval)
        wake.clear()
        await bot.wait_until_ready()
        counts = await post.cycle(
            bot.ctx.pool,
            channels,
            per_feed=int(settings["items_per_feed"]),
            window_s=interval,
            limit=BATCH,
            to_text=bot.rss.html_to_text,
        )
        if any(counts.values()):
            log.info("discord: posting round %s", counts)


async def run(ctx: ModuleContext) -> None:
    """The service: runs until cancelled; without a token it stays offline (and says so once)."""
    token = str(ctx.settings["bot_token"])
    if not token:  # not a fault: most hosts never use Discord. Setting the token starts the bot.
        log.info("discord: discord.bot_token is not set; the bot stays offline")
        raise Idle("discord.bot_token is not set (`feedeater settings set discord.bot_token TOKEN`)")
    configure_endpoints(str(ctx.settings["api_base"]), str(ctx.settings["gateway_url"]))
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False  # no voice: nothing to warn about
    bot = FeedBot(ctx)
    posting = asyncio.create_task(poster(bot), name="discord-poster")
    try:
        await bot.start(token)
    except discord.LoginFailure:
        raise UserError(
            "discord.bot_token was refused by Discord",
            "copy the bot's token from the Developer Portal into "
            "`feedeater settings set discord.bot_token TOKEN`: running hosts restart the bot with it",
        ) from None
    finally:
        posting.cancel()
        await bot.close()
