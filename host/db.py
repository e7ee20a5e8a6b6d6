"""PostgreSQL connections: one asyncpg pool per process, with JSON and pgvector codecs."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from host import roles
from host.backoff import Backoff
from host.errors import UserError
from host.redact import redact

log = logging.getLogger("feedeater.db")


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await conn.set_type_codec("json", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    await register_vector(conn)


async def connect(url: str, **kwargs: Any) -> asyncpg.Connection:
    """A single connection (migrations, CLI); a clear error when the database is unreachable."""
    try:
        return await asyncpg.connect(url, timeout=10, **kwargs)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise UserError(
            f"cannot connect to PostgreSQL at {redact(url)}: {exc}",
            "check FEEDEATER_DATABASE_URL, or unset it to use the embedded database",
        ) from None


_WAIT = Backoff(0.5, 10.0)


async def wait_for(url: str, seconds: float) -> None:
    """Retry an unreachable PostgreSQL with growing pauses for up to `seconds`, logging each attempt;
    then one clear error. Lets `feedeater run` start before (or while) the database comes up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    attempts = 0
    while True:
        try:
            conn = await asyncpg.connect(url, timeout=10)
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            left = deadline - loop.time()
            if left <= 0:
                raise UserError(
                    f"cannot connect to PostgreSQL at {redact(url)} after {seconds:g}s: {exc}",
                    "start the database or check FEEDEATER_DATABASE_URL; FEEDEATER_DB_WAIT_SECONDS sets the wait",
                ) from None
            attempts += 1
            pause = min(_WAIT.delay(attempts), left)
            log.warning(
                "PostgreSQL at %s unreachable (%s); retrying in %.1fs, giving up in %.0fs",
                redact(url),
                exc,
                pause,
                left,
            )
            await asyncio.sleep(pause)
        else:
            await conn.close()
            return


async def create_pool(
    url: str, *, min_size: int = 1, max_size: int = 10, role: str | None = None
) -> asyncpg.Pool:
    """The host's pool, or with `role` a module's: its connections act as that role (host/roles.py)."""

    async def init(conn: asyncpg.Connection) -> None:
        await _init_connection(conn)
        if role is not None:
            await roles.set_role(conn, role)

    try:
        pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, init=init, timeout=10)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise UserError(
            f"cannot connect to PostgreSQL at {redact(url)}: {exc}",
            "check FEEDEATER_DATABASE_URL, or unset it to use the embedded database",
        ) from None
    assert pool is not None
    return pool
