"""mod_rss.websub: push subscriptions and their lease state (SQL only; decisions in rss.websub.lease, which
reads `Current`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from host.workqueue import WorkQueue
from modules.rss.store.feeds import poll_soon

_COLUMNS = "id, feed_id, token, hub, topic, callback, secret, state"


@dataclass(frozen=True, slots=True)
class Current:
    """What storage holds for a feed's subscription."""

    hub: str
    topic: str
    state: str  # pending, active, failed, unsubscribing
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    feed_id: int | None  # None once the feed was removed (waiting for the hub's unsubscribe check)
    token: str
    hub: str
    topic: str
    callback: str
    secret: str
    state: str

    @classmethod
    def from_record(cls, r: asyncpg.Record) -> Subscription:
        return cls(**{k: r[k] for k in cls.__slots__})


# Active subscriptions whose renewal time has come (the renew job claims them with a lease).
RENEW_QUEUE = WorkQueue(
    table="mod_rss.websub",
    key="id",
    due="q.state = 'active' AND q.renew_at <= coalesce($1::timestamptz, now())",
    order="q.renew_at",
    returning=", ".join(f"q.{c.strip()}" for c in _COLUMNS.split(",")),
)


async def current(conn: asyncpg.Connection, feed_id: int) -> Current | None:
    row = await conn.fetchrow(
        "SELECT hub, topic, state, updated_at FROM mod_rss.websub WHERE feed_id = $1", feed_id
    )
    return None if row is None else Current(row["hub"], row["topic"], row["state"], row["updated_at"])


async def request(
    conn: asyncpg.Connection, *, feed_id: int, hub: str, topic: str, callback: str, secret: str, token: str
) -> Subscription:
    """A new subscription attempt (pending until the hub verifies it); replaces the feed's old one."""
    row = await conn.fetchrow(
        f"""INSERT INTO mod_rss.websub (feed_id, token, hub, topic, secret, callback)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (feed_id) DO UPDATE SET token = $2, hub = $3, topic = $4, secret = $5, callback = $6,
                state = 'pending', requested_at = now(), verified_at = NULL, expires_at = NULL,
                renew_at = NULL, last_error = NULL, updated_at = now()
            RETURNING {_COLUMNS}""",
        feed_id,
        token,
        hub,
        topic,
        secret,
        callback,
    )
    assert row is not None
    return Subscription.from_record(row)


async def describe(conn: asyncpg.Connection, feed_id: int) -> dict[str, Any] | None:
    """What `rss show` tells about a feed's push subscription (never its secret or callback token)."""
    row = await conn.fetchrow(
        """SELECT hub, topic, state, verified_at, expires_at, last_push_at, pushes, rejected_pushes, last_error
           FROM mod_rss.websub WHERE feed_id = $1""",
        feed_id,
    )
    return None if row is None else dict(row)


async def by_token(conn: asyncpg.Connection, token: str) -> Subscription | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM mod_rss.websub WHERE token = $1", token)
    return None if row is None else Subscription.from_record(row)


async def verified(
    conn: asyncpg.Connection, sub_id: int, *, now: datetime, lease_s: int, renew_at: datetime
) -> None:
    await conn.execute(
        """UPDATE mod_rss.websub SET state = 'active', verified_at = $2::timestamptz, lease_seconds = $3::int,
               expires_at = $2::timestamptz + make_interval(secs => $3::int), renew_at = $4, last_error = NULL,
               lease_until = NULL, leased_by = NULL, updated_at = now()
           WHERE id = $1""",
        sub_id,
        now,
        lease_s,
        renew_at,
    )


async def failed(conn: asyncpg.Connection, sub_id: int, error: str) -> None:
    """The hub refused or denied: mark failed and poll the feed at once (normal cadence from then on)."""
    feed_id = await conn.fetchval(
        """UPDATE mod_rss.websub SET state = 'failed', last_error = $2, lease_until = NULL, updated_at = now()
           WHERE id = $1 RETURNING feed_id""",
        sub_id,
        error[:500],
    )
    await poll_soon(conn, [feed_id] if feed_id is not None else [])


async def renew_requested(
    conn: asyncpg.Connection, sub_id: int, *, retry_at: datetime, error: str | None
) -> None:
    """A renewal was sent (or refused): the lease stands until the hub verifies or the lease lapses."""
    await conn.execute(
        """UPDATE mod_rss.websub SET requested_at = now(), renew_at = $2, last_error = $3,
               lease_until = NULL, leased_by = NULL, updated_at = now() WHERE id = $1""",
        sub_id,
        retry_at,
        error,
    )


async def active_until(conn: asyncpg.Connection, feed_id: int, now: datetime) -> datetime | None:
    """When the feed's active subscription's lease ends, or None when it has none."""
    until: datetime | None = await conn.fetchval(
        "SELECT expires_at FROM mod_rss.websub WHERE feed_id = $1 AND state = 'active' AND expires_at > $2",
        feed_id,
        now,
    )
    return until


async def is_active(conn: asyncpg.Connection, feed_id: int, now: datetime) -> bool:
    return bool(
        await conn.fetchval(
            "SELECT 1 FROM mod_rss.websub WHERE feed_id = $1 AND state = 'active' AND expires_at > $2",
            feed_id,
            now,
        )
    )


async def record_push(conn: asyncpg.Connection, sub_id: int, *, accepted: bool) -> None:
    column = "pushes" if accepted else "rejected_pushes"
    await conn.execute(
        f"UPDATE mod_rss.websub SET {column} = {column} + 1, last_push_at = now() WHERE id = $1", sub_id
    )


async def unsubscribing(conn: asyncpg.Connection, feed_ids: list[int]) -> list[Subscription]:
    """Before feeds are removed: their subscriptions wait for the hub's unsubscribe verification (failed
    ones have nothing to cancel and go at once)."""
    await conn.execute(
        "DELETE FROM mod_rss.websub WHERE feed_id = ANY($1::bigint[]) AND state = 'failed'", feed_ids
    )
    rows = await conn.fetch(
        f"""UPDATE mod_rss.websub SET state = 'unsubscribing', requested_at = now(), updated_at = now()
            WHERE feed_id = ANY($1::bigint[]) AND state <> 'failed' RETURNING {_COLUMNS}""",
        feed_ids,
    )
    return [Subscription.from_record(r) for r in rows]


async def delete(conn: asyncpg.Connection, sub_id: int) -> None:
    await conn.execute("DELETE FROM mod_rss.websub WHERE id = $1", sub_id)


async def expire(conn: asyncpg.Connection, *, now: datetime, verify_timeout_s: float) -> dict[str, int]:
    """Hub failures found by the clock: a verification that never came, a lease that lapsed. Their feeds
    are polled at once; unsubscribe checks that never came are forgotten."""
    cutoff = now - timedelta(seconds=verify_timeout_s)
    never_verified = await conn.fetch(
        """UPDATE mod_rss.websub SET state = 'failed', last_error = 'the hub never verified the subscription',
               updated_at = now() WHERE state = 'pending' AND requested_at <= $1 RETURNING feed_id""",
        cutoff,
    )
    lapsed = await conn.fetch(
        """UPDATE mod_rss.websub SET state = 'failed', last_error = 'the lease lapsed without renewal',
               updated_at = now() WHERE state = 'active' AND expires_at <= $1 RETURNING feed_id""",
        now,
    )
    forgotten = await conn.execute(
        "DELETE FROM mod_rss.websub WHERE state = 'unsubscribing' AND requested_at <= $1", cutoff
    )
    await poll_soon(conn, [r["feed_id"] for r in [*never_verified, *lapsed] if r["feed_id"] is not None])
    return {
        "never_verified": len(never_verified),
        "lapsed": len(lapsed),
        "unsubscribe_forgotten": int(forgotten.split()[-1]),
    }
