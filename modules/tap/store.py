"""mod_tap SQL: committed offsets per file (locked for the writer), and raw fetches through rss_public."""

from __future__ import annotations

import uuid
from datetime import datetime

import asyncpg

from host import blobcodec


async def lock_lines(conn: asyncpg.Connection, directory: uuid.UUID, path: str) -> int:
    """Lock the file's row until the caller's transaction ends (every host's writer of this file waits
    here) and return its committed offset."""
    committed: int = await conn.fetchval(
        """INSERT INTO mod_tap.files (directory_id, path, kind) VALUES ($1, $2, 'lines')
           ON CONFLICT (directory_id, path) DO UPDATE SET kind = EXCLUDED.kind RETURNING committed""",
        directory,
        path,
    )
    return committed


async def commit_offset(conn: asyncpg.Connection, directory: uuid.UUID, path: str, offset: int) -> None:
    await conn.execute(
        "UPDATE mod_tap.files SET committed = $3, updated_at = now() WHERE directory_id = $1 AND path = $2",
        directory,
        path,
        offset,
    )


async def claim_blob(conn: asyncpg.Connection, directory: uuid.UUID, path: str) -> bool:
    """True when this transaction is the blob's writer; False when it was written (committed) before.
    A second host with the same blob waits on the row until the first commits or rolls back."""
    return bool(
        await conn.fetchval(
            """INSERT INTO mod_tap.files (directory_id, path, kind) VALUES ($1, $2, 'blob')
               ON CONFLICT (directory_id, path) DO NOTHING RETURNING true""",
            directory,
            path,
        )
    )


async def forget(conn: asyncpg.Connection, directory: uuid.UUID, path: str) -> None:
    await conn.execute("DELETE FROM mod_tap.files WHERE directory_id = $1 AND path = $2", directory, path)


async def lines_files(conn: asyncpg.Connection, directory: uuid.UUID) -> list[tuple[str, int]]:
    """Every NDJSON file of the directory with its committed offset, locked (call inside a transaction)."""
    rows = await conn.fetch(
        """SELECT path, committed FROM mod_tap.files WHERE directory_id = $1 AND kind = 'lines'
           ORDER BY path FOR UPDATE""",
        directory,
    )
    return [(r["path"], r["committed"]) for r in rows]


async def has_raw_view(conn: asyncpg.Connection) -> bool:
    """The rss module may be absent or older: then there are no raw payloads to tap."""
    return bool(await conn.fetchval("SELECT to_regclass('rss_public.raw_fetches') IS NOT NULL"))


async def raw_fetched_at(conn: asyncpg.Connection, fetch_id: int) -> datetime | None:
    """When rss fetched it, or None when rss no longer keeps that fetch (`rss.raw_keep`)."""
    fetched_at: datetime | None = await conn.fetchval(
        "SELECT fetched_at FROM rss_public.raw_fetches WHERE id = $1", fetch_id
    )
    return fetched_at


async def raw_body(conn: asyncpg.Connection, fetch_id: int) -> bytes | None:
    """The fetch's exact body (stored compressed: rss/0031), or None when rss no longer keeps it."""
    row = await conn.fetchrow(
        "SELECT body_codec, body_stored FROM rss_public.raw_fetches WHERE id = $1", fetch_id
    )
    return None if row is None else blobcodec.decode(row["body_codec"], row["body_stored"])
