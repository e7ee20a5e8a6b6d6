"""mod_discord SQL only (no decisions); rss feed state is read through the public view rss_public.feeds."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from modules.discord.format import Item, Source


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    guild_id: int
    channel_id: int
    feed_id: int
    feed_url: str
    name: str
    icon_url: str | None
    paused_reason: str | None

    @property
    def source(self) -> Source:
        return Source(self.id, self.name, self.feed_url, self.icon_url)


_SUB_COLUMNS = "id, guild_id, channel_id, feed_id, feed_url, name, icon_url, paused_reason"


_S_COLUMNS = ", ".join(f"s.{c}" for c in _SUB_COLUMNS.split(", "))


def _sub(row: asyncpg.Record) -> Subscription:
    return Subscription(**{k: row[k] for k in _SUB_COLUMNS.split(", ")})


async def add_subscription(
    conn: asyncpg.Connection,
    *,
    guild_id: int,
    channel_id: int,
    feed_id: int,
    feed_url: str,
    name: str,
    icon_url: str | None,
    added_by: int,
) -> tuple[Subscription, bool]:
    """Returns (subscription, created); adding it again resumes a paused one."""
    row = await conn.fetchrow(
        f"""INSERT INTO mod_discord.subscriptions
                (guild_id, channel_id, feed_id, feed_url, name, icon_url, added_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (guild_id, channel_id, feed_id)
            DO UPDATE SET paused_at = NULL, paused_reason = NULL
            RETURNING {_SUB_COLUMNS}, (xmax = 0) AS created""",
        guild_id,
        channel_id,
        feed_id,
        feed_url,
        name,
        icon_url,
        added_by,
    )
    assert row is not None
    return _sub(row), bool(row["created"])


async def get_subscription(conn: asyncpg.Connection, guild_id: int, sub_id: int) -> Subscription | None:
    row = await conn.fetchrow(
        f"SELECT {_SUB_COLUMNS} FROM mod_discord.subscriptions WHERE guild_id = $1 AND id = $2",
        guild_id,
        sub_id,
    )
    return _sub(row) if row else None


async def remove_subscription(conn: asyncpg.Connection, sub: Subscription) -> None:
    """The subscription, its queue and its posted-item memory (the rss feed stays: others may read it)."""
    await conn.execute("DELETE FROM mod_discord.subscriptions WHERE id = $1", sub.id)
    await conn.execute(
        "DELETE FROM mod_discord.posted_items WHERE feed_id = $1 AND channel_id = $2",
        sub.feed_id,
        sub.channel_id,
    )


async def list_for_guild(conn: asyncpg.Connection, guild_id: int) -> list[asyncpg.Record]:
    """Subscriptions with their feed's poll state from the rss module's public view."""
    return await conn.fetch(
        """SELECT s.id, s.name, s.channel_id, s.paused_reason, f.last_polled_at, f.interval_s,
                  f.dead, f.last_error
           FROM mod_discord.subscriptions s
           LEFT JOIN rss_public.feeds f ON f.id = s.feed_id
           WHERE s.guild_id = $1 ORDER BY s.id""",
        guild_id,
    )


async def guild_status(conn: asyncpg.Connection, guild_id: int) -> tuple[int, int]:
    """(feeds, feeds in error): in error = paused, gone, or failing at its last poll."""
    row = await conn.fetchrow(
        """SELECT count(*) AS total,
                  count(*) FILTER (WHERE s.paused_at IS NOT NULL OR f.dead OR f.consecutive_errors > 0)
                      AS failing
           FROM mod_discord.subscriptions s
           LEFT JOIN rss_public.feeds f ON f.id = s.feed_id
           WHERE s.guild_id = $1""",
        guild_id,
    )
    assert row is not None
    return int(row["total"]), int(row["failing"])


async def remember_existing(
    conn: asyncpg.Connection, feed_id: int, channel_id: int, guids: Iterable[str]
) -> None:
    """Mark the items a feed had when it was added as seen, so its first poll does not flood the channel."""
    await conn.execute(
        """INSERT INTO mod_discord.posted_items (feed_id, channel_id, guid)
           SELECT $1, $2, g FROM unnest($3::text[]) AS g ON CONFLICT DO NOTHING""",
        feed_id,
        channel_id,
        list(guids),
    )


async def enqueue(
    conn: asyncpg.Connection, feed_id: int, item: Item, sort_at: datetime, *, only: int | None = None
) -> int:
    """Queue an item for every active subscription of its feed (or just subscription `only`) that has
    not seen it; returns how many."""
    status = await conn.execute(
        """INSERT INTO mod_discord.outgoing (subscription_id, guid, item, sort_at)
           SELECT s.id, $2, $3::jsonb, $4 FROM mod_discord.subscriptions s
           WHERE s.feed_id = $1 AND s.paused_at IS NULL AND ($5::bigint IS NULL OR s.id = $5)
             AND NOT EXISTS (SELECT 1 FROM mod_discord.posted_items p
                             WHERE p.feed_id = s.feed_id AND p.channel_id = s.channel_id AND p.guid = $2)
           ON CONFLICT DO NOTHING""",
        feed_id,
        item.guid,
        item.to_json(),
        sort_at,
        only,
    )
    return int(status.split()[-1])


@dataclass(frozen=True, slots=True)
class Pending:
    sub: Subscription
    item: Item


async def due(conn: asyncpg.Connection, per_feed: int, limit: int, window_s: float) -> list[Pending]:
    """The oldest queued items of each active subscription, oldest first: at most `per_feed` per
    subscription per `window_s` seconds, counting what it posted in the last `window_s` (so a burst of
    new entries goes out `per_feed` at a time, however often the poster is woken). Not locked: the
    poster locks each row with `lock` before sending."""
    rows = await conn.fetch(
        f"""WITH recent AS (
                SELECT feed_id, channel_id, count(*) AS n FROM mod_discord.posted_items
                WHERE message_id IS NOT NULL AND posted_at > now() - make_interval(secs => $3)
                GROUP BY feed_id, channel_id)
            SELECT o.guid, o.item, {_S_COLUMNS}
            FROM (SELECT subscription_id, guid, item, sort_at, queued_at, row_number() OVER (
                      PARTITION BY subscription_id ORDER BY sort_at, queued_at, guid) AS n
                  FROM mod_discord.outgoing) o
            JOIN mod_discord.subscriptions s ON s.id = o.subscription_id
            LEFT JOIN recent r ON r.feed_id = s.feed_id AND r.channel_id = s.channel_id
            WHERE s.paused_at IS NULL AND o.n <= $1 - coalesce(r.n, 0)
            ORDER BY o.sort_at, o.queued_at, o.guid
            LIMIT $2""",
        per_feed,
        limit,
        window_s,
    )
    return [Pending(_sub(r), Item.from_rss(r["item"])) for r in rows]


async def lock(conn: asyncpg.Connection, p: Pending) -> bool:
    """Lock a queued item for this transaction; False when it is gone or another poster holds it."""
    return bool(
        await conn.fetchval(
            """SELECT 1 FROM mod_discord.outgoing WHERE subscription_id = $1 AND guid = $2
               FOR UPDATE SKIP LOCKED""",
            p.sub.id,
            p.item.guid,
        )
    )


async def mark_posted(conn: asyncpg.Connection, p: Pending, message_id: int | None) -> None:
    await conn.execute(
        """INSERT INTO mod_discord.posted_items (feed_id, channel_id, guid, message_id)
           VALUES ($1, $2, $3, $4) ON CONFLICT (feed_id, channel_id, guid)
           DO UPDATE SET message_id = COALESCE(EXCLUDED.message_id, mod_discord.posted_items.message_id)""",
        p.sub.feed_id,
        p.sub.channel_id,
        p.item.guid,
        message_id,
    )
    await conn.execute(
        "DELETE FROM mod_discord.outgoing WHERE subscription_id = $1 AND guid = $2", p.sub.id, p.item.guid
    )


async def mark_failed(conn: asyncpg.Connection, p: Pending, error: str) -> None:
    await conn.execute(
        """UPDATE mod_discord.outgoing SET attempts = attempts + 1, last_error = $3
           WHERE subscription_id = $1 AND guid = $2""",
        p.sub.id,
        p.item.guid,
        error[:500],
    )


async def pause(conn: asyncpg.Connection, channel_id: int, reason: str) -> int:
    """Pause every subscription posting to a channel; returns how many were active."""
    status = await conn.execute(
        """UPDATE mod_discord.subscriptions SET paused_at = now(), paused_reason = $2
           WHERE channel_id = $1 AND paused_at IS NULL""",
        channel_id,
        reason,
    )
    return int(status.split()[-1])


async def gone_unnotified(conn: asyncpg.Connection) -> list[Subscription]:
    """Subscriptions whose feed went 410 Gone and whose channel was not told yet."""
    rows = await conn.fetch(
        f"""SELECT {_S_COLUMNS}
            FROM mod_discord.subscriptions s JOIN rss_public.feeds f ON f.id = s.feed_id
            WHERE f.dead AND NOT s.gone_notified AND s.paused_at IS NULL
            FOR UPDATE OF s SKIP LOCKED"""
    )
    return [_sub(r) for r in rows]


async def mark_gone_notified(conn: asyncpg.Connection, sub_id: int) -> None:
    await conn.execute("UPDATE mod_discord.subscriptions SET gone_notified = true WHERE id = $1", sub_id)


async def prune(conn: asyncpg.Connection, days: int) -> tuple[int, int]:
    """Forget posted items and drop queued items older than `days`; returns (posted, queued) deleted."""
    posted = await conn.execute(
        "DELETE FROM mod_discord.posted_items WHERE posted_at < now() - make_interval(days => $1)", days
    )
    queued = await conn.execute(
        "DELETE FROM mod_discord.outgoing WHERE queued_at < now() - make_interval(days => $1)", days
    )
    return int(posted.split()[-1]), int(queued.split()[-1])
