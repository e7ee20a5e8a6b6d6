"""Search, the use case the CLI, the REST API, the console and the NATS service share: a request as
fields (docs/search.md) → the hybrid search's response; and re-embedding every entry (`rss reembed`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncpg

    from host.ai import AIServices, Embedder
    from host.module import ModuleContext
    from modules.rss.search.query import CoverageCache, SearchResponse

SUBJECT = "feedeater.rss.search"  # NATS request/reply: the search service answers, `feedeater search` asks


async def search(
    pool: asyncpg.Pool,
    ai: AIServices,
    request: object,
    coverage_cache: CoverageCache | None = None,
) -> SearchResponse:
    """The request (a JSON object's value: docs/search.md) checked by its own rules first (`UserError`: not
    an object, no words, a date that does not exist…), then searched."""
    from modules.rss.search.query import parse_request, search

    return await search(pool, ai, parse_request(request), coverage_cache=coverage_cache)


async def queue_reembed(pool: asyncpg.Pool) -> int:
    """Queue every entry for embedding again (after an embedding model change); how many are queued."""
    from modules.rss.store import embeddings

    return await embeddings.mark_all_pending(pool)


async def reembed(
    ctx: ModuleContext, embedder: Embedder, on_progress: Callable[[int], None] | None = None
) -> dict[str, Any]:
    """Embed every queued entry here, now (`on_progress`: entries done so far, the CLI's bar): the
    counts, and `pending`: what is left to the embed job (the provider failing)."""
    from modules.rss.enrich import embed
    from modules.rss.store import embeddings

    async def on_batch(counts: Counter[str]) -> None:
        if on_progress is not None:
            on_progress(counts["embedded"] + counts["empty"] + counts["failed"])

    counts = await embed.embed_pending(
        ctx.pool,
        embedder,
        batch_size=int(ctx.settings["embed_batch_size"]),
        max_chars=int(ctx.settings["embed_max_chars"]),
        run_seconds=float("inf"),
        progress=on_batch,
    )
    return {**counts, "pending": (await embeddings.backlog(ctx.pool))["pending"]}
