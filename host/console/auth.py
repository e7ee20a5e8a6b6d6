"""Console login: the argon2 password hash, database-backed sessions and CSRF tokens.

The session cookie carries a random token; the database stores only its SHA-256, so a leaked table
grants nothing. A CSRF token is an HMAC of the cookie's token under a key kept in host.console_auth,
so visitors without a login (loopback, no password) get tokens without a database row.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

import asyncpg

from host.errors import UserError

SESSION_DAYS = 14
MIN_PASSWORD = 8
Access = Literal["write", "read", "login"]


def access(*, password_set: bool, loopback: bool, logged_in: bool) -> Access:
    """What a visitor may do (pure): a password protects everything; without one a loopback console is
    open and any other bind is read-only (the issue's default for an unprotected network console)."""
    if password_set:
        return "write" if logged_in else "login"
    return "write" if loopback else "read"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def csrf_token(key: str, session_token: str) -> str:
    return hmac.new(key.encode(), session_token.encode(), hashlib.sha256).hexdigest()[:40]


def csrf_ok(key: str, session_token: str, given: str) -> bool:
    return hmac.compare_digest(csrf_token(key, session_token), given)


@dataclass(frozen=True, slots=True)
class AuthState:
    password_hash: str | None
    csrf_key: str


async def load(conn: asyncpg.Connection) -> AuthState:
    """The one auth row, created with a fresh CSRF key on first use."""
    await conn.execute(
        "INSERT INTO host.console_auth (csrf_key) VALUES ($1) ON CONFLICT (id) DO NOTHING",
        secrets.token_hex(32),
    )
    row = await conn.fetchrow("SELECT password_hash, csrf_key FROM host.console_auth")
    assert row is not None
    return AuthState(row["password_hash"], row["csrf_key"])


async def set_password(conn: asyncpg.Connection, password: str) -> None:
    """Store the argon2 hash and end every session (a new password logs everybody out)."""
    from argon2 import PasswordHasher

    if len(password) < MIN_PASSWORD:
        raise UserError(f"the password is shorter than {MIN_PASSWORD} characters", "choose a longer one")
    await load(conn)
    async with conn.transaction():
        await conn.execute(
            "UPDATE host.console_auth SET password_hash = $1, updated_at = now()",
            PasswordHasher().hash(password),
        )
        await conn.execute("DELETE FROM host.console_sessions")


def verify(password_hash: str, password: str) -> bool:
    from argon2 import PasswordHasher
    from argon2.exceptions import Argon2Error, InvalidHashError

    try:
        return PasswordHasher().verify(password_hash, password)
    except (Argon2Error, InvalidHashError):
        return False


async def start_session(conn: asyncpg.Connection) -> str:
    """A new logged-in session (a fresh token, so a token planted before login is worth nothing)."""
    token = new_token()
    await conn.execute("DELETE FROM host.console_sessions WHERE expires_at < now()")
    await conn.execute(
        "INSERT INTO host.console_sessions (token_sha256, expires_at) "
        "VALUES ($1, now() + make_interval(days => $2))",
        token_hash(token),
        SESSION_DAYS,
    )
    return token


async def logged_in(conn: asyncpg.Connection, token: str) -> bool:
    return bool(
        await conn.fetchval(
            "SELECT true FROM host.console_sessions WHERE token_sha256 = $1 AND expires_at > now()",
            token_hash(token),
        )
    )


async def end_session(conn: asyncpg.Connection, token: str) -> None:
    await conn.execute("DELETE FROM host.console_sessions WHERE token_sha256 = $1", token_hash(token))
