"""Errors in each protocol's own shape: a route class that turns the host's errors into the body an
app expects (Miniflux: `{"error_message": …}`; Google Reader: a line of text)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from host.errors import UserError
from host.web.errors import HttpError, describe_validation

Render = Callable[[int, str, dict[str, str] | None], Response]


def shaped_errors(render: Render) -> type[APIRoute]:
    """An APIRoute whose errors (auth included: dependencies run inside the handler) go through `render`."""

    class ShapedRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def shaped(request: Request) -> Response:
                try:
                    return await handler(request)
                except HttpError as exc:
                    message = f"{exc.error}: {exc.fix}" if exc.fix else exc.error
                    return render(exc.status, message, exc.headers)
                except UserError as exc:
                    return render(400, f"{exc.message}: {exc.hint}" if exc.hint else exc.message, None)
                except RequestValidationError as exc:
                    return render(400, describe_validation(exc.errors()), None)

            return shaped

    return ShapedRoute


class BadRequest(HttpError):
    def __init__(self, error: str, fix: str | None = None) -> None:
        super().__init__(400, error, fix)


def no_nul(value: str, name: str) -> str:
    """PostgreSQL text cannot hold NUL: one 400 instead of a 500 from the database."""
    if "\x00" in value:
        raise BadRequest(f"{name} contains a NUL character")
    return value
