"""Rendering console pages: one Jinja2 environment (autoescaped) over the host's templates and those of
every module that contributes pages, and the layout context every page gets."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import BaseLoader, ChoiceLoader, Environment, PackageLoader, select_autoescape

from host import textfmt
from host.jobs import describe_trigger

_LOADERS: list[BaseLoader] = [PackageLoader("host.console", "templates")]
_PACKAGES = {"host.console"}
ENV = Environment(
    loader=ChoiceLoader(_LOADERS), autoescape=select_autoescape(default=True), enable_async=False
)
ENV.filters["when"] = textfmt.when
ENV.filters["ago"] = textfmt.relative
ENV.filters["upcoming"] = textfmt.upcoming
ENV.filters["trigger"] = describe_trigger
ENV.filters["duration"] = textfmt.duration
ENV.filters["plural"] = textfmt.plural


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return f"{n:.1f} GiB"


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""


ENV.filters["size"] = _size
ENV.filters["iso"] = _iso


def add_templates(package: str) -> None:
    """Make a module's `templates/` folder (package data) available; its files live under `<module>/`."""
    if package not in _PACKAGES:
        _PACKAGES.add(package)
        _LOADERS.append(PackageLoader(package, "templates"))


def page(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """A whole page in the console's layout: navigation, the viewer's access and CSRF token."""
    console = request.app.state.console
    html = ENV.get_template(template).render(
        request=request,
        viewer=request.state.viewer,
        nav=console.nav,
        path=request.url.path,
        **context,
    )
    return HTMLResponse(html, status_code=status_code)


def fragment(template: str, **context: Any) -> HTMLResponse:
    """A piece of a page (infinite scroll's next rows): no layout."""
    return HTMLResponse(ENV.get_template(template).render(**context))
