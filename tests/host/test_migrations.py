"""Migrations: applied once, in order, under a lock; edited files refused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncpg
import pytest

from host import migrate, module
from host.errors import UserError


def write(root: Path, scope: str, name: str, sql: str) -> None:
    (root / scope).mkdir(parents=True, exist_ok=True)
    (root / scope / name).write_text(sql)


def scopes(root: Path) -> dict[str, Path]:
    return {d.name: d for d in root.iterdir() if d.is_dir()}


async def test_two_hosts_migrating_at_once_apply_each_file_once(database_url: str) -> None:
    migrations = migrate.discover(migrate.sources(module.discover()))
    conns = [await asyncpg.connect(database_url) for _ in range(2)]
    try:
        results = await asyncio.gather(*(migrate.apply(c, migrations) for c in conns))
    finally:
        for c in conns:
            await c.close()
    applied = sorted(results[0] + results[1])
    assert applied == sorted(m.label for m in migrations)  # each applied by exactly one of the two
    conn = await asyncpg.connect(database_url)
    try:
        assert await conn.fetchval("SELECT count(*) FROM public.feedeater_migrations") == len(migrations)
        assert await conn.fetchval("SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == 1
        assert await conn.fetchval("SELECT to_regclass('mod_rss.entries') IS NOT NULL")
    finally:
        await conn.close()


def test_discover_orders_host_first_then_modules(tmp_path: Path) -> None:
    write(tmp_path, "zeta", "0001_a.sql", "SELECT 1;")
    write(tmp_path, "host", "0002_b.sql", "SELECT 1;")
    write(tmp_path, "host", "0001_a.sql", "SELECT 1;")
    write(tmp_path, "alpha", "0001_a.sql", "SELECT 1;")
    assert [m.label for m in migrate.discover(scopes(tmp_path))] == [
        "host/0001_a",
        "host/0002_b",
        "alpha/0001_a",
        "zeta/0001_a",
    ]


def test_misnamed_migration_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "host", "1_init.sql", "SELECT 1;")
    with pytest.raises(UserError, match="misnamed"):
        migrate.discover(scopes(tmp_path))


async def test_edited_applied_migration_is_refused(tmp_path: Path, database_url: str) -> None:
    write(tmp_path, "demo", "0001_init.sql", "CREATE TABLE demo_t (id int);")
    conn = await asyncpg.connect(database_url)
    try:
        assert await migrate.apply(conn, migrate.discover(scopes(tmp_path))) == ["demo/0001_init"]
        assert await migrate.apply(conn, migrate.discover(scopes(tmp_path))) == []  # once only
        write(tmp_path, "demo", "0001_init.sql", "CREATE TABLE demo_t (id bigint);")
        with pytest.raises(UserError, match="changed after it was applied"):
            await migrate.apply(conn, migrate.discover(scopes(tmp_path)))
    finally:
        await conn.close()


async def test_failing_migration_applies_nothing_of_itself(tmp_path: Path, database_url: str) -> None:
    write(tmp_path, "demo", "0001_bad.sql", "CREATE TABLE half_t (id int); SELECT no_such_function();")
    conn = await asyncpg.connect(database_url)
    try:
        with pytest.raises(UserError, match="demo/0001_bad failed"):
            await migrate.apply(conn, migrate.discover(scopes(tmp_path)))
        assert await conn.fetchval("SELECT to_regclass('half_t')") is None
        assert await conn.fetchval("SELECT count(*) FROM public.feedeater_migrations") == 0
    finally:
        await conn.close()


async def test_the_outbox_keeps_payloads_in_line_after_migrating_a_database_in_place(
    database_url: str,
) -> None:
    """Issue 25: a database made by the schema before host/0025 is converted in place, rows kept."""
    everything = migrate.discover(migrate.sources(module.discover()))
    before = [m for m in everything if m.label != "host/0025_outbox_inline_payloads"]
    assert len(before) == len(everything) - 1
    conn = await asyncpg.connect(database_url)
    try:
        await migrate.apply(conn, before)
        payload = b'{"type":"MessageCreated","message":' + b'"x' * 2000 + b'"}'
        await conn.execute(
            "INSERT INTO host.outbox (event_id, subject, payload) VALUES (gen_random_uuid(), 's', $1)",
            payload,
        )
        assert await migrate.apply(conn, everything) == ["host/0025_outbox_inline_payloads"]
        options = await conn.fetchval("SELECT reloptions FROM pg_class WHERE oid = 'host.outbox'::regclass")
        assert options == ["toast_tuple_target=8160"]
        assert await conn.fetchval("SELECT payload FROM host.outbox") == payload
        toast = await conn.fetchval(
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'host.outbox'::regclass"
        )
        chunks = f"SELECT count(*) FROM {toast}"
        assert await conn.fetchval(chunks) > 0  # the row written before the migration: out of line
        held = await conn.fetchval(chunks)
        await conn.execute(
            "INSERT INTO host.outbox (event_id, subject, payload) VALUES (gen_random_uuid(), 's', $1)",
            payload,
        )
        assert await conn.fetchval(chunks) == held  # the new one: in the row, no TOAST chunks
        assert [bytes(r["payload"]) for r in await conn.fetch("SELECT payload FROM host.outbox")] == [
            payload
        ] * 2
    finally:
        await conn.close()
