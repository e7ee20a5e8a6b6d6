"""mod_rss.entry_embeddings: the embedding queue, vectors and their HNSW indexes (SQL only).

The queue gets a pending row for every inserted entry from a trigger (revised entries are queued again).
`vector_expr` is the indexed expression: queries must use exactly this text (and `dims = N`) to hit an
index, so the index and the search SQL both take it from here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from host.errors import UserError
from host.workqueue import WorkQueue

log = logging.getLogger("feedeater.rss.embed")

MAX_DIMS = {"vector": 2000, "halfvec": 4000}  # pgvector's HNSW limits


def vector_type(dims: int) -> str:
    """The pgvector type HNSW can index at this size (halfvec halves precision to reach 4,000)."""
    for kind, limit in MAX_DIMS.items():
        if 0 < dims <= limit:
            return kind
    raise UserError(
        f"embeddings of {dims} dimensions cannot be indexed (pgvector HNSW takes up to {MAX_DIMS['halfvec']})",
        "choose a smaller model or set embedding_dimensions (e.g. 1024) if the model supports it",
    )


def vector_expr(dims: int) -> str:
    """The indexed expression; queries must use exactly this text (and `dims = N`) to hit the index."""
    return f"(embedding::{vector_type(dims)}({dims}))"


def index_name(dims: int) -> str:
    return f"entry_embeddings_hnsw_{dims}"


async def ensure_index(conn: asyncpg.Connection, dims: int) -> bool:
    """Create the HNSW cosine index for this vector size if missing; True if this call created it."""
    name = index_name(dims)
    if await conn.fetchval("SELECT to_regclass($1)", f"mod_rss.{name}") is not None:
        return False
    kind = vector_type(dims)
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext('mod_rss.entry_embeddings_hnsw'))")
        await conn.execute("SET LOCAL maintenance_work_mem = '512MB'")  # a build over existing rows
        await conn.execute(
            f"""CREATE INDEX IF NOT EXISTS {name} ON mod_rss.entry_embeddings
                USING hnsw ({vector_expr(dims)} {kind}_cosine_ops) WHERE dims = {dims}"""
        )
    log.info("created HNSW index %s", name)
    return True


@dataclass(frozen=True, slots=True)
class Pending:
    """A claimed queue row with what its embedding text is made of."""

    entry_id: int
    content_hash: str
    attempts: int
    title: str
    text: str  # the entry's best text (entry_text: the article when extracted, else the feed's)


QUEUE = WorkQueue(
    table="mod_rss.entry_embeddings",
    key="entry_id",
    due="q.status = 'pending'",
    order="q.entry_id DESC",
    lease_column="next_attempt_at",  # a lease is a backoff that ends the same way
    owner_column=None,
    returning="q.entry_id, q.attempts, e.title, t.best_text, e.content_hash",
    returning_from=", mod_rss.entries e, mod_rss.entry_text t",
    returning_where="AND e.id = q.entry_id AND t.entry_id = q.entry_id",
)


async def claim(conn: asyncpg.Connection, *, limit: int, lease_s: float) -> list[Pending]:
    """Lease up to `limit` due pending entries, newest first."""
    rows = await QUEUE.claim(conn, now=None, limit=limit, lease_s=lease_s)
    return [
        Pending(r["entry_id"], r["content_hash"], r["attempts"], r["title"], r["best_text"]) for r in rows
    ]


async def save_done(
    conn: asyncpg.Connection,
    model: str,
    items: Sequence[tuple[int, str]],
    vectors: Sequence[Sequence[float] | None],
) -> None:
    """Store vectors of (entry id, content hash embedded) (None: nothing to embed). An entry revised
    meanwhile stays pending for its new text."""
    await conn.executemany(
        """UPDATE mod_rss.entry_embeddings x
           SET embedding = $2, dims = $3, model = $4, embedded_hash = $5, embedded_at = now(), last_error = NULL,
               status = CASE WHEN e.content_hash = $5 THEN 'done' ELSE 'pending' END,
               attempts = 0, next_attempt_at = now()
           FROM mod_rss.entries e WHERE x.entry_id = $1 AND e.id = x.entry_id""",
        [
            (entry_id, v, len(v) if v is not None else None, model, content_hash)
            for (entry_id, content_hash), v in zip(items, vectors, strict=True)
        ],
    )


async def save_failed(
    conn: asyncpg.Connection, retries: Sequence[tuple[int, float]], error: str, *, final: bool
) -> None:
    """Count an attempt of each (entry id, seconds until its next try); `final` marks them failed."""
    await conn.executemany(
        """UPDATE mod_rss.entry_embeddings SET attempts = attempts + 1, last_error = $2,
               status = CASE WHEN $3 THEN 'failed' ELSE 'pending' END,
               next_attempt_at = now() + make_interval(secs => $4)
           WHERE entry_id = $1""",
        [(entry_id, error[:500], final, delay_s) for entry_id, delay_s in retries],
    )


async def mark_all_pending(pool: asyncpg.Pool) -> int:
    """Queue every entry for embedding again (after a model change); returns how many are queued."""
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            "INSERT INTO mod_rss.entry_embeddings (entry_id) SELECT id FROM mod_rss.entries ON CONFLICT DO NOTHING"
        )
        result: str = await conn.execute(
            """UPDATE mod_rss.entry_embeddings
               SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL"""
        )
    return int(result.split()[-1])


async def backlog(pool: asyncpg.Pool) -> dict[str, int]:
    """Entries per embedding status (pending, done, failed)."""
    rows = await pool.fetch("SELECT status, count(*) AS n FROM mod_rss.entry_embeddings GROUP BY status")
    return {"pending": 0, "done": 0, "failed": 0} | {r["status"]: int(r["n"]) for r in rows}
