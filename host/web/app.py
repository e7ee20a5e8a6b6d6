"""Build the host's ASGI app: the host's own endpoints plus every enabled module's routers.

Modules declare `Routes` in their manifest; each router is mounted under `Routes.prefix` (default
`/api/v1`), so the whole HTTP surface is one OpenAPI document at `/openapi.json`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from host.module import ModuleContext, Routes

HealthCheck = Callable[[], Awaitable[dict[str, Any]]]


async def build_app(
    health: HealthCheck, mounted: Sequence[tuple[ModuleContext, Routes]], *, version: str
) -> FastAPI:
    app = FastAPI(title="feedeater", version=version, docs_url="/api/docs", redoc_url=None)

    @app.get("/healthz", tags=["host"], summary="Health of the database, the bus and every unit")
    async def healthz() -> JSONResponse:
        report = await health()
        return JSONResponse(report, status_code=200 if report.get("ok") else 503)

    @app.get("/metrics", tags=["host"], summary="Prometheus metrics", response_class=Response)
    async def metrics() -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    for ctx, routes in mounted:
        router = await routes.build(ctx)
        app.include_router(router, prefix=routes.prefix, tags=[ctx.name])
    return app
