"""One error shape for the whole HTTP surface: `{"error": what, "fix": how}` (host.web.models.ApiError).

Routes raise `HttpError(status, what, fix)` or a `UserError` (400, like the CLI's exit 2); FastAPI's own
errors (422 validation, 404 unknown path, 405) are reshaped to the same body, and the OpenAPI document
declares ApiError for every 4XX so clients and schemathesis see what is really sent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import asyncpg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route

from host.errors import UserError, unavailable
from host.web.models import NO_NUL, ApiError

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ApiError, "description": "what went wrong and how to fix it"}
}
OPENAPI_HINT = "see the API description at /api/docs"
UNAVAILABLE_HINT = "try again in a few seconds; `feedeater status` shows the database and the bus"
log = logging.getLogger("feedeater.web")


class HttpError(Exception):
    def __init__(
        self, status: int, error: str, fix: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(error)
        self.status, self.error, self.fix, self.headers = status, error, fix, headers


def not_found(what: str, fix: str) -> HttpError:
    return HttpError(404, f"no {what}", fix)


def respond(status: int, error: str, fix: str | None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(ApiError(error=error, fix=fix).model_dump(), status_code=status, headers=headers)


def _readable(error: Any) -> str:
    """pydantic's message, except a regex quoted at the reader: NUL characters are named, other
    patterns point at the API description."""
    if error.get("type") != "string_pattern_mismatch":
        return str(error.get("msg", "invalid"))
    if error.get("ctx", {}).get("pattern") == NO_NUL:
        return "must not contain NUL characters"
    return "does not have the form the API description gives"


def describe_validation(errors: Sequence[Any]) -> str:
    """FastAPI's validation errors as one line: `limit: Input should be ≤ 1000; url: …`."""
    parts = []
    for e in list(errors)[:3]:
        loc = [str(p) for p in e.get("loc", ())] or ["request"]
        where = ".".join(loc[1:]) or loc[0]  # ("query", "limit") → limit; ("body",) → body
        parts.append(f"{where}: {_readable(e)}")
    more = len(errors) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def allowed_methods(request: Request) -> str:
    """Every method some route serves at this path. Starlette's 405 names only the first route whose
    path matched, so `/feeds` (GET and POST are two routes) answered `Allow: GET` (RFC 9110: all)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods))


def install(app: FastAPI) -> None:
    async def on_http_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HttpError)
        return respond(exc.status, exc.error, exc.fix, exc.headers)

    async def on_user_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, UserError)
        return respond(400, exc.message, exc.hint)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return respond(422, describe_validation(exc.errors()), OPENAPI_HINT)

    async def on_starlette(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        error = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request)
        return respond(exc.status_code, error, OPENAPI_HINT, headers)

    async def on_unavailable(_request: Request, exc: Exception) -> JSONResponse:
        if not unavailable(exc):  # a bug under a service-like name: a 500 with its traceback, as for any bug
            raise exc
        log.warning("a request failed: %s: %s", type(exc).__name__, exc)
        return respond(
            503, "the database or the bus did not answer in time", UNAVAILABLE_HINT, {"Retry-After": "5"}
        )

    app.add_exception_handler(HttpError, on_http_error)
    for kind in (TimeoutError, ConnectionError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError):
        app.add_exception_handler(kind, on_unavailable)
    app.add_exception_handler(UserError, on_user_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_starlette)
