"""Build the host's ASGI app: the host's own endpoints plus every enabled module's routers.

Modules declare `Routes` in their manifest; each router is mounted under `Routes.prefix` (default
`/api/v1`), so the whole HTTP surface is one OpenAPI document at `/openapi.json`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg
from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from host.module import ModuleContext, Routes
from host.web import auth, contexts, docs, errors

HealthCheck = Callable[[], Awaitable[dict[str, Any]]]


async def build_app(
    health: HealthCheck,
    mounted: Sequence[tuple[ModuleContext, Routes]],
    *,
    version: str,
    pool: asyncpg.Pool,
    bind_host: str = "127.0.0.1",
) -> FastAPI:
    """`bind_host` decides the API's auth policy (host.web.auth): beyond loopback every request needs a token."""
    app = FastAPI(title="feedeater", version=version, docs_url=None, redoc_url=None)
    docs.mount(app)  # /api/docs from bundled files: FastAPI's loads them from a CDN
    loopback = auth.is_loopback(bind_host)
    app.state.auth = auth.AuthPolicy(pool, loopback=loopback)
    auth.document(app, loopback=loopback)
    errors.install(app)

    def mount(router: APIRouter, prefix: str, tag: str, *, public: bool = False) -> None:
        """Every router gets the same auth rules (unless it authenticates its callers itself) and
        declares the same error shape."""
        app.include_router(
            router,
            prefix=prefix,
            tags=[tag],
            dependencies=[] if public else [Depends(auth.authorize)],
            responses=errors.ERROR_RESPONSES,
        )

    @app.get("/healthz", tags=["host"], summary="Health of the database, the bus and every unit")
    async def healthz() -> JSONResponse:
        report = await health()
        return JSONResponse(report, status_code=200 if report.get("ok") else 503)

    @app.get("/metrics", tags=["host"], summary="Prometheus metrics", response_class=Response)
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    mount(contexts.build(pool), "/api/v1", "host")
    for ctx, routes in mounted:
        mount(await routes.build(ctx), routes.prefix, ctx.name, public=routes.public)
    return app
