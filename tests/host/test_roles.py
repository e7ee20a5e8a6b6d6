"""Least privilege (issue 23 item 7): a module's connections act as its own role, which owns its schemas,
reads other modules' public views only, and reaches host tables only through the host's checked functions."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest
import pytest_asyncio

from host import outbox, roles
from host.events import Event, subject
from host.runtime import Host
from host.services import EmbeddedPostgres
from host.testing import make_host
from host.testing.services import admin_url

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def opened(tmp_path: Path, database_url: str) -> AsyncIterator[Host]:
    host = make_host(tmp_path, database_url, "nats://127.0.0.1:1")
    await host.open(with_bus=False)
    yield host
    await host.close()


def event(module: str, name: str) -> Event:
    return Event(uuid.uuid4(), subject(module, name), {"type": name})


async def test_a_module_connection_cannot_touch_host_tables_but_emits(opened: Host) -> None:
    assert opened.isolation.warning is None
    pool = await opened.module_pool("rss")
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == "feedeater_mod_rss"
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM host.api_tokens")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM host.settings")
        mine = event("rss", "messageCreated")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(
                "INSERT INTO host.outbox (event_id, subject, payload) VALUES ($1, $2, $3)",
                mine.event_id,
                mine.subject,
                mine.encode(),
            )
        emit = outbox.emitter("rss", ["messageCreated"])
        async with conn.transaction():
            assert await emit(conn, mine) == 1
        # The checked function refuses another module's subject even when called by hand.
        theirs = event("digest", "digestCreated")
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="may not emit feedeater.digest"):
            await conn.fetchval(
                "SELECT host.enqueue_events($1, $2, $3, '{}', '{}', '{}', '{}')",
                [theirs.event_id],
                [theirs.subject],
                [theirs.encode()],
            )
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="may not write"):
            await conn.fetchval("SELECT host.mark_processed('digest.entries', ARRAY['x'])")
    # Released and acquired again (one connection): still the module's role.
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == "feedeater_mod_rss"
    host_pool = opened.require_pool()
    assert await host_pool.fetchval("SELECT subject FROM host.outbox WHERE event_id = $1", mine.event_id) == (
        "feedeater.rss.messageCreated"
    )
    assert (
        await host_pool.fetchval("SELECT count(*) FROM host.outbox WHERE subject LIKE 'feedeater.digest.%'")
        == 0
    )


async def test_a_module_owns_its_schema_and_reads_only_public_views_of_others(opened: Host) -> None:
    host_pool = opened.require_pool()
    owners = await host_pool.fetch(
        """SELECT DISTINCT pg_get_userbyid(c.relowner) AS owner FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ('mod_rss', 'rss_public')"""
    )
    assert [r["owner"] for r in owners] == ["feedeater_mod_rss"]
    assert await host_pool.fetchval(
        "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'mod_rss'"
    ) == ("feedeater_mod_rss")
    discord = await opened.module_pool("discord")
    async with discord.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM rss_public.feeds") == 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM mod_rss.feeds")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("DELETE FROM mod_rss.entries")
        # rss's public API, called inside discord's transaction, writes with rss's rights only there.
        async with conn.transaction():
            async with roles.acting_as(conn, "rss"):
                assert await conn.fetchval("SELECT current_user") == "feedeater_mod_rss"
                await conn.fetch("SELECT id FROM mod_rss.feeds")
            assert await conn.fetchval("SELECT current_user") == "feedeater_mod_discord"
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM mod_rss.feeds")


async def test_contexts_and_job_runs_only_for_the_callers_module(opened: Host) -> None:
    rss = await opened.module_pool("rss")
    now = datetime.now(UTC)
    async with rss.acquire() as conn:
        run = await conn.fetchval("SELECT host.job_run_start('rss', 'poll', 'h', 'manual')")
        await conn.execute("SELECT host.job_run_record($1, 'ok', NULL, '{}')", run)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetchval("SELECT host.job_run_start('digest', 'build', 'h', 'manual')")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetchval(
                "SELECT host.put_context('digest', 'k', 's', 'l', '[]', NULL, '{}', NULL, $1)", now
            )
        assert (
            await conn.fetchval(
                "SELECT host.put_context('rss', 'k', 's', 'l', '[]', NULL, '{}', NULL, $1)", now
            )
            == 1
        )
        assert await conn.fetchval("SELECT count(*) FROM host.contexts") == 1  # public data: readable
    assert await opened.require_pool().fetchval("SELECT status FROM host.job_runs WHERE id = $1", run) == "ok"


def _as_user(url: str, user: str, password: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}:{password}@{parts.hostname}:{parts.port}"))


async def test_a_database_user_that_may_not_create_roles_runs_then_gets_them_from_the_script(
    tmp_path: Path, pg_server: EmbeddedPostgres
) -> None:
    """An external database: the owner may not create roles, so the host warns and modules use its
    rights; an administrator runs `db roles --print-sql`'s script, and the next start isolates them."""
    user, database = f"plain_{uuid.uuid4().hex[:8]}", f"ext_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(admin_url(pg_server))
    try:
        await admin.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'pw'")
        await admin.execute(f"CREATE DATABASE {database} OWNER {user}")
        ext = await asyncpg.connect(admin_url(pg_server, database))
        try:  # pgvector is not a trusted extension: an administrator creates it on an external database
            await ext.execute("CREATE EXTENSION vector")
        finally:
            await ext.close()
        url = _as_user(admin_url(pg_server, database), user, "pw")
        host = make_host(tmp_path, url, "nats://127.0.0.1:1")
        await host.open(with_bus=False)
        try:
            assert host.isolation.warning is not None
            assert "feedeater db roles --print-sql" in host.isolation.warning
            assert await host.module_pool("rss") is host.require_pool()
            script = roles.setup_sql(
                sorted(n for n in host.specs if n != "host"), host_user=user, database=database
            )
        finally:
            await host.close()
        target = await asyncpg.connect(admin_url(pg_server, database))
        try:
            await target.execute(script)
        finally:
            await target.close()
        host = make_host(tmp_path, url, "nats://127.0.0.1:1")
        await host.open(with_bus=False)
        try:
            assert host.isolation.warning is None
            async with (await host.module_pool("rss")).acquire() as conn:
                assert await conn.fetchval("SELECT current_user") == "feedeater_mod_rss"
                assert await conn.fetchval("SELECT count(*) FROM mod_rss.feeds") == 0
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.fetch("SELECT * FROM host.api_tokens")
            owner = await host.require_pool().fetchval(
                "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'mod_rss.feeds'::regclass"
            )
            assert owner == "feedeater_mod_rss"  # made by the host before the roles, handed over
        finally:
            await host.close()
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        await admin.execute(f"DROP ROLE IF EXISTS {user}")
        await admin.close()
