"""Raw fetches: the exact response bytes, content-addressed, stored before parsing, compressed
(host.blobcodec: zstd; rows from before rss/0031 stay 'identity' until `compress_old_blobs` reaches them).
Every reader gets the original bytes back through `body_of`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg

from host import blobcodec


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
    ):  # don't resend (or compress again) known bytes
        codec, stored = blobcodec.encode(body)
        await conn.execute(
            """INSERT INTO mod_rss.raw_blobs (sha256, body, size, codec) VALUES ($1, $2, $3, $4)
               ON CONFLICT (sha256) DO NOTHING""",
            digest,
            stored,
            len(body),
            codec,
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


def body_of(row: asyncpg.Record | None) -> dict[str, Any] | None:
    """A row selected with `b.codec, b.body` as a dict whose `body` is the original bytes."""
    if row is None:
        return None
    out = dict(row)
    out["body"] = blobcodec.decode(out.pop("codec"), out["body"])
    return out


async def get_raw(conn: asyncpg.Connection, raw_id: int) -> dict[str, Any] | None:
    """One stored fetch with its exact headers and body (GET /api/v1/raw/{id}), or None."""
    row = await conn.fetchrow(
        """SELECT r.id, r.feed_id, r.url, r.status, r.fetched_at, r.headers, r.request_headers, r.body_sha256, r.parse_error,
                  b.size, b.codec, b.body
           FROM mod_rss.raw_fetches r JOIN mod_rss.raw_blobs b ON b.sha256 = r.body_sha256 WHERE r.id = $1""",
        raw_id,
    )
    return body_of(row)


COMPRESS_BATCH = 200  # blobs per transaction at most: ~14 MB of bodies at the corpus mean
COMPRESS_BYTES = 64 * 1024 * 1024  # and this many bytes of bodies (one 100 MB body goes alone)


async def compress_old_blobs(pool: asyncpg.Pool, *, batch: int = COMPRESS_BATCH) -> int:
    """Compress the blobs stored before rss/0031 (codec 'identity'), a batch per transaction (at most
    `batch` blobs and about COMPRESS_BYTES of bodies), checking each round trip before the row is
    rewritten. A blob zstd cannot shrink stays as it is (and is not read again: its sha256 is past the
    cursor). Returns how many were compressed."""
    compressed, after = 0, ""
    while True:
        async with pool.acquire() as conn, conn.transaction():
            keys = await conn.fetch(
                """SELECT sha256 FROM (
                       SELECT sha256, size, sum(size) OVER (ORDER BY sha256) AS upto FROM mod_rss.raw_blobs
                       WHERE codec = 'identity' AND sha256 > $1 ORDER BY sha256 LIMIT $2) s
                   WHERE upto - size < $3""",
                after,
                batch,
                COMPRESS_BYTES,
            )
            if not keys:
                return compressed
            rows = await conn.fetch(
                """SELECT sha256, body FROM mod_rss.raw_blobs WHERE sha256 = ANY($1::text[]) AND codec = 'identity'
                   ORDER BY sha256 FOR UPDATE SKIP LOCKED""",
                [k["sha256"] for k in keys],
            )
            updates = []
            for r in rows:
                codec, stored = blobcodec.encode(r["body"])
                if codec != "identity" and blobcodec.decode(codec, stored) == r["body"]:
                    updates.append((r["sha256"], stored, codec))
            if updates:
                await conn.executemany(
                    "UPDATE mod_rss.raw_blobs SET body = $2, codec = $3 WHERE sha256 = $1", updates
                )
        compressed, after = compressed + len(updates), keys[-1]["sha256"]
