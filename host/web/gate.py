"""The HTTP server's front door: a pure ASGI middleware that checks every request before any route
reads its body, and adds the security headers to every response.

In order: the Host allow-list (DNS rebinding) and, for state-changing requests, the Origin /
Sec-Fetch-Site check (host.web.network); the body limit of the route (Content-Length first, then
counted while the route reads); the API's bearer token where the route's router needs one
(host.web.auth.check). Only then does FastAPI see the request, so an oversize or unauthenticated body is
never parsed. Routers get their rules when they are mounted (`include`); anything else (the
console's own pages, /healthz) gets the default limit and no token rule.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from starlette.exceptions import HTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from host.textfmt import size
from host.web import auth, network
from host.web.errors import HttpError, respond

log = logging.getLogger("feedeater.http")

DEFAULT_MAX_BODY = 1024 * 1024
PUBLIC_HOSTS_HINT = (
    "use the address the host was started with, or list the name in FEEDEATER_HTTP_PUBLIC_HOSTS "
    "(e.g. the name a reverse proxy serves it under)"
)
# Anything the server answers is inert unless a route says otherwise: no scripts, no plugins, no
# framing, opaque origin (`sandbox`). Console pages send their own policy (host.console.render).
API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; sandbox"
HEADERS = (
    (b"content-security-policy", API_CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
CLIENT_KEY = "client"  # scope["state"][CLIENT_KEY]: the request's network.Client
MAX_WARNED_NAMES = 100


@dataclass(frozen=True, slots=True)
class RoutePolicy:
    token: bool  # the API's bearer-token rule applies (host.web.auth.check)
    max_body: int = DEFAULT_MAX_BODY


OPEN = RoutePolicy(token=False)


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a streamed body passes the limit; the app's handlers answer 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {size(limit)}")


def include(app: Any, router: Any, *, token: bool, max_body: int | None, **options: Any) -> None:
    """`app.include_router(router, **options)`, its routes under the token rule or not, and their body
    limit (None: the default)."""
    app.include_router(router, **options)
    policy = RoutePolicy(token=token, max_body=max_body or DEFAULT_MAX_BODY)
    prefix = options.get("prefix", "")
    added = [
        (compile_path(prefix + route.path)[0], policy) for route in router.routes if hasattr(route, "path")
    ]
    app.state.route_policies = [*getattr(app.state, "route_policies", []), *added]


def policy_for(app: Any, scope: Scope) -> RoutePolicy:
    """The policy of the route this path goes to (its method aside: a 405 is judged like its route).
    Our own path regexes: `Route.matches` builds the child scope (100 µs a request over 40 routes)."""
    path = scope["path"]
    for pattern, policy in getattr(app.state, "route_policies", ()):
        if pattern.match(path):
            return policy
    return OPEN


def client_of(scope: Scope) -> network.Client:
    """The request's client as the gate saw it (without a gate in front: from the TCP peer alone)."""
    found: network.Client | None = scope.get("state", {}).get(CLIENT_KEY)
    if found is None:
        peer = (scope.get("client") or (None,))[0]
        found = network.client(peer, scope.get("scheme", "http"), _headers(scope), ())
    return found


def _headers(scope: Scope) -> dict[str, str]:
    """Lowercase names; repeated headers joined with ", " (RFC 9110)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


class Gate:
    def __init__(
        self, app: ASGIApp, *, names: network.Names, proxies: tuple[network.IPNetwork, ...] = ()
    ) -> None:
        self.app = app
        self.names = names
        self.proxies = proxies
        self.warned: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        headers = _headers(scope)
        peer = (scope.get("client") or (None,))[0]
        who = network.client(peer, scope.get("scheme", "http"), headers, self.proxies)
        scope.setdefault("state", {})[CLIENT_KEY] = who
        try:
            policy = self._admit(scope, headers, who)
            if policy.token:
                scope["state"][auth.STATE_KEY] = await auth.check(
                    scope["app"].state.auth, scope["method"], headers.get("authorization"), local=who.local
                )
        except HttpError as exc:
            await respond(exc.status, exc.error, exc.fix, exc.headers)(scope, receive, send)
            return
        await self.app(scope, _limited(receive, policy.max_body), send)

    def _admit(self, scope: Scope, headers: dict[str, str], who: network.Client) -> RoutePolicy:
        """The route's policy once the request may go on; HttpError when it may not."""
        problem = network.host_problem(who.host, self.names)
        if problem:
            self._warn(network.hostname(who.host))
            raise HttpError(400, problem, PUBLIC_HOSTS_HINT)
        problem = network.origin_problem(scope["method"], headers, who.host, self.names)
        if problem:
            raise HttpError(403, problem, "use the page this server serves, not another site's")
        policy = policy_for(scope["app"], scope)
        length = headers.get("content-length", "").strip()
        if length and not length.isdigit():
            raise HttpError(400, "the Content-Length header is not a number", "send a valid request")
        if length and int(length) > policy.max_body:
            raise HttpError(413, f"the request body is larger than {size(policy.max_body)}", "send less")
        return policy

    def _warn(self, name: str) -> None:
        """Say once per name (a few names at most) why requests are refused: a proxy's forwarded name
        that is missing from the allow-list looks exactly like an attack."""
        if name in self.warned or len(self.warned) >= MAX_WARNED_NAMES:
            return
        self.warned.add(name)
        log.warning(
            "refused HTTP requests for host name %r: DNS rebinding, or a name of yours missing from "
            "FEEDEATER_HTTP_PUBLIC_HOSTS",
            name[:200],
        )


def _limited(receive: Receive, limit: int) -> Receive:
    """`receive` that raises BodyTooLarge once more than `limit` body bytes arrived."""
    seen = 0

    async def receive_limited() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise BodyTooLarge(limit)
        return message

    return receive_limited


def _with_security_headers(send: Send) -> Send:
    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers: list[Any] = list(message.get("headers", []))
            present = {k.lower() for k, _ in headers}
            headers += [(k, v) for k, v in HEADERS if k not in present]
            message = {**message, "headers": headers}
        await send(message)

    return send_with_headers
