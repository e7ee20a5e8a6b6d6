"""Raw fetches: the exact response bytes, content-addressed, stored before parsing."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg


@dataclass(frozen=True, slots=True)
class RawSaved:
    raw_id: int
    same_as_last: bool  # byte-identical to this feed's previous 200, which parsed fine: nothing to parse


async def save_raw(
    conn: asyncpg.Connection,
    *,
    feed_id: int,
    url: str,
    status: int,
    headers: dict[str, str],
    body: bytes,
    keep: int,
    request_headers: Mapping[str, str] | None = None,
) -> RawSaved:
    """Store the exact response (content-addressed) before parsing, with the request headers we sent
    (seed 001 §4.2), keeping the last `keep` per feed."""
    digest = hashlib.sha256(body).hexdigest()
    last = await conn.fetchrow(
        """SELECT body_sha256, parse_error FROM mod_rss.raw_fetches WHERE feed_id = $1
           ORDER BY fetched_at DESC, id DESC LIMIT 1""",
        feed_id,
    )
    if not await conn.fetchval(
        "SELECT 1 FROM mod_rss.raw_blobs WHERE sha256 = $1", digest
    ):  # don't resend known bytes
        await conn.execute(
            "INSERT INTO mod_rss.raw_blobs (sha256, body, size) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING",
            digest,
            body,
            len(body),
        )
    raw_id: int = await conn.fetchval(
        """INSERT INTO mod_rss.raw_fetches (feed_id, url, status, headers, body_sha256, request_headers)
           VALUES ($1, $2, $3, $4, $5, $6) RETURNING id""",
        feed_id,
        url,
        status,
        headers,
        digest,
        None if request_headers is None else dict(request_headers),
    )
    await conn.execute(
        """DELETE FROM mod_rss.raw_fetches WHERE feed_id = $1 AND id NOT IN (
               SELECT id FROM mod_rss.raw_fetches WHERE feed_id = $1 ORDER BY fetched_at DESC, id DESC LIMIT $2)""",
        feed_id,
        max(keep, 1),
    )
    return RawSaved(
        raw_id, last is not None and last["body_sha256"] == digest and last["parse_error"] is None
    )


async def mark_parse_error(conn: asyncpg.Connection, raw_id: int, error: str) -> None:
    await conn.execute("UPDATE mod_rss.raw_fetches SET parse_error = $2 WHERE id = $1", raw_id, error)


async def delete_orphan_blobs(conn: asyncpg.Connection) -> int:
    result: str = await conn.execute(
        """DELETE FROM mod_rss.raw_blobs b WHERE NOT EXISTS (SELECT 1 FROM mod_rss.raw_fetches r WHERE r.body_sha256 = b.sha256)"""
    )
    return int(result.split()[-1])


async def get_raw(conn: asyncpg.Connection, raw_id: int) -> dict[str, Any] | None:
    """One stored fetch with its exact headers and body (GET /api/v1/raw/{id}), or None."""
    row = await conn.fetchrow(
        """SELECT r.id, r.feed_id, r.url, r.status, r.fetched_at, r.headers, r.request_headers, r.body_sha256, r.parse_error,
                  b.size, b.body
           FROM mod_rss.raw_fetches r JOIN mod_rss.raw_blobs b ON b.sha256 = r.body_sha256 WHERE r.id = $1""",
        raw_id,
    )
    return dict(row) if row is not None else None
