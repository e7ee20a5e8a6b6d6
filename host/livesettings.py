"""Settings changed while hosts run: applied within seconds, or named as needing a restart.

Every write to host.settings notifies channel `feedeater_settings` (a trigger, migration host/0008). Each
`feedeater run` listens on a connection of its own, re-resolves the module's settings and applies them:
`live` keys at once (ModuleContext.settings is replaced; the module's `reconfigure` rebuilds what it made
from them), `services` keys by restarting the module's services, `restart` keys never in this process:
the host lists them in host.hosts, which `settings set`, `status`, /healthz and the console read. A host
whose environment sets a key keeps the environment's value (env wins), and says so.

The decisions (what changed, how it applies, what a `settings set` reports per host) are pure; the
listener and the host.hosts rows are the I/O around them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import asyncpg

from host.module import Manifest, ModuleSpec
from host.settings import env_key

log = logging.getLogger("feedeater.settings")

CHANNEL = "feedeater_settings"
HEARTBEAT_S = 5.0  # how often a running host refreshes its host.hosts row
LIVE_WITHIN_S = 60  # a row refreshed within this belongs to a running host
CONFIRM_TIMEOUT_S = 15.0  # how long `settings set` waits for running hosts to confirm a change


# -- decisions (pure) --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Plan:
    """What a running module does with freshly resolved settings."""

    values: dict[str, Any]  # its new settings: the new values, except `restart` keys keep the running ones
    live: frozenset[str]  # changed keys applied now
    services: frozenset[str]  # changed keys its services apply when restarted (now)
    restart: frozenset[str]  # keys whose stored value differs from what this process runs with


def plan(manifest: Manifest, running: Mapping[str, Any], resolved: Mapping[str, Any]) -> Plan:
    changed = {s.key: s.applies for s in manifest.settings if running.get(s.key) != resolved.get(s.key)}
    values = {
        s.key: running[s.key] if s.applies == "restart" and s.key in running else resolved[s.key]
        for s in manifest.settings
    }
    return Plan(
        values,
        frozenset(k for k, how in changed.items() if how == "live"),
        frozenset(k for k, how in changed.items() if how == "services"),
        frozenset(k for k, how in changed.items() if how == "restart"),
    )


def env_overrides(specs: Mapping[str, ModuleSpec], env: Mapping[str, str]) -> list[str]:
    """`module.key` of every setting the environment sets: stored values never reach that host."""
    return sorted(
        f"{name}.{s.key}"
        for name, spec in specs.items()
        for s in spec.manifest.settings
        if env_key(name, s.key) in env
    )


HostVerdict = Literal["applied", "restart", "environment", "refused", "unconfirmed"]


@dataclass(frozen=True, slots=True)
class HostReport:
    host_id: str
    verdict: HostVerdict
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"host_id": self.host_id, "verdict": self.verdict, "detail": self.detail}


def verdict(row: Mapping[str, Any], qualified: str, changed_at: datetime) -> HostReport:
    """How one running host stands with the change of `qualified` ("rss.timeout_seconds") made at
    `changed_at` (the database's clock), from its host.hosts row."""
    host_id = str(row["host_id"])
    if qualified in row["env_overrides"]:
        module, _, key = qualified.partition(".")
        return HostReport(host_id, "environment", env_key(module, key))
    if row["settings_at"] is None or row["settings_at"] < changed_at:
        return HostReport(host_id, "unconfirmed")
    if row["settings_error"] and row["settings_error"].startswith(f"bad value for {qualified}"):
        return HostReport(host_id, "refused", str(row["settings_error"]))
    if qualified in row["restart_needed"]:
        return HostReport(host_id, "restart")
    return HostReport(host_id, "applied")


def describe(reports: Sequence[HostReport]) -> str:
    """One sentence on where a change stands across the running hosts."""
    if not reports:
        return "no host is running: `feedeater run` applies it when it starts"
    by: dict[str, list[HostReport]] = {}
    for r in reports:
        by.setdefault(r.verdict, []).append(r)
    parts = []
    if applied := by.get("applied"):
        parts.append(f"applied by {_hosts(applied)}")
    if restart := by.get("restart"):
        parts.append(f"{_hosts(restart)} must restart to apply it (stop and start `feedeater run`)")
    for r in by.get("environment", []):
        parts.append(f"host {r.host_id} keeps {r.detail} from its environment (unset it there)")
    for r in by.get("refused", []):
        parts.append(f"host {r.host_id} refused it: {r.detail}")
    if late := by.get("unconfirmed"):
        parts.append(f"{_hosts(late)} did not confirm within {CONFIRM_TIMEOUT_S:.0f} s (busy or stopping?)")
    return "; ".join(parts)


def _hosts(reports: Sequence[HostReport]) -> str:
    ids = [r.host_id for r in reports]
    return ("host " if len(ids) == 1 else "hosts ") + ", ".join(ids)


# -- host.hosts ----------------------------------------------------------------------------------
async def save_host(
    pool: asyncpg.Pool,
    host_id: str,
    *,
    started_at: datetime,
    restart_needed: Sequence[str],
    env_overrides: Sequence[str],
    settings_error: str | None,
    settings_read_at: datetime | None = None,
) -> None:
    """This host's row. `settings_read_at`: when it began re-reading the stored settings (the database's
    clock, taken before the read); a change whose transaction started before then (`settings set` keeps
    its start) was committed when the notification that caused the read was sent: confirmed as seen."""
    await pool.execute(
        """INSERT INTO host.hosts (host_id, started_at, settings_at, restart_needed, env_overrides,
                                   settings_error)
           VALUES ($1, $2, $6, $3, $4, $5)
           ON CONFLICT (host_id) DO UPDATE SET seen_at = now(), restart_needed = EXCLUDED.restart_needed,
               env_overrides = EXCLUDED.env_overrides, settings_error = EXCLUDED.settings_error,
               settings_at = COALESCE(EXCLUDED.settings_at, host.hosts.settings_at)""",
        host_id,
        started_at,
        list(restart_needed),
        list(env_overrides),
        settings_error,
        settings_read_at,
    )


async def forget_host(pool: asyncpg.Pool, host_id: str) -> None:
    """A host that stops cleanly leaves no rows behind (else every restart added a stopped copy)."""
    with contextlib.suppress(asyncpg.PostgresError, OSError, asyncpg.InterfaceError):
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute("DELETE FROM host.hosts WHERE host_id = $1", host_id)
            await conn.execute("DELETE FROM host.service_state WHERE host_id = $1", host_id)


async def running_hosts(conn: asyncpg.Connection | asyncpg.Pool) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        f"""SELECT host_id, started_at, seen_at, settings_at, restart_needed, env_overrides, settings_error
            FROM host.hosts WHERE seen_at > now() - interval '{LIVE_WITHIN_S} seconds' ORDER BY host_id"""
    )
    return [dict(r) for r in rows]


async def confirm(
    pool: asyncpg.Pool, qualified: str, changed_at: datetime, *, timeout: float = CONFIRM_TIMEOUT_S
) -> list[HostReport]:
    """Wait (bounded) until every running host has re-read the settings since `changed_at`; then each
    host's verdict on `qualified`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        async with pool.acquire() as conn:
            rows = await running_hosts(conn)
        reports = [verdict(r, qualified, changed_at) for r in rows]
        if all(r.verdict != "unconfirmed" for r in reports) or loop.time() >= deadline:
            return reports
        await asyncio.sleep(0.2)


# -- the listener --------------------------------------------------------------------------------
async def listen(
    url: str,
    on_change: Callable[[str | None], Awaitable[None]],
    heartbeat: Callable[[], Awaitable[None]],
) -> None:
    """Until cancelled: `on_change(None)` once connected (changes may have been missed meanwhile), then
    `on_change(module)` per notification and `heartbeat()` every HEARTBEAT_S. Raises when the connection
    is lost, so the supervisor reconnects with backoff."""
    from host import db

    lost = object()
    queue: asyncio.Queue[object] = asyncio.Queue()
    conn = await db.connect(url)
    try:
        await conn.add_listener(CHANNEL, lambda _c, _pid, _ch, payload: queue.put_nowait(payload))
        conn.add_termination_listener(lambda _c: queue.put_nowait(lost))
        await on_change(None)
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), HEARTBEAT_S)
            except TimeoutError:
                await heartbeat()
                continue
            names = {item}
            while not queue.empty():  # a burst of changes (a console form saves many keys): once each
                names.add(queue.get_nowait())
            if lost in names:
                raise ConnectionError("the settings listener lost its database connection")
            for name in sorted(str(n) for n in names):
                await on_change(name)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.close(), 5)
