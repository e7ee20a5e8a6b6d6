"""Who is looking and what they may do: the session cookie, login and CSRF.

Every console route depends on `guard`: it finds the visitor's access (auth.access), sends visitors who
must log in to /login, refuses a POST from a read-only visitor (403) before reading its body, and then
one without the form's CSRF token (403), reading the form within fixed limits. `SessionCookie` writes
the new session cookie on the response. The gate in front (host.web.gate) has already checked the Host
name, the Origin and the body size; pages carry their own Content-Security-Policy (host.console.render).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from host.console import auth
from host.web.gate import client_of

COOKIE = "fe_session"
OPEN_PATHS = frozenset({"/login"})  # reachable before logging in
# A form is a few fields (a settings form: one per setting) and at most one file (the OPML upload).
FORM_LIMITS: dict[str, Any] = {"max_files": 1, "max_fields": 200, "max_part_size": 1024 * 1024}


@dataclass(frozen=True, slots=True)
class Viewer:
    access: auth.Access
    csrf: str
    password_set: bool
    logged_in: bool
    csrf_key: str
    session_token: str

    def csrf_matches(self, given: object) -> bool:
        return isinstance(given, str) and auth.csrf_ok(self.csrf_key, self.session_token, given)

    @property
    def can_write(self) -> bool:
        return self.access == "write"


class LoginRequired(Exception):
    def __init__(self, next_path: str) -> None:
        self.next_path = next_path


class Refused(HTTPException):
    """403 with a sentence the console shows (not JSON)."""

    def __init__(self, reason: str) -> None:
        super().__init__(403, reason)


def cookie_header(token: str, *, secure: bool, max_age: int = auth.SESSION_DAYS * 86400) -> bytes:
    flags = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}"
    return (flags + ("; Secure" if secure else "")).encode()


def set_cookie(request: Request, token: str) -> None:
    """Send `token` as the session cookie with this response (SessionCookie writes the header)."""
    request.scope.setdefault("state", {})["console_cookie"] = token


async def viewer_for(request: Request) -> Viewer:
    """The visitor's access and CSRF token; a visitor without a cookie gets a new token (set on the response)."""
    console = request.app.state.console
    token = request.cookies.get(COOKIE) or ""
    if len(token) < 20:
        token = auth.new_token()
        set_cookie(request, token)
    row = await console.pool.fetchrow(
        """SELECT a.password_hash IS NOT NULL AS password_set, a.csrf_key,
                  EXISTS (SELECT 1 FROM host.console_sessions s
                          WHERE s.token_sha256 = $1 AND s.expires_at > now()) AS logged_in
           FROM host.console_auth a""",
        auth.token_hash(token),
    )
    assert row is not None  # created when the console is mounted
    request.state.session_token = token
    # Open writes only for a loopback bind and a request straight from this machine: one that came
    # through a reverse proxy (even one on this machine) is from the network.
    local = console.loopback and client_of(request.scope).local
    return Viewer(
        auth.access(password_set=row["password_set"], loopback=local, logged_in=row["logged_in"]),
        auth.csrf_token(row["csrf_key"], token),
        row["password_set"],
        row["logged_in"],
        row["csrf_key"],
        token,
    )


async def guard(request: Request) -> Viewer:
    viewer = await viewer_for(request)
    request.state.viewer = viewer
    if viewer.access == "login" and request.url.path not in OPEN_PATHS:
        raise LoginRequired(request.url.path)
    if request.method == "POST":
        if not viewer.can_write and request.url.path not in OPEN_PATHS:
            raise Refused(
                "The console is read-only: it is reached over the network (a non-loopback address or a "
                "proxy) and has no password. Set one with `feedeater console password` and log in."
            )
        form = await request.form(**FORM_LIMITS)
        if not viewer.csrf_matches(form.get("csrf")):
            raise Refused(
                "This form has expired or did not come from this console (CSRF check). Reload the page and try again."
            )
    return viewer


class SessionCookie:
    """Pure ASGI middleware (streams stay streams): writes the cookie the guard chose on the response.
    `Secure` off loopback and whenever the browser's side of a trusted proxy is https."""

    def __init__(self, app: ASGIApp, *, secure_cookie: bool) -> None:
        self.app = app
        self.secure_cookie = secure_cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            token = scope.get("state", {}).get("console_cookie")
            if message["type"] == "http.response.start" and token:
                secure = self.secure_cookie or client_of(scope).scheme == "https"
                headers = [*message.get("headers", []), (b"set-cookie", cookie_header(token, secure=secure))]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_cookie)
