"""The embed job: embeds new and revised entries in the background, so ingestion never waits for AI.

The queue is `mod_rss.entry_embeddings` (a trigger adds a pending row for every inserted entry and
re-queues revised ones). A run claims a batch in a short transaction (SKIP LOCKED plus a lease, so hosts
share the work), calls the provider with no transaction open, then writes vectors and state. When the
provider is down the batch stays pending with attempts, last_error and a backoff, and the run stops
rather than hammering a dead server; entries are only marked failed when the provider refuses their text
while accepting their neighbours'.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from host import progress
from host.ai import Embedder, ProviderError
from host.backoff import Backoff
from host.errors import UserError
from host.module import ModuleContext
from host.workqueue import WorkQueue
from modules.rss import metrics

log = logging.getLogger("feedeater.rss.embed")

LEASE_S = 600  # a claimed batch is invisible to other hosts this long (a crashed host's batch comes back)
RETRY_BASE_S = 60.0
RETRY_CAP_S = 3600.0
RETRY = Backoff(RETRY_BASE_S, RETRY_CAP_S)
MAX_DIMS = {"vector": 2000, "halfvec": 4000}  # pgvector's HNSW limits


# -- pure decisions ------------------------------------------------------------------------------
def embedding_text(title: str, text: str, max_chars: int) -> str:
    """What gets embedded: the title, then the plain text, whitespace collapsed, cut at a word boundary."""
    joined = " ".join(" ".join(part.split()) for part in (title, text) if part.strip())
    if len(joined) <= max_chars:
        return joined
    cut = joined[:max_chars]
    space = cut.rfind(" ")
    return cut[:space] if space > max_chars // 2 else cut


def retry_delay_s(attempts: int) -> float:
    """Backoff before the next try of an entry that failed `attempts` times: 1, 2, 4 … 60 minutes."""
    return RETRY.delay(attempts)


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


# -- storage -------------------------------------------------------------------------------------
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
class Claimed:
    entry_id: int
    content_hash: str
    attempts: int
    text: str


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


async def claim(conn: asyncpg.Connection, *, limit: int, max_chars: int) -> list[Claimed]:
    """Lease up to `limit` due pending entries, newest first (fresh news matters most in search)."""
    rows = await QUEUE.claim(conn, now=None, limit=limit, lease_s=LEASE_S)
    return [
        Claimed(
            r["entry_id"],
            r["content_hash"],
            r["attempts"],
            embedding_text(r["title"], r["best_text"], max_chars),
        )
        for r in rows
    ]


async def save_done(
    conn: asyncpg.Connection, model: str, items: Sequence[Claimed], vectors: Sequence[Sequence[float] | None]
) -> None:
    """Store vectors (None: nothing to embed). An entry revised meanwhile stays pending for its new text."""
    await conn.executemany(
        """UPDATE mod_rss.entry_embeddings x
           SET embedding = $2, dims = $3, model = $4, embedded_hash = $5, embedded_at = now(), last_error = NULL,
               status = CASE WHEN e.content_hash = $5 THEN 'done' ELSE 'pending' END,
               attempts = 0, next_attempt_at = now()
           FROM mod_rss.entries e WHERE x.entry_id = $1 AND e.id = x.entry_id""",
        [
            (c.entry_id, v, len(v) if v is not None else None, model, c.content_hash)
            for c, v in zip(items, vectors, strict=True)
        ],
    )


async def save_failed(conn: asyncpg.Connection, items: Sequence[Claimed], error: str, *, final: bool) -> None:
    """Count the attempt; `final` marks entries the provider refuses, the rest wait for their backoff."""
    await conn.executemany(
        """UPDATE mod_rss.entry_embeddings SET attempts = attempts + 1, last_error = $2,
               status = CASE WHEN $3 THEN 'failed' ELSE 'pending' END,
               next_attempt_at = now() + make_interval(secs => $4)
           WHERE entry_id = $1""",
        [(c.entry_id, error[:500], final, retry_delay_s(c.attempts + 1)) for c in items],
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


# -- the run -------------------------------------------------------------------------------------
class ProviderDown(Exception):
    """The provider failed for a reason no entry caused; the run stops and tries again next time."""


@dataclass(slots=True)
class _Outcome:
    embedded: int = 0
    empty: int = 0
    refused: list[Claimed] = field(default_factory=list)
    error: str = ""


async def _embed_items(pool: asyncpg.Pool, embedder: Embedder, items: list[Claimed], out: _Outcome) -> None:
    """Embed and store `items`; halve a batch the provider refuses, to find the entries it refuses."""
    texts = [c.text for c in items if c.text]
    try:
        vectors = await embedder.embed(texts)
    except ProviderError as exc:
        if not exc.bad_input:
            async with pool.acquire() as conn:
                await save_failed(conn, items, str(exc), final=False)
            raise ProviderDown(str(exc)) from exc
        if len(items) == 1:
            out.refused += items
            out.error = str(exc)
            return
        half = len(items) // 2
        await _embed_items(pool, embedder, items[:half], out)
        await _embed_items(pool, embedder, items[half:], out)
        return
    ordered = iter(vectors)
    async with pool.acquire() as conn:
        if vectors:
            await ensure_index(conn, len(vectors[0]))
        await save_done(conn, embedder.model, items, [next(ordered) if c.text else None for c in items])
    out.embedded += len(texts)
    out.empty += len(items) - len(texts)


async def embed_pending(
    pool: asyncpg.Pool,
    embedder: Embedder,
    *,
    batch_size: int,
    max_chars: int,
    run_seconds: float,
    progress: Callable[[Counter[str]], Awaitable[None]] | None = None,
) -> Counter[str]:
    """Embed due pending entries batch by batch until none are left, time is up, or the provider fails."""
    counts: Counter[str] = Counter()
    deadline = time.monotonic() + run_seconds
    while time.monotonic() < deadline:
        async with pool.acquire() as conn:
            items = await claim(conn, limit=batch_size, max_chars=max_chars)
        if not items:
            break
        out = _Outcome()
        try:
            await _embed_items(pool, embedder, items, out)
        except ProviderDown as exc:
            log.warning("embedding paused, the provider is failing: %s", exc)
            counts["provider_failures"] += 1
            break
        finally:
            counts.update(embedded=out.embedded, empty=out.empty)
        if out.refused:
            # Refused beside accepted neighbours: these texts are the problem. Refused all: the setup is.
            final = out.embedded + out.empty > 0
            async with pool.acquire() as conn:
                await save_failed(conn, out.refused, out.error, final=final)
            if not final:
                log.warning("embedding paused, the provider refuses every entry: %s", out.error)
                counts["provider_failures"] += 1
                break
            counts["failed"] += len(out.refused)
        counts["batches"] += 1
        if progress is not None:
            await progress(counts)
    return +counts


PROGRESS_LOG_S = 30.0  # a long embed run re-counts its backlog and logs how far it has got this often


async def run(ctx: ModuleContext) -> dict[str, Any]:
    """The scheduled job; with no embedder configured it does nothing (search stays full-text).

    While it runs, its progress is the backlog: done so far of done + still pending (entries keep
    arriving), with rate and time left (`jobs list`, `status`, the console, /metrics). Returns what it
    embedded, its rate and the backlog left."""
    embedder = ctx.ai.embedder
    if embedder is None:
        return {"skipped": "no embedder configured"}
    started = time.monotonic()
    waiting = (await backlog(ctx.pool))["pending"]
    metrics.EMBED_BACKLOG.set(waiting)
    progress.expect(waiting, "entries")
    reported, last_log = 0, started

    async def report(counts: Counter[str]) -> None:
        nonlocal reported, last_log
        done = counts["embedded"] + counts["empty"] + counts["failed"]
        progress.advance("entries", done - reported)
        reported = done
        if time.monotonic() - last_log < PROGRESS_LOG_S:
            return
        last_log = time.monotonic()
        pending = (await backlog(ctx.pool))["pending"]  # entries arrived since: the total grows
        metrics.EMBED_BACKLOG.set(pending)
        progress.left(pending, "entries")
        shown = progress.running_here()
        log.info(
            "embedding newest first: %s",
            progress.text(shown.as_dict()) if shown is not None else f"{done} done, {pending} pending",
            extra={"done": done, "backlog": pending},
        )

    counts = await embed_pending(
        ctx.pool,
        embedder,
        batch_size=int(ctx.settings["embed_batch_size"]),
        max_chars=int(ctx.settings["embed_max_chars"]),
        run_seconds=float(ctx.settings["embed_run_seconds"]),
        progress=report,
    )
    left = (await backlog(ctx.pool))["pending"]
    metrics.EMBEDDED.inc(counts["embedded"])
    metrics.EMBED_BACKLOG.set(left)
    rate = counts["embedded"] / max(time.monotonic() - started, 1e-9)
    return {"embedded": counts["embedded"], "per_second": round(rate, 1), "pending": left} | dict(counts)
