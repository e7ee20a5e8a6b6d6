"""`/api/docs` without the internet: Swagger UI from the files the fastapi-offline package ships, started
by a script of ours. FastAPI's own page loads Swagger UI from a CDN (blank offline) and starts it with an
inline script; here nothing leaves the host and the policy needs no inline script."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

ASSETS = "/static/api-docs"  # swagger-ui-bundle.js, swagger-ui.css, favicon.png (package fastapi_offline)

PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>feedeater API</title>
<link rel="icon" href="{ASSETS}/favicon.png">
<link rel="stylesheet" href="{ASSETS}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{ASSETS}/swagger-ui-bundle.js"></script>
<script src="/api/docs/start.js"></script>
</body>
</html>
"""
START = """window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout"
});
"""


# Its own policy (the gate gives other responses an inert `sandbox` one): scripts and styles from here only.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)


def mount(app: FastAPI) -> None:
    """The page, its start script and the bundled assets (build the app with `docs_url=None`)."""
    app.mount(ASSETS, StaticFiles(packages=[("fastapi_offline", "static")]), name="api-docs-assets")

    @app.get("/api/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return HTMLResponse(PAGE, headers={"Content-Security-Policy": CSP})

    @app.get("/api/docs/start.js", include_in_schema=False)
    async def start() -> Response:
        return Response(START, media_type="text/javascript")
