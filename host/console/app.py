"""Mount the web console on the host's ASGI app: its own pages, the modules' pages, static files,
security headers and the login redirect.

Module pages are `Routes` with `pages` in their manifest (rss: feeds, search; digest: digests); they
are mounted under their prefix behind the same guard, so every module's pages have the same shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from host.console import auth, core
from host.console.render import page
from host.console.security import LoginRequired, SessionCookie, Viewer, guard
from host.console.throttle import LoginThrottle
from host.web import gate
from host.web.auth import is_loopback

if TYPE_CHECKING:
    import asyncpg

    from host.console.hostview import ConsoleHost
    from host.module import ModuleContext, Routes

CORE_NAV = (("Overview", "/"), ("Contexts", "/contexts"), ("Live bus", "/live"), ("Settings", "/settings"))


MACHINE_PATHS = ("/api", "/healthz", "/metrics", "/openapi.json", "/websub")


def wants_page(path: str, accept: str, console_route: bool) -> bool:
    """An error answered as an HTML page (pure): a console route's, or a browser's (it accepts text/html)
    for a path outside the API and the machine endpoints, which always answer JSON."""
    if path.startswith(MACHINE_PATHS):
        return False
    return console_route or "text/html" in accept


@dataclass(frozen=True, slots=True)
class Console:
    pool: asyncpg.Pool
    loopback: bool
    nav: tuple[tuple[str, str], ...]
    logins: LoginThrottle


async def mount(app: FastAPI, host: ConsoleHost, pages: Sequence[tuple[ModuleContext, Routes]]) -> None:
    async with host.require_pool().acquire() as conn:
        await auth.load(conn)  # the auth row (CSRF key) exists before the first request
    loopback = is_loopback(host.config.http_host)
    module_nav = tuple((label, r.prefix + path) for _, r in pages for label, path in r.pages)
    nav = (CORE_NAV[0], *module_nav, *CORE_NAV[1:])
    app.state.console = Console(host.require_pool(), loopback, nav, LoginThrottle())
    app.add_middleware(SessionCookie, secure_cookie=not loopback)
    app.mount("/static/console", StaticFiles(packages=[("host.console", "static")]), name="console-static")
    app.include_router(core.build(host))
    for ctx, routes in pages:
        router = await routes.build(ctx)
        gate.include(
            app,
            router,
            token=False,  # the console's guard: login, read-only, CSRF
            max_body=routes.max_body_bytes,
            prefix=routes.prefix,
            dependencies=[Depends(guard)],
            include_in_schema=False,
        )

    @app.exception_handler(LoginRequired)
    async def to_login(request: Request, exc: LoginRequired) -> RedirectResponse:
        return RedirectResponse(f"/login?next={exc.next_path}", 303)

    api_handler = app.exception_handlers.get(HTTPException, http_exception_handler)

    @app.exception_handler(HTTPException)
    async def refused(request: Request, exc: HTTPException) -> Response:
        """Console errors as pages (403 CSRF/read-only, and a browser's 404 for a path nothing serves);
        the API and machine clients keep the API's JSON errors."""
        if not wants_page(
            request.url.path, request.headers.get("accept", ""), hasattr(request.state, "viewer")
        ):
            answer = api_handler(request, exc)
            return await answer if isinstance(answer, Awaitable) else answer
        if not hasattr(request.state, "viewer"):  # no console route ran: a page without navigation
            request.state.viewer = Viewer(
                access="login", csrf="", password_set=True, logged_in=False, csrf_key="", session_token=""
            )
        return page(
            request, "error.html", exc.status_code, title=f"Error {exc.status_code}", message=exc.detail
        )
