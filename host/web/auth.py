"""Who may call the API: a bearer token (host.tokens) for every write, and for every request when the
host listens beyond loopback (FEEDEATER_HTTP_HOST); reads on loopback are open, like the CLI.

`authorize` is a FastAPI dependency that build_app puts on every mounted router (module routers and the
host's own), so a module or the web console gets the same rules without doing anything.
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
    loopback: bool  # the host binds to loopback only: reads need no token


async def authorize(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
) -> int | None:
    """The calling token's id, None for an open read; 401 (one JSON error) otherwise."""
    policy: AuthPolicy = request.app.state.auth
    if not needs_token(request.method, loopback=policy.loopback):
        return None
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or not credentials.credentials:
        why = "writes need an API token" if policy.loopback else "this host requires an API token"
        raise HttpError(401, why, TOKEN_HINT, challenge)
    async with policy.pool.acquire() as conn:
        token_id = await tokens.verify(conn, credentials.credentials)
    if token_id is None:
        raise HttpError(401, "the API token is unknown or revoked", TOKEN_HINT, challenge)
    return token_id


def document(app: FastAPI, *, loopback: bool) -> None:
    """Make the OpenAPI document say what `authorize` does: on loopback, reads need no token (an empty
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
