"""Plain-SQL migrations: `NNNN_name.sql` files per scope, applied once each, in order, under a lock.

Scope `host` and the built-in modules live in the top-level `migrations/<scope>/` folder (shipped in
the wheel as package `feedeater_migrations`); a module from another distribution names its own
directory in `Manifest.migrations`, applied in scope `<module name>`.

Several hosts starting together serialize on a Postgres advisory lock, so each file is applied exactly
once. A checksum is recorded; an edited file that was already applied is refused rather than silently
diverging from what the database holds.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

from host import roles
from host.errors import UserError
from host.module import ModuleSpec
from host.roles import Isolation

if TYPE_CHECKING:
    import asyncpg  # imported when migrations run: every module's manifest imports this file


def _root() -> Traversable:
    """The top-level migrations folder: beside host/ in a source checkout, else the installed package."""
    checkout = Path(__file__).resolve().parent.parent / "migrations"
    if (checkout / "host").is_dir():
        return checkout
    return importlib.resources.files("feedeater_migrations")


MIGRATIONS_DIR = _root()
_LOCK_KEY = 0x6665_6564  # "feed": the advisory lock all hosts take while migrating
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    scope: str
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    @property
    def label(self) -> str:
        return f"{self.scope}/{self.version:04d}_{self.name}"


def builtin(scope: str) -> Traversable:
    """The migrations of the host or a built-in module, in the top-level folder."""
    return MIGRATIONS_DIR / scope


def sources(specs: Mapping[str, ModuleSpec]) -> dict[str, Traversable]:
    """Scope → directory: the host's, then every installed module that declares migrations."""
    found = {"host": builtin("host")}
    found.update({n: s.manifest.migrations for n, s in specs.items() if s.manifest.migrations is not None})
    return found


def discover(scopes: Mapping[str, Traversable]) -> list[Migration]:
    """All migrations, `host` first, then module scopes by name; versions ascending within a scope."""
    found: list[Migration] = []
    for scope in sorted(scopes, key=lambda name: (name != "host", name)):
        files = [f for f in scopes[scope].iterdir() if f.name.endswith(".sql")]
        for path in sorted(files, key=lambda f: f.name):
            match = _NAME.match(path.name)
            if not match:
                raise UserError(f"migration file {path} is misnamed", "name it NNNN_snake_case.sql")
            found.append(Migration(scope, int(match[1]), match[2], path.read_text()))
    seen: set[tuple[str, int]] = set()
    for m in found:
        if (m.scope, m.version) in seen:
            raise UserError(
                f"two migrations share version {m.version:04d} in scope {m.scope}", "renumber one of them"
            )
        seen.add((m.scope, m.version))
    return found


@contextlib.asynccontextmanager
async def _locked(conn: asyncpg.Connection) -> AsyncIterator[None]:
    """Hold the migration lock every host takes (one migrates at a time)."""
    await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
    try:
        yield
    finally:
        await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)


async def apply(conn: asyncpg.Connection, migrations: list[Migration]) -> list[str]:
    """Apply the pending migrations (all as this connection's user); returns the labels applied by this call."""
    async with _locked(conn):
        return await _apply(conn, migrations, {})


async def migrate(conn: asyncpg.Connection, specs: Mapping[str, ModuleSpec]) -> tuple[list[str], Isolation]:
    """What a host does at start: every module's role (host/roles.py), then the pending migrations, a
    module's run as its role (so it owns what they create), then the grants on what they made."""
    async with _locked(conn):
        isolation = await roles.prepare(conn, [name for name in specs if name != "host"])
        applied = await _apply(conn, discover(sources(specs)), isolation.roles)
        await roles.grant(conn, isolation)
    return applied, isolation


async def _apply(
    conn: asyncpg.Connection, migrations: list[Migration], as_role: Mapping[str, str]
) -> list[str]:
    """Apply the pending ones under the lock; a scope in `as_role` runs as that role."""
    import asyncpg

    applied_now: list[str] = []
    await conn.execute(
        """CREATE TABLE IF NOT EXISTS public.feedeater_migrations (
               scope text NOT NULL, version integer NOT NULL, name text NOT NULL,
               checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
               PRIMARY KEY (scope, version))"""
    )
    rows = await conn.fetch("SELECT scope, version, checksum FROM public.feedeater_migrations")
    done = {(r["scope"], r["version"]): r["checksum"] for r in rows}
    for m in migrations:
        recorded = done.get((m.scope, m.version))
        if recorded is not None:
            if recorded != m.checksum:
                raise UserError(
                    f"migration {m.label} was changed after it was applied (checksum differs)",
                    "restore the original file and add a new migration for the change",
                )
            continue
        try:
            async with conn.transaction():
                if m.scope in as_role:
                    await roles.set_role(conn, as_role[m.scope])
                    await conn.execute(m.sql)
                    await conn.execute("RESET ROLE")
                else:
                    await conn.execute(m.sql)
                await conn.execute(
                    "INSERT INTO public.feedeater_migrations (scope, version, name, checksum) VALUES ($1, $2, $3, $4)",
                    m.scope,
                    m.version,
                    m.name,
                    m.checksum,
                )
        except asyncpg.PostgresError as exc:
            hint = (
                f" (run as role {as_role[m.scope]}: a module's migrations touch only its own schemas)"
                if m.scope in as_role
                else ""
            )
            raise UserError(
                f"migration {m.label} failed: {exc}{hint}", "fix the SQL; nothing of it was applied"
            ) from None
        applied_now.append(m.label)
    return applied_now
