"""mod_digest.digests: built digests, the previous one of a type (for trends)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import asyncpg

from host.errors import UserError


async def insert(
    conn: asyncpg.Connection,
    *,
    digest_id: uuid.UUID,
    kind: str,
    start: datetime,
    end: datetime,
    scheduled: bool,
    article_count: int,
    duplicates_removed: int,
    markdown: str,
    structured: dict[str, Any],
) -> bool:
    """False when this digest id exists already (a scheduled slot another host built)."""
    return bool(
        await conn.fetchval(
            """INSERT INTO mod_digest.digests (id, type, window_start, window_end, scheduled, article_count,
                   duplicates_removed, markdown, structured)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING RETURNING true""",
            digest_id,
            kind,
            start,
            end,
            scheduled,
            article_count,
            duplicates_removed,
            markdown,
            structured,  # the pool's jsonb codec encodes it: json.dumps here stored a JSON *string*
        )
    )


async def latest(conn: asyncpg.Connection, kind: str, *, before: datetime) -> dict[str, Any] | None:
    row = await conn.fetchrow(
        "SELECT id, structured, window_end FROM mod_digest.digests WHERE type = $1 AND window_end < $2 "
        "ORDER BY window_end DESC LIMIT 1",
        kind,
        before,
    )
    return None if row is None else dict(row)


async def last_scheduled(conn: asyncpg.Connection) -> dict[str, datetime]:
    rows = await conn.fetch(
        "SELECT type, max(window_end) AS at FROM mod_digest.digests WHERE scheduled GROUP BY type"
    )
    return {r["type"]: r["at"] for r in rows}


async def list_recent(conn: asyncpg.Connection, kind: str | None, limit: int) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        """SELECT id, type, window_start, window_end, scheduled, article_count, duplicates_removed, created_at
           FROM mod_digest.digests WHERE $1::text IS NULL OR type = $1 ORDER BY created_at DESC LIMIT $2""",
        kind,
        limit,
    )
    return [dict(r) for r in rows]


async def get(conn: asyncpg.Connection, ref: str) -> dict[str, Any]:
    """A digest by id (or unique id prefix)."""
    rows = await conn.fetch(
        "SELECT id, type, markdown, structured, created_at FROM mod_digest.digests WHERE id::text LIKE $1 || '%' "
        "ORDER BY created_at DESC LIMIT 2",
        ref.strip().lower(),
    )
    if len(rows) != 1:
        raise UserError(
            f"{'no' if not rows else 'more than one'} digest matches {ref!r}", "see `feedeater digest list`"
        )
    return dict(rows[0])
