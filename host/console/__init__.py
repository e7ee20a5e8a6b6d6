"""The web console: server-rendered pages on the host's one ASGI app (see host/console/app.py)."""
