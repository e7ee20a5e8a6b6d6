"""Group commit on real PostgreSQL: concurrent writers share transactions, and a failure stays in its group."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import asyncpg
import pytest

from host.groupcommit import GroupCommit


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with asyncpg.create_pool(database_url, min_size=1, max_size=2) as p:
        await p.execute("CREATE TABLE marks (id int PRIMARY KEY, txid bigint NOT NULL)")
        yield p


async def mark(conn: asyncpg.Connection, ids: Sequence[int]) -> None:
    """Records the transaction each id was written in; id < 0 fails its whole group."""
    if any(i < 0 for i in ids):
        raise ValueError("negative id")
    await conn.executemany("INSERT INTO marks VALUES ($1, txid_current())", [(i,) for i in ids])


async def test_concurrent_writers_commit_together(pool: asyncpg.Pool) -> None:
    commits = GroupCommit(pool, mark, max_batch=40)
    await asyncio.gather(*(commits.submit(i) for i in range(100)))
    rows = await pool.fetch("SELECT id, txid FROM marks")
    assert sorted(r["id"] for r in rows) == list(range(100))  # every item written once
    groups = {r["txid"] for r in rows}
    # 100 writers in one loop iteration: groups of at most 40, so exactly three transactions.
    assert len(groups) == 3


async def test_a_lone_writer_is_not_held_back(pool: asyncpg.Pool) -> None:
    commits = GroupCommit(pool, mark)
    await asyncio.wait_for(commits.submit(1), timeout=60)  # bounded: held back would mean forever
    await commits.submit(2)  # a later writer starts a new group once the first is done
    assert len({r["txid"] for r in await pool.fetch("SELECT txid FROM marks")}) == 2


async def test_a_failed_group_fails_its_writers_only(pool: asyncpg.Pool) -> None:
    commits = GroupCommit(pool, mark, max_batch=2)
    results = await asyncio.gather(*(commits.submit(i) for i in (1, -1, 2, 3)), return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["ValueError", "ValueError", "NoneType", "NoneType"]
    # The failed group rolled back as a whole; the next group was written.
    assert sorted(r["id"] for r in await pool.fetch("SELECT id FROM marks")) == [2, 3]


async def test_a_cancelled_writer_still_has_its_item_written(pool: asyncpg.Pool) -> None:
    commits = GroupCommit(pool, mark)
    first = asyncio.create_task(commits.submit(1))
    second = asyncio.create_task(commits.submit(2))
    await asyncio.sleep(0)
    second.cancel()
    await first
    with pytest.raises(asyncio.CancelledError):
        await second
    assert sorted(r["id"] for r in await pool.fetch("SELECT id FROM marks")) == [1, 2]
