"""GET /api/v1/contexts and /api/v1/contexts/{module}:{source_key}: the host owns contexts (host.contexts)."""

from __future__ import annotations

import asyncpg
from fastapi import APIRouter, Path, Query

from host import contexts
from host.web.errors import ERROR_RESPONSES, not_found
from host.web.models import NO_NUL, Context, ContextDetail

MESSAGES_SHOWN = 20


def build(pool: asyncpg.Pool) -> APIRouter:
    router = APIRouter(responses=ERROR_RESPONSES)

    @router.get("/contexts", summary="Every context, newest first")
    async def list_contexts(
        module: str | None = Query(
            default=None, description="only this owner module", max_length=100, pattern=NO_NUL
        ),
    ) -> list[Context]:
        async with pool.acquire() as conn:
            rows = await contexts.list_all(conn, module)
        return [Context.model_validate(r) for r in rows]

    @router.get("/contexts/{key:path}", summary="One context with its newest linked messages")
    async def get_context(key: str = Path(pattern=NO_NUL)) -> ContextDetail:
        """`key` is `<module>:<sourceKey>`, e.g. `rss:feed:12` (as in `feedeater contexts show`)."""
        owner, _, source_key = key.partition(":")
        async with pool.acquire() as conn:
            row = await contexts.get(conn, owner, source_key) if source_key else None
            if row is None:
                raise not_found(
                    f"context {key!r}", "list them with GET /api/v1/contexts; keys look like rss:feed:12"
                )
            messages = await contexts.messages(conn, owner, source_key, MESSAGES_SHOWN)
        return ContextDetail.model_validate({**row, "messages": messages})

    return router
