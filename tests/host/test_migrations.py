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
