"""Access without a browser, through the ASGI app: a console bound beyond loopback with no password is
read-only (pages yes, forms no); with a password every page asks for a login first."""

from __future__ import annotations

import dataclasses
import re

import httpx
from fastapi import FastAPI

from host.console import app as console_app
from host.console import auth
from host.runtime import Host


async def _client(host: Host, bind: str) -> httpx.AsyncClient:
    host.config = dataclasses.replace(host.config, http_host=bind)
    app = FastAPI()
    await console_app.mount(app, host, [])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test")


async def test_network_console_without_password_is_read_only(host: Host) -> None:
    async with await _client(host, "0.0.0.0") as client:
        page = await client.get("/settings")
        assert page.status_code == 200 and "read-only" in page.text
        assert "Secure" in page.headers["set-cookie"]  # off loopback the cookie is Secure
        assert "Save rss" not in page.text and " disabled" in page.text  # inputs shown, no way to save
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        # Even a well-formed post with a valid token changes nothing.
        res = await client.post("/settings/rss", data={"csrf": csrf[1], "poll_batch": "5"})
        assert res.status_code == 403 and "read-only" in res.text


async def test_password_sends_every_page_to_login(host: Host) -> None:
    async with host.require_pool().acquire() as conn:
        await auth.set_password(conn, "long enough password")
    async with await _client(host, "127.0.0.1") as client:
        for path in ("/", "/settings", "/live", "/contexts"):
            res = await client.get(path)
            assert res.status_code == 303 and res.headers["location"] == f"/login?next={path}"
        login = await client.get("/login")
        assert login.status_code == 200 and "content-security-policy" in login.headers
        assert "script-src 'self'" in login.headers["content-security-policy"]
        assert "unsafe-inline" not in login.headers["content-security-policy"]
