"""Issue #30, findings 1, 2, 4 and 7 against a real `run` host on loopback: what a hostile feed, a
DNS-rebinding page, an unauthenticated client with a big body, or a request through a reverse proxy can
get out of the HTTP server (the API, the console and the WebSub callbacks share one port)."""

from __future__ import annotations

import asyncio
import hmac
import itertools
import re
from collections.abc import Iterable
from typing import Any

import httpx
import pytest

from host import settings, tokens
from modules.rss import store
from tests.feedserver import FeedServer, Route
from tests.security.conftest import PUBLIC_HOST, Web

HOSTILE_PAGE = b"<html><script>fetch('/settings').then(r => r.text()).then(alert)</script></html>"
SECURITY_HEADERS = ("content-security-policy", "x-content-type-options", "x-frame-options", "referrer-policy")


async def csrf_token(client: httpx.AsyncClient) -> str:
    """A form's CSRF token, as the console's own page gives it to this client's session."""
    page = await client.get("/settings")
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None
    return found[1]


async def stored_setting(web: Web, module: str, key: str) -> Any:
    async with web.host.require_pool().acquire() as conn:
        return (await settings.load_stored(conn, module)).get(key)


# -- 1: a feed publisher's bytes are never a page of this origin ------------------------------------
async def test_a_stored_html_body_comes_back_as_an_inert_download(web: Web, feed_server: FeedServer) -> None:
    """A feed server answers text/html with a script once; the poll stores it (every 200 is kept).
    Opened from the API on the console's origin it must not render, sniff, run or be framed."""
    feed_server.route(
        "/feed.xml", Route(body=HOSTILE_PAGE, headers={"Content-Type": "text/html; charset=utf-8"})
    )
    async with web.host.require_pool().acquire() as conn:
        feed, _ = await store.add_feed(conn, url=feed_server.url("/feed.xml"))
    async with web.client() as client:
        await client.post(f"/api/v1/feeds/{feed.id}/refetch", headers=web.auth)
        fetch_id = await web.host.require_pool().fetchval(
            "SELECT max(id) FROM mod_rss.raw_fetches WHERE feed_id = $1", feed.id
        )
        assert fetch_id is not None, "the poll stores every 200, HTML included"
        res = await client.get(f"/api/v1/raw/{fetch_id}/body")
    assert res.status_code == 200 and res.content == HOSTILE_PAGE  # the bytes, exactly
    assert res.headers["content-type"] == "application/octet-stream"
    assert res.headers["content-disposition"].startswith("attachment")
    assert res.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in res.headers["content-security-policy"]
    assert res.headers["x-frame-options"] == "DENY"


async def test_every_response_carries_the_security_headers(web: Web) -> None:
    async with web.client() as client:
        answers = [
            await client.get("/api/v1/feeds"),
            await client.get("/api/v1/feeds/999999"),  # a JSON 404
            await client.post("/api/v1/feeds", json={"url": "http://x.example/"}),  # 401 from the gate
            await client.get("/api/v1/nothing-here"),
            await client.get("/healthz"),
            await client.get("/metrics"),
            await client.get("/openapi.json"),
            await client.get("/api/docs"),
            await client.get("/login"),
            await client.get("/settings"),
            await client.get("/", headers={"Host": "rebind.attacker.example"}),  # refused by the gate
        ]
    for res in answers:
        missing = [h for h in SECURITY_HEADERS if h not in res.headers]
        assert not missing, (res.request.url, res.status_code, missing)
        assert res.headers["x-content-type-options"] == "nosniff"
    api, console = answers[0], answers[9]
    assert "sandbox" in api.headers["content-security-policy"]  # JSON opened in a browser is inert
    assert "script-src 'self'" in console.headers["content-security-policy"]  # pages keep their own


# -- 2: DNS rebinding and cross-site requests ----------------------------------------------------------
async def test_a_rebinding_page_gets_nothing(web: Web) -> None:
    """A page at rebind.attacker.example whose name now resolves to 127.0.0.1 reads and posts as the
    same origin: the Host name gives it away."""
    evil = {"Host": f"rebind.attacker.example:{web.port}"}
    async with web.client() as client:
        token = await csrf_token(client)  # even holding a valid token and cookie
        page = await client.get("/settings", headers=evil)
        assert page.status_code == 400 and 'name="csrf"' not in page.text
        assert "FEEDEATER_HTTP_PUBLIC_HOSTS" in page.json()["fix"]
        posted = await client.post(
            "/settings/host",
            data={"csrf": token, "outbox_keep_days": "3"},
            headers={**evil, "Origin": f"http://rebind.attacker.example:{web.port}"},
        )
        assert posted.status_code == 400
        assert (await client.get("/api/v1/feeds", headers=evil)).status_code == 400
    assert await stored_setting(web, "host", "outbox_keep_days") is None


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://attacker.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},  # another port of this machine
    ],
)
async def test_cross_site_requests_change_nothing(web: Web, headers: dict[str, str]) -> None:
    async with web.client() as client:
        token = await csrf_token(client)
        res = await client.post(
            "/settings/host", data={"csrf": token, "job_runs_keep_days": "5"}, headers=headers
        )
        assert res.status_code == 403, res.text
        api = await client.post(
            "/api/v1/feeds", json={"url": "http://x.example/"}, headers={**web.auth, **headers}
        )
        assert api.status_code == 403
    assert await stored_setting(web, "host", "job_runs_keep_days") is None


async def test_the_own_origin_and_the_public_name_may_post(web: Web) -> None:
    async with web.client() as client:
        token = await csrf_token(client)
        own = {"Origin": web.base, "Sec-Fetch-Site": "same-origin"}
        res = await client.post("/settings/host", data={"csrf": token, "outbox_keep_days": "6"}, headers=own)
        assert res.status_code == 303, res.text
        assert await stored_setting(web, "host", "outbox_keep_days") == 6
        # The configured public name (FEEDEATER_HTTP_PUBLIC_HOSTS) is answered, with or without a port.
        for host in (PUBLIC_HOST, f"{PUBLIC_HOST}:443", f"localhost:{web.port}", f"[::1]:{web.port}"):
            assert (await client.get("/healthz", headers={"Host": host})).status_code in (200, 503), host


# -- 4: bodies are limited and authenticated before anything reads them -------------------------------
async def test_an_unauthenticated_body_is_not_parsed(web: Web) -> None:
    async with web.client() as client:
        res = await client.post("/api/v1/feeds", content=b"{", headers={"Content-Type": "application/json"})
        assert res.status_code == 401, res.text  # not 422: the JSON was never read
        big = b"{" + b" " * (2 << 20)
        res = await client.post("/api/v1/feeds", content=big, headers={"Content-Type": "application/json"})
        assert res.status_code == 401, res.text


async def early_answer(port: int, head: str, body: Iterable[bytes]) -> tuple[int, bytes]:
    """Send a request head and then its body chunk by chunk, while reading: the status and first bytes
    the server answers with, however much of the body it took (a server that waits for a body it was
    promised and never gets never answers)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def send() -> None:
        writer.write(f"{head}\r\n".encode())
        for chunk in body:
            writer.write(chunk)
            await writer.drain()
        await asyncio.Event().wait()  # then hold the connection open: the rest never comes

    sending = asyncio.create_task(send())
    try:
        answer = await asyncio.wait_for(reader.read(4096), timeout=60)
    finally:
        sending.cancel()
        writer.close()
    return int(answer.split(b" ", 2)[1]), answer


async def test_answers_come_before_an_unwanted_body_is_read(web: Web) -> None:
    """The gate and the console's guard refuse on the headers alone: a client announcing megabytes gets
    its answer after sending a few bytes (old code waited for, and parsed, all of it)."""
    common = f"Host: 127.0.0.1:{web.port}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    # The API without a token (a 5 MiB OPML import announced).
    api = f"POST /api/v1/opml HTTP/1.1\r\n{common}Content-Length: {5 << 20}\r\n"
    assert (await early_answer(web.port, api, [b"<opml"]))[0] == 401
    # Over the console's limit (1 MiB), before any login.
    login = f"POST /login HTTP/1.1\r\n{common}Content-Length: {2 << 20}\r\n"
    assert (await early_answer(web.port, login, [b"csrf="]))[0] == 413
    # A push to a WebSub callback nobody subscribed with: its token is looked at before its body.
    push = f"POST /websub/no-such-token HTTP/1.1\r\n{common}Content-Length: {5 << 20}\r\n"
    assert (await early_answer(web.port, push, [b"<feed"]))[0] == 404
    # A visitor who may only read posts a form: refused before the form is parsed.
    readonly = (
        f"POST /settings/host HTTP/1.1\r\n{common}X-Forwarded-For: 203.0.113.9\r\nContent-Length: 500000\r\n"
    )
    assert (await early_answer(web.port, readonly, [b"csrf=x&"]))[0] == 403


async def test_a_chunked_body_is_cut_off_at_the_limit(web: Web) -> None:
    """Without a Content-Length the body is counted as the route reads it: the API's 10 MiB (an OPML
    import), authenticated, stops at 10 MiB of an endless upload."""
    head = (
        f"POST /api/v1/opml HTTP/1.1\r\nHost: 127.0.0.1:{web.port}\r\nContent-Type: text/x-opml\r\n"
        f"Authorization: Bearer {web.token}\r\nTransfer-Encoding: chunked\r\n"
    )
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    status, answer = await early_answer(web.port, head, itertools.repeat(chunk))
    assert status == 413 and b"larger than 10.0 MiB" in answer


async def test_multipart_forms_are_parsed_within_limits(web: Web) -> None:
    async with web.client() as client:
        token = await csrf_token(client)
        files = [("opml", ("a.opml", b"<opml/>")), ("opml", ("b.opml", b"<opml/>"))]
        res = await client.post("/rss/feeds/import", data={"csrf": token}, files=files)
        assert res.status_code == 400 and "Too many files" in res.text
        fields = {"csrf": token, **{f"f{i}": "x" for i in range(300)}}
        res = await client.post("/settings/host", data=fields)
        assert res.status_code == 400 and "Too many fields" in res.text


# -- 7: proxies, scopes, CSRF ------------------------------------------------------------------------
async def test_a_request_through_a_proxy_is_not_local(web: Web) -> None:
    """A reverse proxy on this machine makes every request arrive from 127.0.0.1; its forwarding
    headers (from any peer, trusted or not) mean the browser is elsewhere: reads need a token and a
    console without password is read-only."""
    for forwarded in (
        {"X-Forwarded-For": "198.51.100.7"},
        {"Forwarded": "for=198.51.100.7"},
        {"Via": "1.1 proxy"},
    ):
        async with web.client(headers=forwarded) as client:
            assert (await client.get("/api/v1/feeds")).status_code == 401
            assert (await client.get("/api/v1/feeds", headers=web.auth)).status_code == 200
            token = await csrf_token(client)
            res = await client.post("/settings/host", data={"csrf": token, "job_runs_keep_days": "4"})
            assert res.status_code == 403 and "read-only" in res.text
    assert await stored_setting(web, "host", "job_runs_keep_days") is None
    async with web.client() as direct:  # the same requests straight from this machine
        assert (await direct.get("/api/v1/feeds")).status_code == 200


async def test_a_trusted_proxy_says_the_scheme_and_the_name(web: Web) -> None:
    """127.0.0.1 is a trusted proxy here: its forwarded https makes the session cookie Secure, and its
    forwarded host is what the allow-list judges."""
    async with web.client() as client:
        https = await client.get(
            "/login", headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.1"}
        )
        assert "Secure" in https.headers["set-cookie"]
        plain = await client.get("/login")
        assert "Secure" not in plain.headers["set-cookie"]
        named = await client.get(
            "/login", headers={"Forwarded": f'for=192.0.2.1;host="{PUBLIC_HOST}";proto=https'}
        )
        assert named.status_code == 200
        rebound = await client.get(
            "/login", headers={"Forwarded": "for=192.0.2.1;host=rebind.attacker.example"}
        )
        assert rebound.status_code == 400


async def test_a_read_token_only_reads(web: Web) -> None:
    async with web.host.require_pool().acquire() as conn:
        reader = (await tokens.create(conn, "dashboard", scope="read"))["token"]
    headers = {"Authorization": f"Bearer {reader}", "X-Forwarded-For": "192.0.2.5"}  # reads need a token
    async with web.client() as client:
        assert (await client.get("/api/v1/feeds", headers=headers)).status_code == 200
        res = await client.post("/api/v1/feeds", json={"url": "http://x.example/"}, headers=headers)
        assert res.status_code == 403 and "--scope write" in res.json()["fix"]


async def test_the_csrf_token_is_compared_in_constant_time(web: Web, monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[Any, Any]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    async with web.client() as client:
        token = await csrf_token(client)
        forged = token[:-1] + "x"  # tokens are hex
        res = await client.post("/settings/host", data={"csrf": forged})
    assert res.status_code == 403
    assert any(forged in pair for pair in compared)


async def test_the_api_key_cannot_be_sent_elsewhere_from_the_console(web: Web) -> None:
    """Whoever can post the settings form (a CSRF bug, a shared session) would otherwise point
    rss.openai_base_url at their server and receive the stored key at the next start."""
    async with web.host.require_pool().acquire() as conn:
        await settings.store(conn, web.host.specs["rss"].manifest, "openai_api_key", "sk-operator")
    async with web.client() as client:
        token = await csrf_token(client)
        form = {"csrf": token, "openai_base_url": "https://collector.attacker.example/v1"}
        res = await client.post("/settings/rss", data=form)
        assert res.status_code == 400 and "enter openai_api_key again" in res.text
        assert await stored_setting(web, "rss", "openai_base_url") is None
        res = await client.post("/settings/rss", data={**form, "openai_api_key": "sk-mine"})
        assert res.status_code == 303
    assert await stored_setting(web, "rss", "openai_base_url") == "https://collector.attacker.example/v1"
    assert (
        await stored_setting(web, "rss", "openai_api_key") == "sk-mine"
    )  # the operator's key is gone, not sent
