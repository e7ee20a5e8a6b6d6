"""Reader-app logins: a user name and a password for apps that cannot send an API token.

Miniflux clients send them as HTTP basic auth on every request; Google Reader clients trade them once
at /accounts/ClientLogin for a token (`name/hmac`) they send as `Authorization: GoogleLogin auth=…`.
Set with `feedeater api login set NAME`. The password is stored as an argon2 hash (the console's
hasher); the token is an HMAC keyed by that hash, so a new password revokes every token given before.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

import asyncpg

from host.errors import UserError

NAME = re.compile(r"^[A-Za-z0-9._@+-]{1,64}$")
MIN_PASSWORD = 8
TOUCH_EVERY = "interval '1 minute'"  # last_used_at moves at most this often: reads must not write


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise UserError(
            f"login name {name!r} is not usable",
            "use 1-64 letters, digits and . _ @ + - (no spaces or slashes)",
        )
    return name


async def set_login(conn: asyncpg.Connection, name: str, password: str) -> bool:
    """Create the login or give it a new password (which revokes its ClientLogin tokens); True: created."""
    from argon2 import PasswordHasher

    check_name(name)
    if len(password) < MIN_PASSWORD:
        raise UserError(f"the password is shorter than {MIN_PASSWORD} characters", "choose a longer one")
    created: bool = await conn.fetchval(
        """INSERT INTO host.reader_logins AS l (name, password_hash) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE SET password_hash = excluded.password_hash, updated_at = now()
           RETURNING l.created_at = l.updated_at""",
        name,
        PasswordHasher().hash(password),
    )
    return created


async def list_logins(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT name, created_at, updated_at, last_used_at FROM host.reader_logins ORDER BY name"
    )
    return [dict(r) for r in rows]


async def remove_login(conn: asyncpg.Connection, name: str) -> None:
    if (await conn.execute("DELETE FROM host.reader_logins WHERE name = $1", name)) == "DELETE 0":
        raise UserError(f"no login {name!r}", "list them with `feedeater api login list`")


async def password_hash(conn: asyncpg.Connection, name: str) -> str | None:
    """The stored hash of a login (and note that it was used), or None when there is no such login."""
    row = await conn.fetchrow(
        f"SELECT password_hash, last_used_at IS NULL OR last_used_at < now() - {TOUCH_EVERY} AS stale"
        " FROM host.reader_logins WHERE name = $1",
        name,
    )
    if row is None:
        return None
    if row["stale"]:
        await conn.execute("UPDATE host.reader_logins SET last_used_at = now() WHERE name = $1", name)
    found: str = row["password_hash"]
    return found


def client_token(name: str, stored_hash: str) -> str:
    """The ClientLogin token of a login (pure): `name/hex`, an HMAC keyed by its stored password hash."""
    mac = hmac.new(stored_hash.encode(), f"greader:{name}".encode(), hashlib.sha256).hexdigest()
    return f"{name}/{mac}"


def token_name(token: str) -> str | None:
    """The login a ClientLogin token claims to belong to (pure), or None when it has no such shape."""
    name, sep, mac = token.partition("/")
    return name if sep and mac and NAME.fullmatch(name) else None


def token_matches(token: str, name: str, stored_hash: str) -> bool:
    return hmac.compare_digest(token, client_token(name, stored_hash))
