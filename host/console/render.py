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

# Pages: no inline script, nothing from other origins but the images and media of feed content. The
# gate (host.web.gate) adds the other security headers, and its stricter policy to everything else.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: http: https:; "
    "media-src 'self' http: https:; frame-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
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


def _iso(value: datetime | None) -> str:
    return value.isoformat() if value else ""


ENV.filters["size"] = textfmt.size
ENV.filters["iso"] = _iso


def add_templates(package: str) -> None:
    """Make a module's `templates/` folder (package data) available; its files live under `<module>/`."""
    if package not in _PACKAGES:
        _PACKAGES.add(package)
        _LOADERS.append(PackageLoader(package, "templates"))


def page(
    request: Request,
    template: str,
    status_code: int = 200,
    *,
    headers: dict[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A whole page in the console's layout: navigation, the viewer's access and CSRF token."""
    console = request.app.state.console
    html = ENV.get_template(template).render(
        request=request,
        viewer=request.state.viewer,
        nav=console.nav,
        path=request.url.path,
        **context,
    )
    return HTMLResponse(
        html, status_code=status_code, headers={"Content-Security-Policy": CSP, **(headers or {})}
    )


def fragment(template: str, **context: Any) -> HTMLResponse:
    """A piece of a page (infinite scroll's next rows): no layout."""
    return HTMLResponse(ENV.get_template(template).render(**context))
