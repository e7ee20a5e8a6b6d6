"""Least privilege: each module's database work runs as its own PostgreSQL role.

`feedeater_mod_<name>` owns the module's schemas (`mod_<name>`, and `<name>_public` for its public views),
runs its migrations and is what `ctx.pool`'s connections act as (`SET ROLE` when they connect). It can
read every module's `*_public` views and call the host's write functions (migrations/host/0033: events,
contexts, processed ids, job runs: each checked to be the caller's own), and nothing else of the host:
not `host.api_tokens`, not `host.settings`, no direct write to `host.outbox`.

Threat model: module code runs in the host's process, so this guards against a module's mistakes and
against SQL injection through a module's queries reaching host tables or other modules' data; it does
not stop malicious Python (which could `RESET ROLE`, or read the host's password file).

The roles are cluster-wide (PostgreSQL roles are), so every database of a cluster shares them. The
bundled PostgreSQL creates them at migrate; on an external database whose user may not create roles the
host runs without them (one warning) until an administrator runs `feedeater db roles --print-sql`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from host.errors import UserError

if TYPE_CHECKING:
    import asyncpg

log = logging.getLogger("feedeater.roles")

PREFIX = "feedeater_mod_"
GROUP = "feedeater_modules"  # every module role is a member: the grants they all share
_HOST_FUNCTIONS = (  # migrations/host/0033: what a module may write of the host's, through checks
    "host.enqueue_events(uuid[], text[], bytea[], uuid[], text[], text[], timestamptz[])",
    "host.mark_processed(text, text[])",
    "host.put_context(text, text, text, text, jsonb, vector, jsonb, uuid, timestamptz)",
    "host.job_run_start(text, text, text, text)",
    "host.job_run_record(bigint, text, text, jsonb)",
)
_HOST_READABLE = ("host.contexts", "host.context_messages")  # public data: the API serves it to read tokens


def role_name(module: str) -> str:
    return PREFIX + module


def schemas(module: str) -> tuple[str, str]:
    """The schemas a module owns: its private one and the one holding its public views."""
    return f"mod_{module}", f"{module}_public"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _once(statement: str) -> str:
    """A role statement that may race another database of the cluster doing the same: done is done."""
    return f"DO $$ BEGIN {statement}; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;"


def setup_sql(modules: Iterable[str], *, host_user: str, database: str) -> str:
    """The roles, their memberships and their right to create their schemas (pure): what the host runs
    at migrate when it may, and what `feedeater db roles --print-sql` prints for an administrator.
    Idempotent."""
    lines = [
        '-- feedeater module roles (docs/modules.md, "Least privilege"); run as a superuser or a role with',
        "-- CREATEROLE, connected to the feedeater database; safe to run again after installing a module.",
        _once(f"CREATE ROLE {GROUP} NOLOGIN"),
    ]
    for module in sorted(modules):
        role = _ident(role_name(module))
        lines += [
            f"-- module {module}",
            _once(f"CREATE ROLE {role} NOLOGIN"),
            _once(f"GRANT {GROUP} TO {role}"),
            _once(f"GRANT {role} TO {_ident(host_user)}"),  # the host sets it on the module's connections
            f"GRANT CREATE ON DATABASE {_ident(database)} TO {role};",  # its migrations create its schemas
        ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Isolation:
    """Which modules run under their own role (module → role), and why the others do not."""

    roles: Mapping[str, str] = field(default_factory=dict)
    warning: str | None = None


async def prepare(conn: asyncpg.Connection, modules: Iterable[str]) -> Isolation:
    """Create the roles when this database user may (else find those an administrator created), and
    hand each module's existing schemas to its role. Runs under the migration lock."""
    import asyncpg

    wanted = sorted(set(modules))
    me = await conn.fetchrow(
        """SELECT current_user AS name, current_database() AS db, rolsuper OR rolcreaterole AS may_create
           FROM pg_roles WHERE rolname = current_user"""
    )
    problem = None
    if me["may_create"]:
        try:
            async with conn.transaction():
                await conn.execute(setup_sql(wanted, host_user=me["name"], database=me["db"]))
        except asyncpg.PostgresError as exc:
            problem = f"could not create them: {exc}"
    ready = await conn.fetch(
        """SELECT m FROM unnest($1::text[]) AS m
           WHERE CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2 || m)
                      THEN pg_has_role(current_user, $2 || m, 'MEMBER') ELSE false END""",
        wanted,
        PREFIX,
    )
    roles = {r["m"]: role_name(r["m"]) for r in ready}
    for module, role in roles.items():
        await _adopt(conn, module, role)
    missing = [m for m in wanted if m not in roles]
    if not missing:
        return Isolation(roles)
    why = problem or f"database user {me['name']} may not create roles"
    return Isolation(
        roles,
        f"modules {', '.join(missing)} use the host's database rights, not their own role ({why}); "
        "have an administrator run the SQL of `feedeater db roles --print-sql`, then restart",
    )


async def _adopt(conn: asyncpg.Connection, module: str, role: str) -> None:
    """Make `role` the owner of the module's schemas and everything in them (a database made before
    roles, or objects a migration run by the host created)."""
    await conn.execute(
        f"""DO $adopt$
        DECLARE
            r record;
            owner oid := {_literal(role)}::regrole;
            names text[] := ARRAY[{", ".join(_literal(s) for s in schemas(module))}];
        BEGIN
            FOR r IN SELECT nspname FROM pg_namespace WHERE nspname = ANY (names) AND nspowner <> owner LOOP
                EXECUTE format('ALTER SCHEMA %I OWNER TO %I', r.nspname, {_literal(role)});
            END LOOP;
            FOR r IN SELECT c.oid::regclass AS obj, c.relkind FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE n.nspname = ANY (names) AND c.relowner <> owner AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
                       AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                       AND d.objid = c.oid AND d.deptype IN ('a', 'i')) LOOP
                EXECUTE format('ALTER %s %s OWNER TO %I',
                    CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                   WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
                    r.obj, {_literal(role)});
            END LOOP;
            FOR r IN SELECT p.oid::regprocedure AS obj FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = ANY (names) AND p.proowner <> owner LOOP
                EXECUTE format('ALTER ROUTINE %s OWNER TO %I', r.obj, {_literal(role)});
            END LOOP;
            FOR r IN SELECT t.oid::regtype AS obj, t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                     WHERE n.nspname = ANY (names) AND t.typowner <> owner AND t.typtype IN ('e', 'd', 'r')
                        OR n.nspname = ANY (names) AND t.typowner <> owner AND t.typtype = 'c'
                           AND (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c' LOOP
                EXECUTE format('ALTER %s %s OWNER TO %I', CASE r.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
                               r.obj, {_literal(role)});
            END LOOP;
        END $adopt$"""
    )


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


async def grant(conn: asyncpg.Connection, isolation: Isolation) -> None:
    """After the migrations: what every module role may use of the host's, and every module's public
    views (granted by their owner, as `<name>_public` schemas appear with a module's migrations)."""
    if not isolation.roles:
        return
    await conn.execute(
        f"""GRANT USAGE ON SCHEMA host TO {GROUP};
            GRANT EXECUTE ON FUNCTION {", ".join(_HOST_FUNCTIONS)} TO {GROUP};
            GRANT SELECT ON {", ".join(_HOST_READABLE)} TO {GROUP};"""
    )
    for module, role in sorted(isolation.roles.items()):
        public = schemas(module)[1]
        if await conn.fetchval("SELECT to_regnamespace($1) IS NOT NULL", public):
            async with conn.transaction():
                await conn.execute(f"SET LOCAL ROLE {_ident(role)}")
                await conn.execute(
                    f"""GRANT USAGE ON SCHEMA {_ident(public)} TO {GROUP};
                        GRANT SELECT ON ALL TABLES IN SCHEMA {_ident(public)} TO {GROUP}"""
                )


async def set_role(conn: asyncpg.Connection, role: str) -> None:
    """A module pool's connection acts as the module from now on (asyncpg's reset on release keeps it:
    `RESET ALL` leaves the role alone)."""
    await conn.execute(f"SET ROLE {_ident(role)}")


@contextlib.asynccontextmanager
async def acting_as(conn: asyncpg.Connection, module: str | None) -> AsyncIterator[None]:
    """Run a block on `conn` with the rights of `module` (None: the host), inside the caller's
    transaction: for a module's public API called from another module's transaction (discord's `/feed
    add` subscribes through rss). On a connection that is no module's (the host's, the CLI's) it changes
    nothing. The role goes back at the end; an error rolls the block's savepoint back, and the role with it."""
    before: str = await conn.fetchval("SELECT current_setting('role')")
    if before == "none":
        yield
        return
    if not before.startswith(PREFIX):
        raise UserError(f"connection acts as unexpected role {before}", "use a pool from the host")
    target = "NONE" if module is None else _ident(role_name(module))
    async with conn.transaction():
        await conn.execute(f"SET LOCAL ROLE {target}")
        yield
        await conn.execute(f"SET LOCAL ROLE {_ident(before)}")
