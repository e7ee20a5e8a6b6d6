"""Who may call the API: a bearer token (host.tokens) for every write, and for every request when the
host listens beyond loopback (FEEDEATER_HTTP_HOST) or the request came through a proxy; direct reads on
a loopback bind are open, like the CLI. A `read` token may only read.

The decision (`check`) is taken by the gate (host.web.gate) before a route reads the request body, so
an unauthenticated client never gets its body parsed; `authorize` is the FastAPI dependency build_app
puts on every mounted router, which hands the gate's decision to the route and documents the bearer
scheme in the OpenAPI document.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import asyncpg
from fastapi import Depends, FastAPI, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from host import tokens
from host.web.errors import HttpError

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
TOKEN_HINT = "create one with `feedeater api token create` and send `Authorization: Bearer <token>`"
STATE_KEY = "api_token"  # scope["state"][STATE_KEY]: the calling token's id (None: an open read)

bearer = HTTPBearer(auto_error=False, description="an API token from `feedeater api token create`")


def is_loopback(bind_host: str) -> bool:
    """Only loopback addresses (and `localhost`) keep reads open; 0.0.0.0 and :: listen everywhere."""
    if bind_host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind_host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def needs_token(method: str, *, loopback: bool) -> bool:
    return method.upper() in WRITE_METHODS or not loopback


@dataclass(frozen=True, slots=True)
class AuthPolicy:
    pool: asyncpg.Pool
    loopback: bool  # the host binds to loopback only: direct reads need no token


def bearer_token(authorization: str | None) -> str:
    scheme, _, value = (authorization or "").strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


async def check(policy: AuthPolicy, method: str, authorization: str | None, *, local: bool) -> int | None:
    """The calling token's id, None for an open read; HttpError 401/403 otherwise. `local`: the request
    came straight from this machine, not through a proxy."""
    open_reads = policy.loopback and local
    if not needs_token(method, loopback=open_reads):
        return None
    challenge = {"WWW-Authenticate": "Bearer"}
    token = bearer_token(authorization)
    if not token:
        why = "writes need an API token" if open_reads else "this host requires an API token"
        raise HttpError(401, why, TOKEN_HINT, challenge)
    async with policy.pool.acquire() as conn:
        found = await tokens.verify(conn, token)
    if found is None:
        raise HttpError(401, "the API token is unknown or revoked", TOKEN_HINT, challenge)
    token_id, scope = found
    if method.upper() in WRITE_METHODS and scope != "write":
        raise HttpError(
            403,
            "this API token may only read",
            "create a token with `feedeater api token create --scope write`",
        )
    return token_id


async def authorize(
    request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
) -> int | None:
    """The calling token's id as the gate decided it (None for an open read)."""
    state = request.scope.get("state", {})
    if STATE_KEY not in state:  # only reachable if the app runs without its gate
        raise HttpError(500, "the request was not checked for a token", "serve the app through host.web.gate")
    token_id: int | None = state[STATE_KEY]
    return token_id


def document(app: FastAPI, *, loopback: bool) -> None:
    """Make the OpenAPI document say what `check` does: on loopback, reads need no token (an empty
    security requirement makes the bearer optional); everything else requires it."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            for operations in schema.get("paths", {}).values():
                for method, op in operations.items():
                    if loopback and method.upper() not in WRITE_METHODS and op.get("security"):
                        op["security"].append({})
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
