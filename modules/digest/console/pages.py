"""Console pages of the digest module: recent digests and one digest, read through the module's own
store (the rss side never reads mod_digest)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from host.console.render import add_templates, page
from host.errors import UserError
from host.module import ModuleContext
from modules.digest.store import digests

RECENT = 50


async def build(ctx: ModuleContext) -> APIRouter:
    add_templates("modules.digest.console")
    router = APIRouter()

    @router.get("/digests")
    async def recent(request: Request, type: str | None = None) -> HTMLResponse:
        async with ctx.pool.acquire() as conn:
            rows = await digests.list_recent(conn, type or None, RECENT)
        return page(request, "digest/digests.html", title="Digests", rows=rows, kind=type)

    @router.get("/digests/{ref}")
    async def one(request: Request, ref: str) -> HTMLResponse:
        async with ctx.pool.acquire() as conn:
            try:
                d = await digests.get(conn, ref)
            except UserError as exc:
                return page(request, "error.html", 404, title="No such digest", message=str(exc))
        return page(request, "digest/digest.html", title=f"{d['type']} digest", d=d)

    return router
