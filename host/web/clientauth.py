"""Who is calling the reader-app APIs (Miniflux, Google Reader): the credentials those apps send.

Apps speak their protocol's own scheme, never our `Bearer` (host.web.auth), so these routers are
mounted with `Routes(public=True)` and depend on `reader_caller` instead. Every request needs a
credential, on loopback too: an app always has one, and these APIs read and change reading state.

- `X-Auth-Token: <API token>` (Miniflux) or `Authorization: Bearer <API token>`: host.tokens; a read
  token only reads, as on the REST API.
- `Authorization: Basic …` (Miniflux): a login set with `feedeater api login set NAME` (host.logins).
  argon2 costs ~0.1 s of CPU and an app sends the password with every request, so a verified pair is
  remembered (keyed by the stored hash: a new password forgets it); verification runs off the event
  loop, two at a time, at the console's login rate (429 beyond it).
- `Authorization: GoogleLogin auth=<token>` (Google Reader), the token from /accounts/ClientLogin; a
  POST without the header may carry it as its `T` field (as Miniflux accepts).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import logging
import math
from dataclasses import dataclass
from typing import Literal

import asyncpg
from fastapi import Request

from host import logins, tokens
from host.console import throttle
from host.web.auth import WRITE_METHODS
from host.web.errors import HttpError
from host.web.gate import client_of

log = logging.getLogger("feedeater.http")

Scheme = Literal["token", "basic", "google"]
LOGIN_HINT = (
    "send an API token (`feedeater api token create`) as X-Auth-Token, or the user and password set with "
    "`feedeater api login set NAME`"
)
_REMEMBERED = 256  # verified (name, password) pairs kept per process


@dataclass(frozen=True, slots=True)
class Credential:
    scheme: Scheme
    secret: str
    name: str = ""  # basic: the user name


@dataclass(frozen=True, slots=True)
class Caller:
    name: str  # the login's name; "feedeater" for an API token
    token_id: int | None = None
    client_token: str | None = None  # the ClientLogin token this request carried
    scope: str = "write"  # an API token's (host.tokens); a login reads and writes


def credential(x_auth_token: str | None, authorization: str | None) -> Credential | None:
    """The credential in a request's headers (pure), or None when there is none we understand."""
    if x_auth_token:
        return Credential("token", x_auth_token.strip())
    scheme, _, value = (authorization or "").strip().partition(" ")
    value = value.strip()
    match scheme.lower():
        case "bearer" if value:
            return Credential("token", value)
        case "basic":
            try:
                name, sep, password = base64.b64decode(value, validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            return Credential("basic", password, name) if sep else None
        case "googlelogin":
            key, _, token = value.partition("=")
            return Credential("google", token) if key.strip().lower() == "auth" and token else None
    return None


class _Verifier:
    """argon2 verification off the event loop, at most two at a time and at the console's login rate
    (host.console.throttle: per client and overall); pairs it verified are remembered, so an app that
    sends its password with every request is neither slowed nor throttled."""

    def __init__(self) -> None:
        self.slots = asyncio.Semaphore(throttle.CONCURRENT)
        self.throttle = throttle.LoginThrottle()
        self.verified: dict[tuple[str, str], str] = {}  # (name, sha256(password)) → the hash it matched

    async def check(self, name: str, password: str, stored_hash: str, address: str) -> bool:
        from host.console.auth import verify

        key = (name, hashlib.sha256(password.encode()).hexdigest())
        if self.verified.get(key) == stored_hash:
            return True
        wait = 1.0 if self.slots.locked() else self.throttle.admit(address)
        if wait > 0:
            raise HttpError(
                429,
                "too many login attempts",
                f"try again in {math.ceil(wait)} s",
                {"Retry-After": str(math.ceil(wait))},
            )
        async with self.slots:
            ok = await asyncio.to_thread(verify, stored_hash, password)
        if ok:
            if len(self.verified) >= _REMEMBERED:
                self.verified.clear()
            self.verified[key] = stored_hash
        else:
            log.warning(
                "reader-app login %r from %s: wrong password", name[:64], address
            )  # at the throttle's rate
        return ok


async def identify(pool: asyncpg.Pool, found: Credential, verifier: _Verifier, address: str) -> Caller | None:
    """The caller behind a credential, or None when it is wrong (unknown, revoked, bad password)."""
    async with pool.acquire() as conn:
        if found.scheme == "token":
            token = await tokens.verify(conn, found.secret)
            return Caller("feedeater", token_id=token[0], scope=token[1]) if token is not None else None
        name = found.name if found.scheme == "basic" else logins.token_name(found.secret)
        stored = await logins.password_hash(conn, name) if name else None
    if name is None or stored is None:
        return None
    if found.scheme == "google":
        ok = logins.token_matches(found.secret, name, stored)
        return Caller(name, client_token=found.secret) if ok else None
    return Caller(name) if await verifier.check(name, found.secret, stored, address) else None


def _verifier(request: Request) -> _Verifier:
    state = request.app.state
    if getattr(state, "reader_verifier", None) is None:
        state.reader_verifier = _Verifier()
    verifier: _Verifier = state.reader_verifier
    return verifier


async def client_login(request: Request, name: str, password: str) -> str | None:
    """Google Reader's ClientLogin: the token for a login's name and password, or None when wrong."""
    if not logins.NAME.fullmatch(name) or not password:
        return None
    async with request.app.state.auth.pool.acquire() as conn:
        stored = await logins.password_hash(conn, name)
    if stored is None or not await _verifier(request).check(
        name, password, stored, client_of(request.scope).address
    ):
        return None
    return logins.client_token(name, stored)


async def reader_caller(request: Request) -> Caller:
    """FastAPI dependency of the reader routers: the caller, or 401 (each router shapes the body)."""
    found = credential(request.headers.get("x-auth-token"), request.headers.get("authorization"))
    if (
        found is None
        and request.method == "POST"
        and request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
    ):
        given = (await request.form()).get("T")
        found = Credential("google", given) if isinstance(given, str) and given else None
    if found is None:
        raise HttpError(401, "no credentials", LOGIN_HINT, {"WWW-Authenticate": 'Basic realm="feedeater"'})
    caller = await identify(
        request.app.state.auth.pool, found, _verifier(request), client_of(request.scope).address
    )
    if caller is None:
        raise HttpError(401, "the credentials are unknown, revoked or wrong", LOGIN_HINT)
    if request.method.upper() in WRITE_METHODS and caller.scope != "write" and not _reads(request):
        raise HttpError(
            403,
            "this API token may only read",
            "create a token with `feedeater api token create --scope write`",
        )
    return caller


def _reads(request: Request) -> bool:
    """Google Reader POSTs that only read (item contents by id): a read token may send them."""
    return request.url.path.endswith("/stream/items/contents")
