"""`feedeater`: the single command-line entry point. Every listing takes --json.

User errors print one line (what, and how to fix) and exit 2; no tracebacks.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from host import contexts, logs, module, outbox, settings
from host.config import HostConfig
from host.errors import UserError
from host.runtime import Host
from host.services import Services

Handler = Callable[[Host, argparse.Namespace], Awaitable[int]]


def emit(args: argparse.Namespace, data: Any, text: Callable[[Any], str]) -> None:
    """Print `data` as JSON with --json, else as human text."""
    if getattr(args, "json", False):
        print(json.dumps(data, default=_json_default, indent=2, ensure_ascii=False))
    else:
        out = text(data)
        if out:
            print(out)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [list(map(str, header))] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


# -- commands ------------------------------------------------------------------------------------
async def cmd_services(host: Host, args: argparse.Namespace) -> int:
    svc = Services(host.config.home)
    if args.action == "up":
        ep = await asyncio.to_thread(
            svc.up, database_url=host.config.database_url, nats_url=host.config.nats_url
        )
        emit(
            args,
            {"database_url": ep.database_url, "nats_url": ep.nats_url},
            lambda d: f"postgres: {d['database_url']}\nnats:     {d['nats_url']}",
        )
    elif args.action == "down":
        await asyncio.to_thread(svc.down)
        emit(args, {"stopped": True}, lambda _d: "embedded services stopped")
    else:
        data = [s.as_dict() for s in svc.status()]
        emit(
            args,
            data,
            lambda d: table(
                [(s["name"], "running" if s["running"] else "stopped", s["url"], s["data_dir"]) for s in d],
                ["service", "state", "url", "data"],
            ),
        )
    return 0


async def cmd_migrate(host: Host, args: argparse.Namespace) -> int:
    await host.open(with_bus=False)
    emit(args, {"ok": True}, lambda _d: "migrations are up to date")
    return 0


RESTART_NOTE = "running hosts read this at start: restart them (`feedeater run`) to apply it"


async def cmd_run(host: Host, args: argparse.Namespace) -> int:
    # PostgreSQL is waited for (bounded); NATS is attached in the background by host.run.
    await host.open(connect_bus=False, wait_for_db=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await host.run(stop)
    return 0


async def cmd_status(host: Host, args: argparse.Namespace) -> int:
    await host.open(with_bus=False)
    pool = host.require_pool()
    async with pool.acquire() as conn:
        ob = await outbox.status(conn)
        runs = await conn.fetch(
            """SELECT DISTINCT ON (module, job) module, job, status, started_at, finished_at, error
               FROM host.job_runs ORDER BY module, job, started_at DESC"""
        )
        units = await conn.fetch(
            """SELECT host_id, module, name, kind, state, restarts, last_error, pending, updated_at,
                      updated_at > now() - interval '1 minute' AS live
               FROM host.service_state ORDER BY module, name, host_id"""
        )
    mods = [
        {"name": n, "enabled": await host.enabled(n), "version": s.manifest.version}
        for n, s in sorted(host.specs.items())
    ]
    data = {
        "services": [s.as_dict() for s in host.services.status()],
        "modules": mods,
        "outbox": {
            "pending": ob.pending,
            "lag_seconds": ob.lag_seconds,
            "oldest_pending_at": ob.oldest_pending_at,
        },
        "last_runs": [dict(r) for r in runs],
        "units": [dict(r) for r in units],
    }

    def text(d: dict[str, Any]) -> str:
        lines = [f"outbox: {d['outbox']['pending']} pending, lag {d['outbox']['lag_seconds']:.1f}s"]
        lines.append(
            "modules: "
            + ", ".join(f"{m['name']} ({'enabled' if m['enabled'] else 'disabled'})" for m in d["modules"])
        )
        lines += [
            f"job {r['module']}.{r['job']}: {r['status']} at {r['started_at']:%Y-%m-%d %H:%M:%S}"
            + (f" — {r['error']}" if r["error"] else "")
            for r in d["last_runs"]
        ]
        lines += [
            f"{u['kind']} {u['module']}.{u['name']} on {u['host_id']}: "
            + (u["state"] if u["live"] else f"host silent since {u['updated_at']:%Y-%m-%d %H:%M:%S}")
            + (f", lag {u['pending']}" if u["pending"] is not None else "")
            + (f", {u['restarts']} restarts, last error: {u['last_error']}" if u["restarts"] else "")
            for u in d["units"]
        ]
        return "\n".join(lines)

    emit(args, data, text)
    return 0


async def cmd_modules(host: Host, args: argparse.Namespace) -> int:
    await host.open(with_bus=False)
    if args.action in ("enable", "disable"):
        await host.set_enabled(args.name, args.action == "enable")
        emit(
            args,
            {"name": args.name, "enabled": args.action == "enable", "restart_required": True},
            lambda d: f"module {d['name']} {'enabled' if d['enabled'] else 'disabled'}; {RESTART_NOTE}",
        )
        return 0
    rows = [
        {
            "name": n,
            "version": s.manifest.version,
            "enabled": await host.enabled(n),
            "description": s.manifest.description,
            "jobs": [f"{j.name} ({host.trigger_for(n, j)})" for j in s.manifest.jobs],
            "services": [sv.name for sv in s.manifest.services],
            "subscriptions": [f"{sb.name} ({sb.subject})" for sb in s.manifest.subscriptions],
            "events": list(s.manifest.events),
        }
        for n, s in sorted(host.specs.items())
    ]
    emit(
        args,
        rows,
        lambda d: table(
            [(r["name"], r["version"], "yes" if r["enabled"] else "no", ", ".join(r["jobs"])) for r in d],
            ["module", "version", "enabled", "jobs"],
        ),
    )
    return 0


async def cmd_settings(host: Host, args: argparse.Namespace) -> int:
    name, _, key = args.target.partition(".")
    spec = module.get(host.specs, name)
    await host.open(with_bus=False)
    if args.action == "set":
        if not key or args.value is None:
            raise UserError("usage: feedeater settings set <module>.<key> <value>")
        async with host.require_pool().acquire() as conn:
            stored = await settings.store(conn, spec.manifest, key, args.value)
        setting = spec.manifest.setting(key)
        emit(
            args,
            {
                "module": name,
                "key": key,
                "value": None if setting.secret else stored,
                "restart_required": True,
            },
            lambda _d: f"{name}.{key} = {settings.display(setting, stored)}; {RESTART_NOTE}",
        )
        return 0
    resolved = await host.resolved_settings(name)
    wanted = [spec.manifest.setting(key)] if key else list(spec.manifest.settings)
    rows = [
        {
            "key": s.key,
            "type": s.type,
            "value": None if s.secret else resolved[s.key],
            "secret": s.secret,
            "description": s.description,
        }
        for s in wanted
    ]
    emit(
        args,
        rows,
        lambda d: table(
            [
                (
                    f"{name}.{r['key']}",
                    settings.display(spec.manifest.setting(r["key"]), resolved[r["key"]]),
                    r["description"],
                )
                for r in d
            ],
            ["setting", "value", "description"],
        ),
    )
    return 0


async def cmd_jobs(host: Host, args: argparse.Namespace) -> int:
    if args.action == "run":
        if not args.job:
            raise UserError("usage: feedeater jobs run <module>.<job>")
        await host.open()
        result = await host.run_job_once(args.job)
        # Events written by the job leave through the outbox; flush them before exiting.
        if host.js is not None:
            await outbox.Relay(host.require_pool(), host.js).drain_all()
        data = {
            "job": args.job,
            "status": result.status,
            "error": result.error,
            "seconds": round(result.seconds, 3),
            "metrics": dict(result.metrics),
        }
        emit(
            args,
            data,
            lambda d: "\n".join(
                [f"{d['job']}: {d['status']} in {d['seconds']}s" + (f" — {d['error']}" if d["error"] else "")]
                + [f"  {k}: {v}" for k, v in d["metrics"].items()]
            ),
        )
        return 0 if result.status == "ok" else 1
    await host.open(with_bus=False)
    rows = []
    for n, s in sorted(host.specs.items()):
        enabled = await host.enabled(n)
        for j in s.manifest.jobs:
            last = await host.require_pool().fetchrow(
                "SELECT status, started_at FROM host.job_runs WHERE module = $1 AND job = $2 ORDER BY started_at DESC LIMIT 1",
                n,
                j.name,
            )
            rows.append(
                {
                    "job": f"{n}.{j.name}",
                    "trigger": host.trigger_for(n, j),
                    "enabled": enabled,
                    "last_status": last and last["status"],
                    "last_run": last and last["started_at"],
                }
            )
    emit(
        args,
        rows,
        lambda d: table(
            [
                (
                    r["job"],
                    r["trigger"],
                    "yes" if r["enabled"] else "no",
                    r["last_status"] or "-",
                    r["last_run"] or "-",
                )
                for r in d
            ],
            ["job", "trigger", "enabled", "last", "at"],
        ),
    )
    return 0


async def cmd_bus_tail(host: Host, args: argparse.Namespace) -> int:
    from host import bus

    url = host.config.nats_url or await asyncio.to_thread(host.services.nats.start)
    nc = await bus.connect(str(url))
    seen = 0
    done = asyncio.Event()

    async def on_msg(msg: Any) -> None:
        nonlocal seen
        try:
            body: Any = json.loads(msg.data)
        except ValueError:
            body = msg.data.decode(errors="replace")
        print(json.dumps({"subject": msg.subject, "data": body}, ensure_ascii=False), flush=True)
        seen += 1
        if args.count and seen >= args.count:
            done.set()

    await nc.subscribe(args.subject, cb=on_msg)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await done.wait()
    await nc.drain()
    return 0


async def cmd_contexts(host: Host, args: argparse.Namespace) -> int:
    await host.open(with_bus=False)
    async with host.require_pool().acquire() as conn:
        if args.action == "show":
            if not args.key:
                raise UserError("usage: feedeater contexts show <module>:<sourceKey>, e.g. rss:feed:12")
            owner, _, source_key = args.key.partition(":")
            ctx = await contexts.get(conn, owner, source_key)
            if ctx is None:
                raise UserError(f"no context {args.key!r}", "list them with `feedeater contexts list`")
            ctx["messages"] = await contexts.messages(conn, owner, source_key)
            emit(
                args,
                ctx,
                lambda c: "\n".join(
                    [
                        f"{c['owner_module']}:{c['source_key']} v{c['version']} updated {c['updated_at']}",
                        c["summary_short"],
                        "",
                        c["summary_long"],
                        *[f"- {p}" for p in c["key_points"]],
                        f"({c['message_count']} messages)",
                    ]
                ),
            )
            return 0
        rows = await contexts.list_all(conn, args.module)
    emit(
        args,
        rows,
        lambda d: table(
            [
                (f"{r['owner_module']}:{r['source_key']}", r["version"], r["updated_at"], r["summary_short"])
                for r in d
            ],
            ["context", "v", "updated", "summary"],
        ),
    )
    return 0


# -- parser --------------------------------------------------------------------------------------
def build_parser(specs: dict[str, module.ModuleSpec]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="feedeater", description="A plugin host that eats many sources into one message bus."
    )
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, handler: Handler, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(handler=handler)
        return p

    p = add("services", cmd_services, "start, stop or show the embedded PostgreSQL and NATS")
    p.add_argument("action", choices=["up", "down", "status"])
    add("migrate", cmd_migrate, "apply pending database migrations")
    add("run", cmd_run, "run the host: scheduler, outbox relay, /healthz and /metrics")
    add("status", cmd_status, "services, modules, outbox lag and last job runs")
    p = add("modules", cmd_modules, "list, enable or disable modules")
    p.add_argument("action", choices=["list", "enable", "disable"])
    p.add_argument("name", nargs="?")
    p = add("settings", cmd_settings, "read or change module settings")
    p.add_argument("action", choices=["get", "set"])
    p.add_argument("target", help="<module> or <module>.<key>")
    p.add_argument("value", nargs="?")
    p = add("jobs", cmd_jobs, "list jobs, or run one now in the foreground")
    p.add_argument("action", choices=["list", "run"])
    p.add_argument("job", nargs="?", help="<module>.<job>, e.g. rss.poll")
    p = add("bus", cmd_bus_tail, "print live events from the bus")
    p.add_argument("action", choices=["tail"])
    p.add_argument("subject", nargs="?", default="feedeater.>")
    p.add_argument("--count", type=int, default=0, help="stop after N events")
    p = add("contexts", cmd_contexts, "list contexts or show one")
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("key", nargs="?", help="<module>:<sourceKey>, e.g. rss:feed:12")
    p.add_argument("--module", default=None)
    for spec in specs.values():
        if spec.cli is not None:
            spec.cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        host = Host(HostConfig.from_env())
        parser = build_parser(host.specs)
        args = parser.parse_args(argv)
        if args.command == "modules" and args.action in ("enable", "disable") and not args.name:
            parser.error(f"modules {args.action} needs a module name")
        # One-shot commands stay quiet unless asked; `run` logs at INFO.
        logs.setup(
            args.log_level
            or os.environ.get("FEEDEATER_LOG_LEVEL")
            or ("INFO" if args.command == "run" else "WARNING")
        )
        return asyncio.run(_run(host, args))
    except UserError as exc:
        print(f"feedeater: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


async def _run(host: Host, args: argparse.Namespace) -> int:
    try:
        handler: Handler = args.handler
        return await handler(host, args)
    finally:
        with contextlib.suppress(Exception):
            await host.close(stop_started_services=args.command == "run")


if __name__ == "__main__":
    sys.exit(main())
