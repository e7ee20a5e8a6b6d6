"""Search, the use case the CLI, the REST API, the console and the NATS service share: a request as
fields (docs/search.md) → the hybrid search's response."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncpg

    from host.ai import AIServices
    from modules.rss.search.query import CoverageCache, SearchResponse


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
