"""The claim/lease work queue on real PostgreSQL: due rows once, leases honoured and recovered."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from host.workqueue import WorkQueue

QUEUE = WorkQueue(table="jobs", key="id", due="q.due_at <= $1 AND q.kind = $4", order="q.due_at, q.id")
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


@pytest.fixture
async def conn(database_url: str) -> AsyncIterator[asyncpg.Connection]:
    c = await asyncpg.connect(database_url)
    await c.execute(
        """CREATE TABLE jobs (id int PRIMARY KEY, kind text, due_at timestamptz,
                              lease_until timestamptz, leased_by text)"""
    )
    await c.executemany(
        "INSERT INTO jobs (id, kind, due_at) VALUES ($1, $2, $3)",
        [(i, "a" if i % 2 else "b", NOW - timedelta(minutes=i)) for i in range(1, 11)],
    )
    yield c
    await c.close()


async def claim(c: asyncpg.Connection, owner: str, now: datetime = NOW, limit: int = 3) -> list[int]:
    rows = await QUEUE.claim(c, now=now, limit=limit, lease_s=60, owner=owner, params=["a"])
    return [r["id"] for r in rows]


async def test_claims_due_rows_in_order_and_records_the_owner(conn: asyncpg.Connection) -> None:
    assert await claim(conn, "h1") == [9, 7, 5]  # oldest due first, only kind "a"
    owners = await conn.fetch("SELECT id, leased_by, lease_until FROM jobs WHERE leased_by IS NOT NULL")
    assert {r["id"] for r in owners} == {5, 7, 9}
    assert all(r["leased_by"] == "h1" and r["lease_until"] == NOW + timedelta(seconds=60) for r in owners)


async def test_a_leased_row_is_not_claimed_again_until_its_lease_ends(conn: asyncpg.Connection) -> None:
    first = await claim(conn, "h1", limit=5)
    assert await claim(conn, "h2", limit=5) == []
    assert sorted(await claim(conn, "h2", now=NOW + timedelta(seconds=61), limit=5)) == sorted(first)


async def test_concurrent_claimers_never_share_a_row(database_url: str, conn: asyncpg.Connection) -> None:
    others = [await asyncpg.connect(database_url) for _ in range(4)]
    try:
        got = await asyncio.gather(*(claim(c, f"h{i}", limit=2) for i, c in enumerate(others)))
    finally:
        for c in others:
            await c.close()
    flat = [i for ids in got for i in ids]
    assert sorted(flat) == [1, 3, 5, 7, 9]  # every due row once, none twice


async def test_without_an_owner_column_and_with_the_database_clock(conn: asyncpg.Connection) -> None:
    queue = WorkQueue(table="jobs", key="id", due="q.kind = 'b'", order="q.id", owner_column=None)
    rows = await queue.claim(conn, now=None, limit=10, lease_s=30)
    assert [r["id"] for r in rows] == [2, 4, 6, 8, 10] and all(r["leased_by"] is None for r in rows)
    assert await queue.claim(conn, now=None, limit=10, lease_s=30) == []


async def test_renewing_pushes_only_the_owners_held_rows(conn: asyncpg.Connection) -> None:
    """Issue 25: a live host keeps its rows past a short lease; a row released or held by another host is
    left alone."""
    assert await claim(conn, "h1") == [9, 7, 5]
    assert await claim(conn, "h2") == [3, 1]
    await conn.execute(
        "UPDATE jobs SET lease_until = NULL, leased_by = NULL WHERE id = 5"
    )  # its work is done
    assert await QUEUE.renew(conn, [9, 7, 5, 3], lease_s=30, owner="h1") == 2
    rows = {r["id"]: r for r in await conn.fetch("SELECT id, lease_until, leased_by FROM jobs")}
    claimed_lease = NOW + timedelta(seconds=60)
    assert rows[9]["lease_until"] == rows[7]["lease_until"] > claimed_lease  # the database's now + 30 s
    assert rows[3]["lease_until"] == claimed_lease and rows[3]["leased_by"] == "h2"
    assert rows[5]["lease_until"] is None and rows[5]["leased_by"] is None
