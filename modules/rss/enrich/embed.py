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
from host.module import ModuleContext
from modules.rss import metrics
from modules.rss.store import embeddings

log = logging.getLogger("feedeater.rss.embed")

LEASE_S = 600  # a claimed batch is invisible to other hosts this long (a crashed host's batch comes back)
RETRY_BASE_S = 60.0
RETRY_CAP_S = 3600.0
RETRY = Backoff(RETRY_BASE_S, RETRY_CAP_S)


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


# -- the queue -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Claimed:
    entry_id: int
    content_hash: str
    attempts: int
    text: str


async def claim(conn: asyncpg.Connection, *, limit: int, max_chars: int) -> list[Claimed]:
    """Lease up to `limit` due pending entries, newest first (fresh news matters most in search)."""
    return [
        Claimed(p.entry_id, p.content_hash, p.attempts, embedding_text(p.title, p.text, max_chars))
        for p in await embeddings.claim(conn, limit=limit, lease_s=LEASE_S)
    ]


async def save_failed(conn: asyncpg.Connection, items: Sequence[Claimed], error: str, *, final: bool) -> None:
    """Count the attempt; `final` marks entries the provider refuses, the rest wait for their backoff."""
    retries = [(c.entry_id, retry_delay_s(c.attempts + 1)) for c in items]
    await embeddings.save_failed(conn, retries, error, final=final)


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
            await embeddings.ensure_index(conn, len(vectors[0]))
        await embeddings.save_done(
            conn,
            embedder.model,
            [(c.entry_id, c.content_hash) for c in items],
            [next(ordered) if c.text else None for c in items],
        )
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
    waiting = (await embeddings.backlog(ctx.pool))["pending"]
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
        pending = (await embeddings.backlog(ctx.pool))["pending"]  # entries arrived since: the total grows
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
    left = (await embeddings.backlog(ctx.pool))["pending"]
    metrics.EMBEDDED.inc(counts["embedded"])
    metrics.EMBED_BACKLOG.set(left)
    rate = counts["embedded"] / max(time.monotonic() - started, 1e-9)
    return {"embedded": counts["embedded"], "per_second": round(rate, 1), "pending": left} | dict(counts)
