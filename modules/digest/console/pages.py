"""Console pages of the digest module: recent digests, one digest (its items link to their story
clusters), a story cluster, an article's dedup decision; read through the module's own store (the rss
side never reads mod_digest)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from host.console.render import add_templates, page
from host.errors import UserError
from host.module import ModuleContext
from modules.digest.store import digests, inspect

RECENT = 50
SECTIONS = (("top", "Top stories"), ("noteworthy", "Noteworthy"), ("also", "Also mentioned"))


def sections(structured: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """A stored digest's items by section (for the page's links to each item's story cluster)."""
    data = json.loads(structured) if isinstance(structured, str) else structured
    items = data.get("items", []) if isinstance(data, dict) else []
    return [(title, [i for i in items if i.get("section") == key]) for key, title in SECTIONS]


async def build(ctx: ModuleContext) -> APIRouter:
    add_templates("modules.digest.console")
    router = APIRouter()

    async def shown(
        request: Request, what: str, template: str, read: Callable[[Any], Awaitable[dict[str, Any]]]
    ) -> HTMLResponse:
        """A page from what `read` returns (its template's context), or a 404 page saying what is missing."""
        async with ctx.pool.acquire() as conn:
            try:
                record = await read(conn)
            except UserError as exc:
                return page(request, "error.html", 404, title=f"No such {what}", message=str(exc))
        return page(request, template, **record)

    @router.get("/digests")
    async def recent(request: Request, type: str | None = None) -> HTMLResponse:
        async with ctx.pool.acquire() as conn:
            rows = await digests.list_recent(conn, type or None, RECENT)
        return page(request, "digest/digests.html", title="Digests", rows=rows, kind=type)

    @router.get("/digests/{ref}")
    async def one(request: Request, ref: str) -> HTMLResponse:
        async def read(conn: Any) -> dict[str, Any]:
            d = await digests.get(conn, ref)
            return {"d": d, "sections": sections(d["structured"]), "title": f"{d['type']} digest"}

        return await shown(request, "digest", "digest/digest.html", read)

    @router.get("/clusters/{cluster_id}")
    async def cluster(request: Request, cluster_id: int) -> HTMLResponse:
        async def read(conn: Any) -> dict[str, Any]:
            c = await inspect.cluster(conn, cluster_id)
            return {"c": c, "title": f"Story cluster {c['cluster_id']}"}

        return await shown(request, "story cluster", "digest/cluster.html", read)

    @router.get("/articles/{ref}")
    async def article(request: Request, ref: str) -> HTMLResponse:
        async def read(conn: Any) -> dict[str, Any]:
            a = await inspect.article(conn, await inspect.resolve(conn, ref))
            return {"a": a, "title": f"Article {a['id']}"}

        return await shown(request, "article", "digest/article.html", read)

    return router
