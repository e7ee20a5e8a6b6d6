"""Group commit: many concurrent writers, one transaction for whatever arrived together.

Why: a poll job runs dozens of polls at once, and each one that learns nothing new (a 304) ends with one
small UPDATE. Alone, each costs a pool checkout, BEGIN, the statement, COMMIT and the connection reset:
five round trips for one row. Here the first writer starts a flush at once (no added latency on a quiet
host), and every writer that arrives while a flush runs joins the next one.

A writer's `submit` returns when its item is committed and raises what the flush raised: the items of a
failed flush are not retried here (the caller's own recovery applies, e.g. an unreleased lease expires).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

import asyncpg

T = TypeVar("T")
Write = Callable[[asyncpg.Connection, Sequence[T]], Awaitable[None]]


class GroupCommit(Generic[T]):
    """Batches `submit`ted items into transactions of at most `max_batch` items written by `write`."""

    def __init__(self, pool: asyncpg.Pool, write: Write[T], *, max_batch: int = 200) -> None:
        self._pool = pool
        self._write = write
        self._max_batch = max_batch
        self._pending: list[tuple[T, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> None:
        """Write `item` in the next group; returns once it is committed."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, done))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        await asyncio.shield(done)  # a cancelled writer leaves its item to the group it joined

    async def _flush(self) -> None:
        group: list[tuple[T, asyncio.Future[None]]] = []
        try:
            await asyncio.sleep(0)  # writers woken in the same loop iteration join the first group
            while self._pending:
                group = self._pending[: self._max_batch]
                del self._pending[: self._max_batch]
                try:
                    async with self._pool.acquire() as conn, conn.transaction():
                        await self._write(conn, [item for item, _ in group])
                except Exception as exc:  # handed to every writer of the group
                    _settle(group, exc)
                else:
                    _settle(group, None)
                group = []
        finally:
            self._flusher = None
            for _, done in [*group, *self._pending]:  # left only when the flusher was cancelled (shutdown)
                done.cancel()
            self._pending = []


def _settle(group: Sequence[tuple[object, asyncio.Future[None]]], error: BaseException | None) -> None:
    for _, done in group:
        if done.done():
            continue
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)
        with contextlib.suppress(asyncio.CancelledError):
            done.exception()  # marked as read: a writer cancelled meanwhile never reads it
