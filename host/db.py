"""PostgreSQL connections: one asyncpg pool per process, with JSON and pgvector codecs."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from host.errors import UserError

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


async def wait_for(url: str, seconds: float) -> None:
    """Retry an unreachable PostgreSQL with growing pauses for up to `seconds`, logging each attempt;
    then one clear error. Lets `feedeater run` start before (or while) the database comes up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    delay = 0.5
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
            pause = min(delay, left)
            log.warning(
                "PostgreSQL at %s unreachable (%s); retrying in %.1fs, giving up in %.0fs",
                redact(url),
                exc,
                pause,
                left,
            )
            await asyncio.sleep(pause)
            delay = min(delay * 2, 10.0)
        else:
            await conn.close()
            return


async def create_pool(url: str, *, min_size: int = 1, max_size: int = 10) -> asyncpg.Pool:
    try:
        pool = await asyncpg.create_pool(
            url, min_size=min_size, max_size=max_size, init=_init_connection, timeout=10
        )
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise UserError(
            f"cannot connect to PostgreSQL at {redact(url)}: {exc}",
            "check FEEDEATER_DATABASE_URL, or unset it to use the embedded database",
        ) from None
    assert pool is not None
    return pool


def redact(url: str) -> str:
    """Hide the password in a connection URL before it is printed."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in creds else url
