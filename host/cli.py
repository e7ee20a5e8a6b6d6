"""`feedeater`: the single command-line entry point. Every listing takes --json.

User errors print one line (what, and how to fix) and exit 2; no tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from host import logs, module, progress, textfmt
from host.config import HostConfig
from host.errors import UserError

if TYPE_CHECKING:  # imported when a command runs: `feedeater --help` must not load the database and bus
    from host.runtime import Host

Handler = Callable[["Host", argparse.Namespace], Awaitable[int]]


def emit(args: argparse.Namespace, data: Any, text: Callable[[Any], str]) -> None:
    """Print `data` as JSON with --json, else as human text."""
    if getattr(args, "json", False):
        print(json.dumps(data, default=_json_default, indent=2, ensure_ascii=False))
    else:
        out = text(data)
        if out:
            print(out)


def _json_default(value: Any) -> Any:
    """Dates and times in ISO 8601, database rows (asyncpg Records) as objects, anything else as text."""
    if isinstance(value, date):  # datetime too
        return value.isoformat()
    if hasattr(value, "items"):  # asyncpg.Record and other mappings
        return dict(value.items())
    return str(value)


def table(
    rows: Sequence[Sequence[Any]],
    header: Sequence[str],
    *,
    limits: Mapping[int, int] | None = None,
    whole: Collection[int] = (),
) -> str:
    """Aligned columns that fit the terminal; long cells end in "…" (--json has them whole, and so has
    text off a terminal); `whole` columns (URLs) are never cut."""
    return textfmt.table(rows, header, limits=limits, whole=whole)


def where(host: Host) -> str:
    """Where this command read its data, for the text of an empty result: an empty second instance (another
    FEEDEATER_HOME, another database) must never look like an empty first one."""
    if host.config.database_url:
        return f"the database at {_redacted(host.config.database_url)}"
    return f"{host.config.home} (the data directory; FEEDEATER_HOME chooses another)"


def nothing(host: Host, what: str, hint: str) -> str:
    """`no feeds in <where>; <hint>`: the line an empty listing prints."""
    return f"{what} in {where(host)}; {hint}"


# -- commands ------------------------------------------------------------------------------------
async def cmd_services(host: Host, args: argparse.Namespace) -> int:
    import asyncio

    from host.services import Services

    svc = Services(host.config.home)
    if args.action == "up":
        ep = await asyncio.to_thread(
            svc.up, database_url=host.config.database_url, nats_url=host.config.nats_url
        )
        emit(
            args,
            {"database_url": _redacted(ep.database_url), "nats_url": _redacted(ep.nats_url)},
            lambda d: f"postgres: {d['database_url']}\nnats:     {d['nats_url']}",
        )
    elif args.action == "down":
        await asyncio.to_thread(svc.down)
        emit(args, {"stopped": True}, lambda _d: "embedded services stopped")
    else:
        data = [{**s.as_dict(), "url": _redacted(s.url)} for s in svc.status()]
        emit(
            args,
            data,
            lambda d: table(
                [(s["name"], "running" if s["running"] else "stopped", s["url"], s["data_dir"]) for s in d],
                ["service", "state", "url", "data"],
                whole=(2, 3),
            ),
        )
    return 0


async def cmd_migrate(host: Host, args: argparse.Namespace) -> int:
    await host.open(with_bus=False)
    emit(
        args,
        {"ok": True, "applied": host.applied_migrations},
        lambda d: (
            f"applied {len(d['applied'])} migrations: {', '.join(d['applied'])}"
            if d["applied"]
            else "migrations are up to date"
        ),
    )
    return 0


async def cmd_db(host: Host, args: argparse.Namespace) -> int:
    """`db roles`: which module acts as its own database role; `--print-sql`: the script that creates
    the roles, for an administrator of an external database (host/roles.py)."""
    from urllib.parse import unquote, urlsplit

    from host import roles
    from host.services import PG_DATABASE

    modules = sorted(n for n in host.specs if n != "host")
    if args.print_sql:
        url = urlsplit(host.config.database_url or f"postgresql://postgres@localhost/{PG_DATABASE}")
        user = unquote(url.username or os.environ.get("PGUSER") or os.environ.get("USER", "postgres"))
        print(roles.setup_sql(modules, host_user=user, database=url.path.lstrip("/") or user), end="")
        return 0
    await host.open(with_bus=False)
    rows = [
        {"module": name, "role": roles.role_name(name), "own_role": name in host.isolation.roles}
        for name in modules
    ]
    emit(
        args,
        {"modules": rows, "warning": host.isolation.warning},
        lambda d: "\n".join(
            [
                table(
                    [
                        (r["module"], r["role"], "yes" if r["own_role"] else "no: the host's rights")
                        for r in d["modules"]
                    ],
                    ["module", "role", "own role"],
                ),
                *([f"warning: {d['warning']}"] if d["warning"] else []),
            ]
        ),
    )
    return 0


RESTART_NOTE = "running hosts read this at start: restart them (`feedeater run`) to apply it"


async def cmd_run(host: Host, args: argparse.Namespace) -> int:
    import asyncio

    _choose_http_port(host)
    # PostgreSQL is waited for (bounded); NATS is attached in the background by host.run.
    await host.open(connect_bus=False, wait_for_db=True)
    assert host.endpoints is not None
    # The first lines of `make run`: where everything is, before the log lines start.
    print(
        f"feedeater: data in {host.config.home}\n"
        f"  postgres: {_redacted(host.endpoints.database_url)}\n"
        f"  nats:     {_redacted(host.endpoints.nats_url)}",
        file=sys.stderr,
        flush=True,
    )

    def serving(port: int) -> None:  # the real port, also when FEEDEATER_HTTP_PORT=0 let the system pick
        base = f"http://{host.config.http_host}:{port}"
        print(f"  console:  {base}/\n  health:   {base}/healthz (and /metrics)", file=sys.stderr, flush=True)

    host.on_serving = serving
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await host.run(stop)
    return 0


def _choose_http_port(host: Host) -> None:
    """The default port taken (another feedeater, a second checkout): serve on a free one and say so.
    A port the user chose stays an error when taken."""
    import dataclasses

    from host.config import DEFAULT_HTTP_PORT
    from host.services import free_port, port_open

    explicit = host.env.get("FEEDEATER_HTTP_PORT")
    if explicit or host.config.http_port != DEFAULT_HTTP_PORT:
        return
    if not port_open(DEFAULT_HTTP_PORT, host.config.http_host):
        return
    port = free_port(host.config.http_host)
    print(
        f"feedeater: port {DEFAULT_HTTP_PORT} is in use (another feedeater?); /healthz and /metrics are on "
        f"port {port} instead (set FEEDEATER_HTTP_PORT to choose one)",
        file=sys.stderr,
        flush=True,
    )
    host.config = dataclasses.replace(host.config, http_port=port)


def _redacted(url: str | None) -> str | None:
    from host.redact import redact

    return redact(url) if url else url


async def cmd_status(host: Host, args: argparse.Namespace) -> int:
    from host import livesettings, outbox

    await host.open(with_bus=False)
    pool = host.require_pool()
    async with pool.acquire() as conn:
        ob = await outbox.status(conn)
        hosts = await livesettings.running_hosts(conn)
        units = await conn.fetch(
            """SELECT host_id, module, name, kind, state, restarts, last_error, pending, updated_at,
                      updated_at > now() - interval '1 minute' AS live
               FROM host.service_state ORDER BY module, name, host_id"""
        )
    dead = await _dead_letters(host)
    mods = [
        {"name": n, "enabled": await host.enabled(n), "version": s.manifest.version}
        for n, s in sorted(host.specs.items())
    ] + [
        {"name": n, "enabled": await host.enabled(n), "version": None, "skipped": why}
        for n, why in sorted(host.skipped.items())
    ]
    data = {
        "home": str(host.config.home),
        "services": _services(host),
        "modules": mods,
        "outbox": {
            "pending": ob.pending,
            "lag_seconds": ob.lag_seconds,
            "oldest_pending_at": ob.oldest_pending_at,
            "stalled": [dataclasses.asdict(stalled) for stalled in ob.stalled],
        },
        "dead_letters": dead,  # None: the bus was not reachable
        # Only installed modules: an uninstalled one's last runs and unit rows are history, not status.
        "last_runs": [r for r in await _last_runs(host) if r["module"] in host.specs],
        "hosts": hosts,
        "units": [dict(r) for r in units if r["module"] in host.specs],
    }
    emit(args, data, _status_text)
    return 0


async def _dead_letters(host: Host) -> int | None:
    """How many dead letters wait, if the bus answers (status never starts NATS for it)."""
    from host import bus, dlq

    url = host.config.nats_url or host.services.nats.status().url
    if not url:
        return None
    try:
        nc = await bus.connect(url, connect_timeout=2)
    except UserError:
        return None
    try:
        return await dlq.count(nc.jetstream())
    finally:
        await nc.close()


def _services(host: Host) -> list[dict[str, Any]]:
    """The embedded services, or the external ones the environment names instead."""
    external = {"postgres": host.config.database_url, "nats": host.config.nats_url}
    out = []
    for s in host.services.status():
        row = {**s.as_dict(), "url": _redacted(s.url)}
        if url := external.get(s.name):
            row.update(running=True, url=_redacted(url), data_dir=None, external=True)
        out.append(row)
    return out


async def _last_runs(host: Host) -> list[dict[str, Any]]:
    """Each job's latest run with the metrics it returned (e.g. the embed job's backlog and rate)."""
    rows = await host.require_pool().fetch(
        """SELECT DISTINCT ON (module, job) module, job, status, started_at, finished_at, error, metrics
           FROM host.job_runs ORDER BY module, job, started_at DESC"""
    )
    return [dict(r) for r in rows]


def _status_text(d: dict[str, Any]) -> str:
    lines = [f"data: {d['home']}"]
    lines += [
        f"{s['name']}: "
        + ("external" if s.get("external") else "running" if s["running"] else "stopped")
        + (f" at {s['url']}" if s["url"] else "")
        + (f" (data {s['data_dir']})" if s["data_dir"] else "")
        for s in d["services"]
    ]
    lines.append(
        f"outbox: {d['outbox']['pending']} pending, lag {textfmt.duration(d['outbox']['lag_seconds'])}"
    )
    lines += [
        f"outbox: {s['pending']} on {s['subject']} not published since {textfmt.relative(s['since'])}"
        f" ({s['attempts']} attempts): {s['error']}"
        for s in d["outbox"]["stalled"]
    ]
    if d["dead_letters"]:
        lines.append(f"dead letters: {d['dead_letters']} (`feedeater bus dlq list`)")
    lines.append(
        "modules: "
        + ", ".join(
            f"{m['name']} ({'skipped' if m.get('skipped') else 'enabled' if m['enabled'] else 'disabled'})"
            for m in d["modules"]
        )
    )
    lines += [
        f"job {r['module']}.{r['job']}: {r['status']} {textfmt.relative(r['started_at'])}"
        + (f" — {r['error']}" if r["error"] else "")
        + (f" — {summary}" if (summary := metrics_summary(r.get("metrics"))) else "")
        for r in d["last_runs"]
    ]
    lines += [
        f"host {h['host_id']}: running since {textfmt.when(h['started_at'])}"
        + (f"; must restart to apply {', '.join(h['restart_needed'])}" if h["restart_needed"] else "")
        + (f"; refused stored settings: {h['settings_error']}" if h["settings_error"] else "")
        for h in d["hosts"]
    ]
    lines += [
        f"{u['kind']} {u['module']}.{u['name']} on {u['host_id']}: "
        + (u["state"] if u["live"] else f"host silent since {textfmt.relative(u['updated_at'])}")
        + (f", lag {u['pending']}" if u["pending"] is not None else "")
        + (f", {u['restarts']} restarts, last error: {u['last_error']}" if u["restarts"] else "")
        for u in d["units"]
    ]
    return "\n".join(lines)


def metrics_summary(metrics: Mapping[str, Any] | None, limit: int = 6) -> str:
    """A job run's metrics on one line, `key value`, in the order the job returned them; a run still going
    shows its progress (`117/192 entries, 3.1/s, about 24 s left`)."""
    if not metrics:
        return ""
    if isinstance(running := metrics.get("progress"), dict):
        return progress.text(running)
    shown = [f"{k.replace('_', ' ')} {v}" for k, v in list(metrics.items())[:limit] if k != "seconds"]
    return ", ".join(shown)


async def cmd_modules(host: Host, args: argparse.Namespace) -> int:
    if args.action == "remove":
        return await _remove_module(host, args)
    await host.open(with_bus=False)
    if args.action in ("enable", "disable"):
        await host.set_enabled(args.name, args.action == "enable")
        notes = await host.requirement_notes(args.name) if args.name in host.specs else []
        replays = []
        if args.action == "enable" and args.name in host.specs:
            days = int((await host.resolved_settings("host"))["bus_max_age_days"])
            replays = module.replay_plan(host.specs[args.name].manifest, days)
        emit(
            args,
            {
                "name": args.name,
                "enabled": args.action == "enable",
                "restart_required": True,
                "replays": replays,
                "requirements": notes,
            },
            lambda d: "\n".join(
                [
                    f"module {d['name']} {'enabled' if d['enabled'] else 'disabled'}; {RESTART_NOTE}",
                    *d["requirements"],
                    *d["replays"],
                ]
            ),
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
    ] + [
        {"name": n, "version": None, "enabled": await host.enabled(n), "skipped": why}
        for n, why in sorted(host.skipped.items())
    ]
    emit(
        args,
        rows,
        lambda d: table(
            [
                (r["name"], r["version"] or "-", "yes" if r["enabled"] else "no", "skipped: " + r["skipped"])
                if r.get("skipped")
                else (r["name"], r["version"], "yes" if r["enabled"] else "no", ", ".join(r["jobs"]))
                for r in d
            ],
            ["module", "version", "enabled", "jobs"],
        ),
    )
    return 0


async def _remove_module(host: Host, args: argparse.Namespace) -> int:
    from host import removal

    name = args.name
    if name == "host":
        raise UserError("the host cannot be removed", "remove a module instead")
    if name in host.specs:  # a running host would re-create its consumers and handle everything again
        raise UserError(
            f"module {name} is still installed",
            f"uninstall its distribution first (pip uninstall …), then remove it; "
            f"`feedeater modules disable {name}` stops it at the hosts' next start",
        )
    await host.open()
    assert host.js is not None
    pool = host.require_pool()
    installed = name in host.skipped  # installed but broken: it cannot run, and stays disabled
    if not installed and not await removal.known(pool, name):
        raise UserError(f"no module {name!r} is installed or has data here", "see `feedeater modules list`")
    what = "its settings, job runs, consumers and dead letters" + (
        f", and its data (schemas mod_{name} and {name}_public, contexts, this database's grants to its role)"
        if args.drop_data
        else f" (its data in mod_{name} stays)"
    )
    if not args.yes and not _confirm(f"remove module {name}: {what}?"):
        raise UserError("nothing removed", "answer y, or pass --yes")
    result = removal.Removed(name, still_installed=installed)
    async with pool.acquire() as conn, conn.transaction():
        await removal.remove_rows(conn, name, installed=installed, drop_data=args.drop_data, result=result)
    others = [n for n in (*host.specs, *host.skipped) if n != name]
    await removal.remove_bus(host.js, name, others, result)
    emit(args, dataclasses.asdict(result), _removed_text)
    return 0


def _removed_text(d: dict[str, Any]) -> str:
    lines = [
        f"module {d['name']} removed: {sum(d['rows'].values())} host rows, {len(d['consumers'])} bus consumers, "
        f"{d['dead_letters']} dead letters"
        + (f"; schema mod_{d['name']} dropped" if d["schema_dropped"] else "")
        + (f"; schema {d['name']}_public dropped" if d["public_schema_dropped"] else "")
    ]
    if d["role_revoked"]:
        lines.append(
            f"role {d['role_revoked']} kept (roles are cluster-wide: other databases may use it); "
            "this database's grants to it revoked"
            + (f", {d['role_objects_left']} of its objects here left" if d["role_objects_left"] else "")
        )
    if d["still_installed"]:
        lines.append("its broken distribution is still installed: it stays disabled until you uninstall it")
    return "\n".join(lines)


async def cmd_settings(host: Host, args: argparse.Namespace) -> int:
    from host import ai, settings

    name, _, key = args.target.partition(".")
    spec = module.get(host.specs, name)
    if key:
        setting = spec.manifest.setting(key)  # an unknown key is refused before any service starts
    if args.action in ("set", "reset"):
        if not key or (args.action == "set") != (args.value is not None):
            raise UserError(
                "usage: feedeater settings set <module>.<key> <value>, or settings reset <module>.<key>"
            )
        if args.action == "set":
            settings.coerce(name, setting, args.value)  # a bad value is refused before services start
        if name == ai.ALIAS_MODULE and key in ai.AI_KEYS:
            print(f"feedeater: warning: {ai.alias_line([key])}", file=sys.stderr)
    await host.open(with_bus=False)
    if args.action in ("set", "reset"):
        async with host.require_pool().acquire() as conn, conn.transaction():
            # The transaction's start: before the commit, so a host that read after the commit confirms.
            changed_at = await conn.fetchval("SELECT now()")
            if args.action == "set":
                value = await settings.store(conn, spec.manifest, key, args.value)
            elif await settings.reset(conn, spec.manifest, key):
                value = setting.default
            else:
                raise UserError(
                    f"{name}.{key} has no stored value: it is already the default",
                    f"see it with `feedeater settings get {name}.{key}`",
                )
        await _report_applied(host, args, name, key, value, changed_at)
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
            limits={1: 24},  # prompts are long values: `--json` or `settings get <key> --json` shows them
        ),
    )
    return 0


async def _report_applied(
    host: Host, args: argparse.Namespace, name: str, key: str, value: Any, changed_at: datetime
) -> None:
    """After a change: which running hosts applied it, and which must restart (they confirm within
    seconds; host/livesettings.py)."""
    from host import livesettings, settings

    setting = host.specs[name].manifest.setting(key)
    reports = await livesettings.confirm(host.require_pool(), f"{name}.{key}", changed_at)
    shown = settings.display(setting, value)
    own = settings.env_key(name, key)
    note = f"; {own} in this shell still wins for commands run here" if own in host.env else ""
    emit(
        args,
        {
            "module": name,
            "key": key,
            "value": None if setting.secret else value,
            "reset": args.action == "reset",
            "hosts": [r.as_dict() for r in reports],
            "restart_required": sorted(r.host_id for r in reports if r.verdict == "restart"),
        },
        lambda _d: (
            f"{name}.{key} = {shown}"
            + (" (the default)" if args.action == "reset" else "")
            + f"; {livesettings.describe(reports)}{note}"
        ),
    )


async def cmd_jobs(host: Host, args: argparse.Namespace) -> int:
    if args.action == "run":
        return await _run_job(host, args)
    await host.open(with_bus=False)
    last = {(r["module"], r["job"]): r for r in await _last_runs(host)}
    rows = []
    for n, s in sorted(host.specs.items()):
        enabled = await host.enabled(n)
        for j in s.manifest.jobs:
            run = last.get((n, j.name))
            rows.append(
                {
                    "job": f"{n}.{j.name}",
                    "trigger": host.trigger_for(n, j),
                    "enabled": enabled,
                    "last_status": run and run["status"],
                    "last_run": run and run["started_at"],
                    "last_metrics": run and run["metrics"],
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
                    textfmt.relative(r["last_run"]),
                    metrics_summary(r["last_metrics"]),
                )
                for r in d
            ],
            ["job", "trigger", "enabled", "last", "at", "last run did"],
        ),
    )
    return 0


async def _run_job(host: Host, args: argparse.Namespace) -> int:
    from host import outbox, progress

    if not args.job:
        raise UserError("usage: feedeater jobs run <module>.<job>")
    name, _, job_name = args.job.partition(".")
    module.get(host.specs, name).manifest.job(job_name)  # unknown names are refused before services start
    await host.open()
    with progress.job_bar(args.job):
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
            [
                f"{d['job']}: {d['status']} in {textfmt.duration(d['seconds'])}"
                + (f" — {d['error']}" if d["error"] else "")
            ]
            + [f"  {k}: {v}" for k, v in d["metrics"].items()]
        ),
    )
    return 0 if result.status == "ok" else 1


async def cmd_bus_tail(host: Host, args: argparse.Namespace) -> int:
    import asyncio

    from host import bus
    from host.events import subject_problem

    if (why := subject_problem(args.subject)) is not None:
        raise UserError(
            f"{args.subject!r} is not a subject: {why}",
            "e.g. `feedeater bus tail 'feedeater.rss.>'` or `feedeater bus tail 'feedeater.*.messageCreated'`",
        )
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
        if args.json:
            print(json.dumps({"subject": msg.subject, "data": body}, ensure_ascii=False), flush=True)
        else:
            print(event_line(msg.subject, body), flush=True)
        seen += 1
        if args.count and seen >= args.count:
            done.set()

    await nc.subscribe(args.subject, cb=on_msg)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, done.set)
    await done.wait()
    try:
        await nc.drain()
    except Exception:  # NATS went away (the host that started it stopped): nothing is left to drain
        await nc.close()
    return 0


async def cmd_dlq(host: Host, args: argparse.Namespace) -> int:
    from host import dlq

    subject = dlq.filter_subject(args.module, args.subscription)
    if args.action in ("show",) and args.seq is None:
        raise UserError(
            f"bus dlq {args.action} needs a dead letter's seq", "list them: `feedeater bus dlq list`"
        )
    await host.open()
    js = host.js
    assert js is not None
    if args.action == "list":
        letters = await dlq.listing(js, subject, limit=args.limit)
        total = await dlq.count(js, subject)
        emit(
            args,
            [d.as_dict() for d in letters],
            lambda rows: (
                table(
                    [
                        (
                            r["seq"],
                            f"{r['module']}.{r['subscription']}",
                            textfmt.relative(r["dead_at"]),
                            r["deliveries"],
                            r["event_id"],
                            r["reason"],
                        )
                        for r in rows
                    ],
                    ["seq", "subscription", "died", "tries", "event", "reason"],
                )
                + (f"\n{total - len(rows)} more (--limit)" if total > len(rows) else "")
                if rows
                else nothing(host, "no dead letters", "every subscription handled what it was given")
            ),
        )
    elif args.action == "show":
        letter = await dlq.get(js, args.seq)
        emit(args, letter.as_dict(payload=True), _dead_letter_text)
    elif args.action == "replay":
        seqs = (
            [args.seq]
            if args.seq is not None
            else [d.seq for d in await dlq.listing(js, subject, limit=10**6)]
        )
        done: list[dict[str, Any]] = []
        for seq in seqs:
            try:
                letter, handled = await dlq.replay(js, seq, host.specs, host.context)
            except UserError as exc:
                if args.seq is not None:
                    raise
                done.append({"seq": seq, "error": str(exc)})  # the others are still worth replaying
                continue
            done.append({"seq": seq, "event_id": letter.event_id, "handled": handled})
        emit(args, done, _replayed_text)
        return 1 if any("error" in r for r in done) else 0
    else:
        if args.seq is not None:
            await dlq.get(js, args.seq)  # an unknown seq is an error, not a silent nothing
            what, n = f"dead letter {args.seq}", 1
        else:
            what, n = f"{await dlq.count(js, subject)} dead letters on {subject}", None
        if not args.yes and not _confirm(f"delete {what} for good?"):
            raise UserError("nothing deleted", "answer y, or pass --yes")
        if args.seq is not None:
            await dlq.delete(js, args.seq)
        else:
            n = await dlq.purge(js, subject)
        emit(args, {"deleted": n}, lambda d: f"deleted {d['deleted']} dead letters")
    return 0


def _replayed_text(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"dead letter {r['seq']}: "
        + (
            r["error"]
            if "error" in r
            else f"event {r['event_id']} " + ("handled" if r["handled"] else "had been processed already")
        )
        for r in rows
    ]
    return "\n".join(lines) or "no dead letters to replay"


def _dead_letter_text(d: dict[str, Any]) -> str:
    return (
        f"dead letter {d['seq']}: {d['module']}.{d['subscription']} gave up after {d['deliveries']} deliveries"
        f" {textfmt.relative(d['dead_at'])}\n"
        f"  reason:  {d['reason']}\n  event:   {d['event_id']} on {d['subject']}\n"
        f"  payload: {json.dumps(d['payload'], ensure_ascii=False)}"
    )


def _confirm(question: str) -> bool:
    """Ask on a terminal; anything but y/yes (or no terminal) is no."""
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def event_line(subject: str, body: Any) -> str:
    """One event on one line: time, source module, type, who/what it is about, subject (FeedEater wire
    format)."""
    from host.events import describe

    if not isinstance(body, dict):
        return textfmt.fit(f"{subject}  {body}", textfmt.terminal_columns())
    at, kind, about = describe(body)
    # The date too: a message's createdAt is its entry's date, often days or years before it is published.
    when = f"{at[:10]} {at[11:16]}Z" if len(at) >= 16 else "-"
    source = subject.split(".")[1] if subject.count(".") >= 2 else "-"  # feedeater.<module>.<event>
    line = f"{when}  {source:<8} {kind:<15} {about}  [{subject}]"
    columns = textfmt.terminal_columns()
    return textfmt.fit(line, None if columns is None else max(columns, 40))


async def cmd_contexts(host: Host, args: argparse.Namespace) -> int:
    from host import contexts

    await host.open(with_bus=False)
    async with host.require_pool().acquire() as conn:
        if args.action == "show":
            if not args.key:
                raise UserError("usage: feedeater contexts show <module>:<sourceKey>, e.g. rss:feed:12")
            owner, _, source_key = args.key.partition(":")
            ctx = await contexts.get(conn, owner, source_key)
            if ctx is None and not await contexts.messages(conn, owner, source_key, limit=1):
                # Nothing was ever published for it: a typo or a source that does not exist, not "pending".
                known = [f"{r['owner_module']}:{r['source_key']}" for r in await contexts.list_all(conn)]
                close = [k for k in known if k.endswith(args.key)] or difflib.get_close_matches(
                    args.key, known, 3
                )
                raise UserError(
                    f"no context {args.key}: nothing has been published for it",
                    (f"did you mean {' or '.join(close)}? " if close else "")
                    + "list contexts with `feedeater contexts list`; a feed's context follows its first entries",
                )
            if ctx is None:
                emit(
                    args, {"key": args.key, "pending": True}, lambda _d: _pending_text(host, owner, args.key)
                )
                return 0
            ctx["messages"] = await contexts.messages(conn, owner, source_key)
            emit(args, ctx, _context_text)
            return 0
        rows = await contexts.list_all(conn, args.module)
    emit(
        args,
        rows,
        lambda d: (
            table(
                [
                    (
                        f"{r['owner_module']}:{r['source_key']}",
                        r["version"],
                        textfmt.when(r["updated_at"]),
                        r["summary_short"],
                    )
                    for r in d
                ],
                ["context", "v", "updated", "summary"],
            )
            if d
            else nothing(host, "no contexts", "they follow the first entries of a source or a digest")
        ),
    )
    return 0


def _pending_text(host: Host, owner: str, key: str) -> str:
    """No context yet: say which job writes it and how to run it now (if the module is known)."""
    spec = host.specs.get(owner)
    writers = (
        [j for j in spec.manifest.jobs if "context" in f"{j.name} {j.description}".lower()] if spec else []
    )
    if not writers:
        return f"no context {key} yet (pending: nothing has been written for it)"
    job = writers[0]
    return (
        f"no context {key} yet: pending. {owner}.{job.name} writes it (every {host.trigger_for(owner, job)},"
        f" soon after a new source's first entries); `feedeater jobs run {owner}.{job.name}` writes it now"
    )


def _context_text(c: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"{c['owner_module']}:{c['source_key']}  v{c['version']}  updated {textfmt.when(c['updated_at'])}"
            f" ({textfmt.relative(c['updated_at'])})",
            "",
            c["summary_short"],
            "",
            c["summary_long"],
            *([""] + [f"- {p}" for p in c["key_points"]] if c["key_points"] else []),
            "",
            f"({textfmt.plural(c['message_count'], 'message')})",
        ]
    )


async def cmd_console(host: Host, args: argparse.Namespace) -> int:
    """`console password`: asks twice on a terminal, reads one line from a pipe (scripts, tests)."""
    import getpass

    from host.console import auth

    if sys.stdin.isatty():
        password = getpass.getpass("console password: ")
        if getpass.getpass("again: ") != password:
            raise UserError("the two passwords differ", "run `feedeater console password` again")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    await host.open(with_bus=False)
    async with host.require_pool().acquire() as conn:
        await auth.set_password(conn, password)
    emit(
        args,
        {"password": "set"},
        lambda _d: "console password set; everyone logged in before must log in again",
    )
    return 0


async def cmd_api(host: Host, args: argparse.Namespace) -> int:
    """`feedeater api token create|list|revoke`: bearer tokens for the HTTP API (hashed at rest)."""
    from host import tokens
    from host.web.models import ApiToken, ApiTokenCreated

    if args.object == "login":
        return await _api_login(host, args)
    if args.action not in ("create", "list", "revoke"):
        raise UserError(f"`api token {args.action}` is not a command", "use create, list or revoke")
    if args.action == "revoke" and not args.token:
        raise UserError("usage: feedeater api token revoke <id|name|token>")
    await host.open(with_bus=False)
    async with host.require_pool().acquire() as conn:
        if args.action == "create":
            name = args.name or f"token-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
            created = ApiTokenCreated.model_validate(await tokens.create(conn, name, args.scope)).model_dump()
            emit(
                args,
                created,
                lambda d: (
                    f"API token {d['id']} ({d['name']}, {d['scope']}), shown only this once:\n{d['token']}\n"
                    "send it as `Authorization: Bearer <token>`; revoke it with "
                    f"`feedeater api token revoke {d['id']}`"
                ),
            )
            return 0
        rows = await (tokens.revoke(conn, args.token) if args.action == "revoke" else tokens.list_all(conn))
    listed = [ApiToken.model_validate(r).model_dump() for r in rows]
    emit(
        args,
        listed,
        lambda d: (
            table(
                [
                    (
                        t["id"],
                        t["name"],
                        t["scope"],
                        t["prefix"] + "…",
                        textfmt.when(t["created_at"]),
                        textfmt.relative(t["last_used_at"]),
                        "revoked " + textfmt.when(t["revoked_at"]) if t["revoked_at"] else "active",
                    )
                    for t in d
                ],
                ["id", "name", "scope", "token", "created", "used", "state"],
            )
            if d
            else nothing(host, "no API tokens", "create one with `feedeater api token create --name NAME`")
        ),
    )
    return 0


async def _api_login(host: Host, args: argparse.Namespace) -> int:
    """`feedeater api login set|list|remove`: the user and password reader apps send (host.logins)."""
    import getpass

    from host import logins

    if args.action not in ("set", "list", "remove"):
        raise UserError(f"`api login {args.action}` is not a command", "use set, list or remove")
    if args.action != "list" and not args.token:
        raise UserError(f"usage: feedeater api login {args.action} NAME")
    password = ""
    if args.action == "set":
        logins.check_name(args.token)
        if sys.stdin.isatty():
            password = getpass.getpass(f"password for {args.token}: ")
            if getpass.getpass("again: ") != password:
                raise UserError(
                    "the two passwords differ", f"run `feedeater api login set {args.token}` again"
                )
        else:
            password = sys.stdin.readline().rstrip("\r\n")
    await host.open(with_bus=False)
    async with host.require_pool().acquire() as conn:
        if args.action == "set":
            created = await logins.set_login(conn, args.token, password)
            emit(
                args,
                {"name": args.token, "created": created},
                lambda d: (
                    f"login {d['name']} {'created' if d['created'] else 'has a new password (its app tokens are revoked)'}; "
                    "reader apps send it as HTTP basic auth (Miniflux) or at /accounts/ClientLogin (Google Reader)"
                ),
            )
            return 0
        if args.action == "remove":
            await logins.remove_login(conn, args.token)
            emit(args, {"name": args.token, "removed": True}, lambda d: f"login {d['name']} removed")
            return 0
        rows = await logins.list_logins(conn)
    emit(
        args,
        rows,
        lambda d: (
            table(
                [
                    (r["name"], textfmt.when(r["created_at"]), textfmt.relative(r["last_used_at"]))
                    for r in rows
                ],
                ["name", "created", "used"],
            )
            if d
            else "no logins (create one with `feedeater api login set NAME`)"
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
    p = add("modules", cmd_modules, "list, enable, disable or remove modules")
    p.add_argument("action", choices=["list", "enable", "disable", "remove"])
    p.add_argument("name", nargs="?")
    p.add_argument("--yes", action="store_true", help="remove: without asking")
    p.add_argument(
        "--drop-data",
        action="store_true",
        help="remove: also drop its schemas mod_<name>, <name>_public, its contexts and its role's grants here",
    )
    p = add("db", cmd_db, "the database: module roles (least privilege)")
    p.add_argument("action", choices=["roles"])
    p.add_argument(
        "--print-sql", action="store_true", help="print the SQL that creates the roles (for an administrator)"
    )
    p = add("settings", cmd_settings, "read or change module settings")
    p.add_argument("action", choices=["get", "set", "reset"], help="reset: back to the default")
    p.add_argument("target", help="<module> or <module>.<key>")
    p.add_argument("value", nargs="?")
    p = add("jobs", cmd_jobs, "list jobs, or run one now in the foreground")
    p.add_argument("action", choices=["list", "run"])
    p.add_argument("job", nargs="?", help="<module>.<job>, e.g. rss.poll")
    bus_cmds = sub.add_parser("bus", help="the bus: live events (tail) and dead letters (dlq)")
    bus_sub = bus_cmds.add_subparsers(dest="bus_action", required=True)
    p = bus_sub.add_parser(
        "tail", help="print live events from the bus, one line each (--json: whole events)"
    )
    p.set_defaults(handler=cmd_bus_tail)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("subject", nargs="?", default="feedeater.>")
    p.add_argument("--count", type=int, default=0, help="stop after N events")
    p = bus_sub.add_parser(
        "dlq", help="dead letters: events a subscription gave up on (list, show, replay, purge)"
    )
    p.set_defaults(handler=cmd_dlq)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("action", choices=["list", "show", "replay", "purge"])
    p.add_argument("seq", nargs="?", type=int, help="show/replay/purge: one dead letter (its `seq`)")
    p.add_argument("--module", default=None, help="list/replay/purge: only this module's")
    p.add_argument("--subscription", default=None, help="only subscriptions of this name")
    p.add_argument("--limit", type=int, default=100, help="list: at most this many (oldest first)")
    p.add_argument("--yes", action="store_true", help="purge without asking")
    p = add("console", cmd_console, "web console: set the login password (stored as an argon2 hash)")
    p.add_argument("action", choices=["password"])
    p = add("contexts", cmd_contexts, "list contexts or show one")
    p.add_argument("action", choices=["list", "show"])
    p.add_argument("key", nargs="?", help="<module>:<sourceKey>, e.g. rss:feed:12")
    p.add_argument("--module", default=None)
    p = add(
        "api", cmd_api, "HTTP API tokens (create, list, revoke) and reader-app logins (set, list, remove)"
    )
    p.add_argument("object", choices=["token", "login"])
    p.add_argument("action", choices=["create", "list", "revoke", "set", "remove"])
    p.add_argument(
        "token",
        nargs="?",
        metavar="REF",
        help="token revoke: its id, name or the token; login set/remove: the name",
    )
    p.add_argument("--name", default=None, help="create: a name to recognize the token by")
    p.add_argument(
        "--scope",
        choices=["read", "write"],
        default="write",
        help="create: read (GET only) or write (everything; the default)",
    )
    for name, spec in specs.items():
        if spec.cli is not None:
            before = set(sub.choices)
            try:
                spec.cli(sub)
            except Exception as exc:  # a plugin's broken hook costs its own commands, not everyone's
                print(f"feedeater: warning: module {name}'s commands are unavailable: {exc}", file=sys.stderr)
            for command in set(sub.choices) - before:
                add_json(sub.choices[command])
    return parser


def add_json(parser: argparse.ArgumentParser) -> None:
    """Give every command of a module's `cli=` hook the standard `--json` (each leaf: on a parent and
    its subcommand both, the subcommand's default would override `feedeater x --json y`); a command
    that declares its own keeps it."""
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in nested:
        for child in {id(p): p for p in action.choices.values()}.values():
            add_json(child)
    if not nested and "--json" not in parser._option_string_actions:
        parser.add_argument("--json", action="store_true", help="machine-readable output")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        skipped: dict[str, str] = {}
        parser = build_parser(module.discover(skipped))
        args = parser.parse_args(argv)
        if args.command != "run":  # `run` logs it (and says whether the module is disabled)
            for name, reason in sorted(skipped.items()):
                print(f"feedeater: warning: {module.skipped_line(name, reason)}", file=sys.stderr)
        if args.command == "modules" and args.action in ("enable", "disable", "remove") and not args.name:
            parser.error(f"modules {args.action} needs a module name")
        # One-shot commands stay quiet unless asked; `run` logs at INFO.
        logs.setup(
            args.log_level
            or os.environ.get("FEEDEATER_LOG_LEVEL")
            or ("INFO" if args.command == "run" else "WARNING")
        )
        import asyncio  # not at the top: `--help` and argument errors never need the event loop

        from host.runtime import Host

        config = HostConfig.from_env()
        _warn_legacy_home(config)
        return asyncio.run(_run(Host(config), args))
    except UserError as exc:
        print(f"feedeater: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `feedeater rss list | head`: the reader left. Point stdout at /dev/null so the interpreter's
        # final flush does not raise again, and end quietly as other Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _warn_legacy_home(config: HostConfig) -> None:
    """Data left in ./.feedeater by a version that kept it in the current directory is not used any more:
    say so on every command until it is moved (else the user sees an empty instance and wonders)."""
    from pathlib import Path

    from host.config import legacy_home

    old = legacy_home(os.environ, Path.cwd(), config.home)
    if old is not None:
        print(
            f"feedeater: {old} holds data of an older feedeater, which kept it in the current directory; "
            f"the data directory is now {config.home}. To keep using the old data, stop its services "
            f"(`FEEDEATER_HOME={old} feedeater services down`) and move it: `mv {old} {config.home}` "
            f"(or set FEEDEATER_HOME={old})"
            + (f"; {config.home} exists already: rename it first" if config.home.exists() else ""),
            file=sys.stderr,
        )


async def _run(host: Host, args: argparse.Namespace) -> int:
    try:
        handler: Handler = args.handler
        return await handler(host, args)
    finally:
        with contextlib.suppress(Exception):
            await host.close(stop_started_services=args.command == "run")


if __name__ == "__main__":
    sys.exit(main())
