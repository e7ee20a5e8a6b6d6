"""The host's one ASGI app (FastAPI served by uvicorn): /healthz, /metrics and the routers modules mount."""
