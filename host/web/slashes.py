"""Merge the repeated slashes a request path starts with.

Reader apps join a configured base URL and an API path: newsboat's documented `miniflux-url
"https://example.com/miniflux/"` asks for `//v1/feeds`, which no route matches otherwise. Only the
leading ones: inside a path `//` can be data (a Google Reader stream `feed/https://…`, decoded).
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

_LEADING = re.compile(r"^//+")


def merged(path: str) -> str:
    return _LEADING.sub("/", path)


class MergeSlashes:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("//"):
            scope = {**scope, "path": merged(scope["path"])}
        await self.app(scope, receive, send)
