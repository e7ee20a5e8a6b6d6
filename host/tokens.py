"""API tokens: created with `feedeater api token create`, stored as SHA-256 hashes, revocable.

A token is 32 random bytes (URL-safe base64) behind the `fe_` prefix; with that much entropy a plain
SHA-256 is enough (no slow hash needed), and lookups stay one indexed equality per request.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any, Literal

import asyncpg

from host.errors import UserError

TOKEN_PREFIX = "fe_"
SHOWN_PREFIX = 10  # characters kept in clear for listing ("fe_" + 7)
TOUCH_EVERY = "interval '1 minute'"  # last_used_at is refreshed at most this often: reads must not write
Scope = Literal["read", "write"]
SCOPES: tuple[Scope, ...] = ("read", "write")  # `write` tokens read too


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


_COLUMNS = "id, name, scope, prefix, created_at, last_used_at, revoked_at"


async def create(conn: asyncpg.Connection, name: str, scope: str = "write") -> dict[str, Any]:
    """A new token: the row as listed plus `token`, the only time the token itself is available."""
    name = name.strip()
    if not name or len(name) > 100:
        raise UserError(f"token name {name!r} is empty or too long", "give a short name, e.g. --name ci")
    if scope not in SCOPES:
        raise UserError(f"no token scope {scope!r}", "use --scope read (reads only) or --scope write")
    token = new_token()
    row = await conn.fetchrow(
        "INSERT INTO host.api_tokens (name, token_sha256, prefix, scope) VALUES ($1, $2, $3, $4)"
        f" RETURNING {_COLUMNS}",
        name,
        digest(token),
        token[:SHOWN_PREFIX],
        scope,
    )
    assert row is not None
    return {**dict(row), "token": token}


async def list_all(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    return [dict(r) for r in await conn.fetch(f"SELECT {_COLUMNS} FROM host.api_tokens ORDER BY id")]


async def revoke(conn: asyncpg.Connection, ref: str) -> list[dict[str, Any]]:
    """Revoke tokens by id, name (every token of that name) or the token itself; already revoked ones
    keep their time."""
    rows = await conn.fetch(
        f"""UPDATE host.api_tokens SET revoked_at = coalesce(revoked_at, now())
            WHERE (id::text = $1 OR name = $1 OR token_sha256 = $2) RETURNING {_COLUMNS}""",
        ref,
        digest(ref),
    )
    if not rows:
        raise UserError(f"no API token {ref!r}", "list them with `feedeater api token list`")
    return [dict(r) for r in rows]


async def verify(conn: asyncpg.Connection, token: str) -> tuple[int, Scope] | None:
    """The id and scope of this token when it exists and is not revoked (and note that it was used)."""
    row = await conn.fetchrow(
        f"SELECT id, scope, last_used_at IS NULL OR last_used_at < now() - {TOUCH_EVERY} AS stale"
        " FROM host.api_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL",
        digest(token),
    )
    if row is None:
        return None
    if row["stale"]:
        await conn.execute("UPDATE host.api_tokens SET last_used_at = now() WHERE id = $1", row["id"])
    return row["id"], row["scope"]
