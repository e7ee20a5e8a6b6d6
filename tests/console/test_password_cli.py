"""`feedeater console password`: stored as an argon2 hash, ends every session, refuses short ones."""

from __future__ import annotations

import subprocess
from pathlib import Path

import asyncpg

from host.console import auth
from tests.services import FEEDEATER, feedeater_env


def _set(env: dict[str, str], password: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FEEDEATER, "console", "password"],
        env=env,
        input=password + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_console_password_is_hashed_and_logs_everyone_out(tmp_path: Path, database_url: str) -> None:
    env = feedeater_env(tmp_path, database_url, "nats://127.0.0.1:1")
    short = _set(env, "short")
    assert short.returncode == 2 and "shorter than 8" in short.stderr and "Traceback" not in short.stderr
    conn = await asyncpg.connect(database_url)
    try:
        session = await auth.start_session(conn)
        done = _set(env, "a long enough secret")
        assert done.returncode == 0, done.stderr
        stored = await conn.fetchval("SELECT password_hash FROM host.console_auth")
        assert stored.startswith("$argon2") and "a long enough secret" not in stored
        assert auth.verify(stored, "a long enough secret")
        assert not await auth.logged_in(conn, session)  # a new password ends the old sessions
    finally:
        await conn.close()
