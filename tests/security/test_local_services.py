"""Issue #30, finding 6: the embedded PostgreSQL and NATS listen on loopback ports that every user of the
machine can reach. Without the secret in the owner's 0600 files nobody gets in: not as another local
user, not with the right user name and no password, not by publishing a forged event."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import asyncpg
import nats
import pytest

from host.services import PG_HBA, EmbeddedNats, EmbeddedPostgres, free_port, port_open

NOBODY = "nobody"


def without_secret(url: str) -> str:
    """The same URL without its secret (what another local user can guess): the user name stays."""
    scheme, rest = url.split("://", 1)
    creds, host = rest.split("@", 1)
    return f"{scheme}://{creds.split(':', 1)[0]}@{host}" if ":" in creds else f"{scheme}://{host}"


def assert_private(path: Path) -> None:
    info = path.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600, oct(info.st_mode)
    assert info.st_uid == os.geteuid()


async def refused(url: str) -> str:
    try:
        conn = await asyncpg.connect(url, timeout=30)
    except (asyncpg.PostgresError, OSError) as exc:
        return str(exc)
    await conn.close()
    raise AssertionError(f"PostgreSQL let {url} in")


async def test_postgres_requires_the_password(
    pg_server: EmbeddedPostgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PGPASSWORD", raising=False)
    url = pg_server.status().url
    assert url is not None
    assert "password" in await refused(without_secret(url))
    assert "password" in await refused(url.replace("postgres:", "postgres:wrong", 1))
    conn = await asyncpg.connect(url)
    try:
        assert await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    finally:
        await conn.close()
    assert_private(pg_server.password_file)


async def test_nats_requires_the_token(own_nats: EmbeddedNats) -> None:
    """Without the token nobody can publish a forged `feedeater.rss.messageCreated` for the bot to post."""
    url = own_nats.start()
    with pytest.raises(Exception, match="(?i)authorization"):
        await nats.connect(
            without_secret(url), allow_reconnect=False, connect_timeout=10, max_reconnect_attempts=0
        )
    nc = await nats.connect(url)
    await nc.close()
    assert_private(own_nats.token_file)
    assert_private(own_nats.config_file)
    pid = json.loads(own_nats.state_file.read_text())["pid"]
    token = own_nats.token_file.read_text().strip()
    assert token not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")  # not in `ps`


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another local user needs root")
def test_another_local_user_gets_nothing(pg_server: EmbeddedPostgres) -> None:
    url = pg_server.status().url
    assert url is not None
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    psql = pg_server.bin_dir() / "psql"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/"}
    as_nobody = {"user": NOBODY, "capture_output": True, "text": True, "check": False, "env": env, "cwd": "/"}
    res = subprocess.run(
        [str(psql), "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-w", "-c", "SELECT 1"],
        **as_nobody,
        timeout=60,
    )
    assert res.returncode != 0 and "password" in res.stderr, res.stderr
    cat = shutil.which("cat") or "/bin/cat"
    res = subprocess.run([cat, str(pg_server.password_file)], **as_nobody, timeout=60)
    assert res.returncode != 0 and "Permission denied" in res.stderr


async def test_a_data_directory_from_before_passwords_is_closed_at_its_next_start(tmp_path: Path) -> None:
    """Old clusters trusted every local connection; the next start sets a password and requires it."""
    pg = EmbeddedPostgres(tmp_path / "old-pg", port=free_port())
    pg.start()
    try:
        pg.stop()
        (pg.data / "pg_hba.conf").write_text(
            "host all all 127.0.0.1/32 trust\n"
        )  # what initdb --auth=trust left
        pg.password_file.unlink()
        url = pg.start()
        assert_private(pg.password_file)
        assert "password" in await refused(without_secret(url))
        conn = await asyncpg.connect(url)
        await conn.close()
        assert (pg.data / "pg_hba.conf").read_text() == PG_HBA
    finally:
        pg.stop()


async def test_a_nats_server_from_before_tokens_is_restarted_with_one(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "old-nats")
    server.store.mkdir(parents=True)
    port = free_port()
    old = await asyncio.create_subprocess_exec(
        str(server.binary()),
        *("-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(server.store)),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        server.state_file.write_text(json.dumps({"pid": old.pid, "port": port}))  # as the old code wrote it
        for _ in range(600):  # up to 30 s
            if port_open(port) or old.returncode is not None:
                break
            await asyncio.sleep(0.05)
        url = await asyncio.to_thread(server.start)
        await asyncio.wait_for(old.wait(), timeout=30)  # stopped: it let everybody in
        assert url.endswith(f"@127.0.0.1:{port}")  # same port: clients find it where they knew it
        with pytest.raises(Exception, match="(?i)authorization"):
            await nats.connect(
                without_secret(url), allow_reconnect=False, connect_timeout=10, max_reconnect_attempts=0
            )
        nc = await nats.connect(url)
        await nc.close()
    finally:
        server.stop()
        if old.returncode is None:
            old.kill()
            await old.wait()
