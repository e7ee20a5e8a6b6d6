"""Build the host's ASGI app: the host's own endpoints plus every enabled module's routers.

Modules declare `Routes` in their manifest; each router is mounted under `Routes.prefix` (default
`/api/v1`), so the whole HTTP surface is one OpenAPI document at `/openapi.json`.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg
from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from host.errors import UserError
from host.module import ModuleContext, Routes
from host.web import auth, contexts, docs, errors, gate, network
from host.web.slashes import MergeSlashes

HealthCheck = Callable[[], Awaitable[dict[str, Any]]]


async def build_app(
    health: HealthCheck,
    mounted: Sequence[tuple[ModuleContext, Routes]],
    *,
    version: str,
    pool: asyncpg.Pool,
    bind_host: str = "127.0.0.1",
    public_hosts: Sequence[str] = (),
    trusted_proxies: Sequence[str] = (),
    host_routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """`bind_host` decides the API's auth policy (host.web.auth): beyond loopback every request needs a
    token. `public_hosts` and `trusted_proxies` configure the gate (host.web.gate): the names it answers
    to, and whose forwarding headers it believes."""
    app = FastAPI(title="feedeater", version=version, docs_url=None, redoc_url=None)
    docs.mount(app)  # /api/docs from bundled files: FastAPI's page loads them from a CDN
    loopback = auth.is_loopback(bind_host)
    app.state.auth = auth.AuthPolicy(pool, loopback=loopback)
    auth.document(app, loopback=loopback)
    errors.install(app)
    try:
        proxies = network.networks(trusted_proxies)
    except ValueError as exc:
        raise UserError(
            f"FEEDEATER_HTTP_TRUSTED_PROXIES: {exc}",
            "list proxy addresses or ranges, e.g. 127.0.0.1,10.0.0.0/8",
        ) from None
    names = network.Names.build(public_hosts, own=(bind_host, socket.gethostname()))
    app.add_middleware(gate.Gate, names=names, proxies=proxies)
    app.add_middleware(MergeSlashes)  # outermost: the gate matches route policies on the merged path

    def mount(router: APIRouter, routes: Routes | None, tag: str) -> None:
        """Every router gets the same auth rules (unless it authenticates its callers itself), body
        limit and error shape."""
        public = routes is not None and routes.public
        gate.include(
            app,
            router,
            token=not public,
            max_body=routes.max_body_bytes if routes is not None else None,
            prefix=routes.prefix if routes is not None else "/api/v1",
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

    mount(contexts.build(pool), None, "host")
    for router in host_routers:  # the host's own that need the running host (dead letters)
        mount(router, None, "host")
    for ctx, routes in mounted:
        mount(await routes.build(ctx), routes, ctx.name)
    return app
