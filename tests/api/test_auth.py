"""API tokens: writes need one, a host bound beyond loopback needs one for everything, revoked ones fail."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest

from host import tokens
from host.cli import main
from host.web.auth import is_loopback, needs_token
from tests.api.conftest import Api, running, stopped
from tests.api.test_endpoints import error_of
from tests.services import feedeater_env

WRITES = [
    ("POST", "/api/v1/feeds", {"url": "http://example.org/feed.xml"}),
    ("PATCH", "/api/v1/feeds/1", {"title": "x"}),
    ("DELETE", "/api/v1/feeds/1", None),
    ("POST", "/api/v1/feeds/1/refetch", None),
    ("POST", "/api/v1/opml", None),
]


@pytest.mark.parametrize(
    ("bind", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("feeds.example.org", False),
    ],
)
def test_which_binds_are_loopback(bind: str, loopback: bool) -> None:
    assert is_loopback(bind) is loopback
    assert needs_token("GET", loopback=loopback) is not loopback
    assert needs_token("post", loopback=loopback)


async def test_writes_need_a_valid_token(api: Api) -> None:
    for method, path, body in WRITES:
        missing = await api.client.request(method, path, json=body)
        assert error_of(missing, 401)["error"] == "writes need an API token", (method, path)
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = await api.client.request(method, path, json=body, headers={"Authorization": "Bearer fe_nope"})
        assert "unknown or revoked" in error_of(wrong, 401)["error"]
    assert (await api.client.get("/api/v1/feeds")).status_code == 200  # reads on loopback are open


async def test_a_revoked_token_stops_working(api: Api) -> None:
    pool = api.host.require_pool()
    async with pool.acquire() as conn:
        created = await tokens.create(conn, "short-lived")
    headers = {"Authorization": f"Bearer {created['token']}"}
    ok = await api.client.patch("/api/v1/feeds/999999", json={"title": "x"}, headers=headers)
    assert ok.status_code == 404  # authorized: the feed just does not exist
    async with pool.acquire() as conn:
        assert [t["id"] for t in await tokens.revoke(conn, str(created["id"]))] == [created["id"]]
        stored = await conn.fetchval("SELECT token_sha256 FROM host.api_tokens WHERE id = $1", created["id"])
    assert stored == tokens.digest(created["token"]) and created["token"] not in stored  # hashed at rest
    error_of(await api.client.patch("/api/v1/feeds/999999", json={"title": "x"}, headers=headers), 401)


async def test_a_host_beyond_loopback_requires_a_token_for_reads(
    api: Api, tmp_path: Path, module_db: str, nats_url: str
) -> None:
    h, stop, task = await running(tmp_path / "open-host", module_db, nats_url, http_host="0.0.0.0")
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{h.http_port}", timeout=30) as client:
            assert "requires an API token" in error_of(await client.get("/api/v1/feeds"), 401)["error"]
            error_of(await client.get("/api/v1/contexts"), 401)
            assert (await client.get("/api/v1/feeds", headers=api.auth)).status_code == 200
            assert (await client.get("/healthz")).status_code in (200, 503)  # probes stay open
    finally:
        await stopped(h, stop, task)


async def test_token_cli_create_list_revoke(
    api: Api,
    tmp_path: Path,
    module_db: str,
    nats_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`feedeater api token ...` in this process (a subprocess pays ~3 s of imports per command)."""
    for key, value in feedeater_env(tmp_path, module_db, nats_url).items():
        monkeypatch.setenv(key, value)

    async def cli(*args: str) -> tuple[int, str, str]:
        code = await asyncio.to_thread(main, ["api", "token", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, out, _ = await cli("create", "--name", "ci", "--json")
    created = json.loads(out)
    assert code == 0 and created["token"].startswith("fe_") and created["name"] == "ci"
    assert created["scope"] == "write"
    headers = {"Authorization": f"Bearer {created['token']}"}
    assert (await api.client.post("/api/v1/feeds/999999/refetch", headers=headers)).status_code == 404
    code, out, _ = await cli("create", "--name", "dashboard", "--scope", "read", "--json")
    reader = {"Authorization": f"Bearer {json.loads(out)['token']}"}
    assert code == 0 and json.loads(out)["scope"] == "read"
    error_of(await api.client.post("/api/v1/feeds/999999/refetch", headers=reader), 403)
    assert (await api.client.get("/api/v1/feeds", headers=reader)).status_code == 200
    code, listed, _ = await cli("list")
    assert code == 0 and "ci" in listed and created["token"][:10] in listed
    assert re.search(r"dashboard\s+read", listed) and re.search(r"\bci\s+write", listed)
    assert created["token"] not in listed
    assert (await cli("revoke", "ci"))[0] == 0
    error_of(await api.client.post("/api/v1/feeds/999999/refetch", headers=headers), 401)
    code, _, err = await cli("revoke", "nobody")
    assert code == 2 and "no API token 'nobody'" in err
