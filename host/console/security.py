"""Who is looking and what they may do: the session cookie, login, CSRF and the security headers.

Every console route depends on `guard`: it finds the visitor's access (auth.access), sends visitors who
must log in to /login, and refuses a POST without the form's CSRF token (403) or from a read-only
visitor (403). `SecurityHeaders` adds the Content-Security-Policy (no inline script, nothing from other
origins but images and media of feed content) and the new session cookie to every console response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from host.console import auth

COOKIE = "fe_session"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: http: https:; "
    "media-src 'self' http: https:; frame-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
]
OPEN_PATHS = frozenset({"/login"})  # reachable before logging in


@dataclass(frozen=True, slots=True)
class Viewer:
    access: auth.Access
    csrf: str
    password_set: bool
    logged_in: bool

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
    """Send `token` as the session cookie with this response (SecurityHeaders writes the header)."""
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
    return Viewer(
        auth.access(password_set=row["password_set"], loopback=console.loopback, logged_in=row["logged_in"]),
        auth.csrf_token(row["csrf_key"], token),
        row["password_set"],
        row["logged_in"],
    )


async def guard(request: Request) -> Viewer:
    viewer = await viewer_for(request)
    request.state.viewer = viewer
    if viewer.access == "login" and request.url.path not in OPEN_PATHS:
        raise LoginRequired(request.url.path)
    if request.method == "POST":
        form = await request.form()
        given = form.get("csrf")
        if not isinstance(given, str) or not given or given != viewer.csrf:
            raise Refused(
                "This form has expired or did not come from this console (CSRF check). Reload the page and try again."
            )
        if not viewer.can_write and request.url.path not in OPEN_PATHS:
            raise Refused(
                "The console is read-only: it listens on a network address and has no password. "
                "Set one with `feedeater console password` and log in."
            )
    return viewer


class SecurityHeaders:
    """Pure ASGI middleware (streams stay streams): headers on console responses, the new cookie."""

    def __init__(self, app: ASGIApp, *, secure_cookie: bool, skip: tuple[str, ...] = ("/api",)) -> None:
        self.app = app
        self.secure_cookie = secure_cookie
        self.skip = skip

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.skip):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers: list[Any] = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in HEADERS if k not in present]
                token = scope.get("state", {}).get("console_cookie")
                if token:
                    headers.append((b"set-cookie", cookie_header(token, secure=self.secure_cookie)))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
