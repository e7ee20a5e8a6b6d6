"""The module contract: what a module declares (manifest) and what the host hands it (context).

A module is any importable package exposing `MODULE: ModuleSpec`, registered under the
`feedeater.modules` entry-point group of its distribution (pyproject.toml):

    [project.entry-points."feedeater.modules"]
    rss = "modules.rss:MODULE"

so a module pip-installed from another repository is found exactly like the built-in ones.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import entry_points
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from host.errors import UserError

if TYPE_CHECKING:
    import asyncio

    import asyncpg
    from nats.aio.client import Client as NatsClient

    from host.aiservices import AIServices

T = TypeVar("T")
ENTRY_POINT_GROUP = "feedeater.modules"
RESERVED_NAMES = frozenset({"host", "dlq"})  # the host's own jobs/settings; the dead-letter subjects
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # a subject token, a schema suffix and a durable-name part
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
RETIRE_AFTER_S = 120.0  # ModuleContext.retire: how long a replaced client stays open for calls in flight

SettingType = Literal["str", "int", "float", "bool", "choice"]
# How a running host applies a changed value: "live" at once (read per use, or rebuilt by the module's
# `reconfigure`), "services" by restarting the module's services, "restart" only in a new process.
Applies = Literal["live", "services", "restart"]


@dataclass(frozen=True, slots=True)
class Setting:
    """One typed, validated module setting. Keys are snake_case."""

    key: str
    type: SettingType
    default: Any
    description: str
    secret: bool = False
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    check: Callable[[Any], str | None] | None = None  # why a typed value is refused (host.validate), or None
    applies: Applies = "live"
    # The key of a secret setting this address is sent to (an API base URL and its key): the console
    # changes it only when the secret is given again in the same form, so whoever can change settings
    # cannot redirect a stored secret (host.console.forms.validate).
    receives: str = ""


JobHandler = Callable[["ModuleContext"], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class Job:
    """A scheduled job; its handler returns a metrics dict recorded in host.job_runs."""

    name: str
    handler: JobHandler
    trigger: str  # "60s", "5m", "1h", "1d" or a five-field crontab such as "0 3 * * *"
    description: str = ""


ServiceRunner = Callable[["ModuleContext"], Awaitable[None]]


class Idle(Exception):
    """Raised by a service with nothing to do as configured (a bot without a token): the host shows the
    unit as `idle: <reason>` (not running, not failing: /healthz stays ok) and starts it again when the
    module's settings change."""


@dataclass(frozen=True, slots=True)
class Service:
    """A long-running task (a gateway connection, an HTTP router, a request/reply responder).

    `run(ctx)` runs until cancelled; the host starts it after setup, restarts it with exponential
    backoff when it returns or raises, reports its state in /healthz and `feedeater status`, and
    cancels it on shutdown. With `needs_bus` it starts only once NATS is attached (`ctx.nats` is set).
    """

    name: str
    run: ServiceRunner
    needs_bus: bool = False
    description: str = ""


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """One event delivered to a subscription handler."""

    event_id: str  # the Nats-Msg-Id (the outbox event id); processed once per subscription
    subject: str
    payload: dict[str, Any]  # the decoded JSON body
    delivery: int  # 1 on first delivery, more on redelivery
    # When the stream stored it (JetStream's timestamp): the same on every redelivery, so a handler that
    # files events by date files a redelivered event where the first attempt did.
    stored_at: datetime | None = None


EventHandler = Callable[["ModuleContext", "asyncpg.Connection", ReceivedEvent], Awaitable[None]]
# A batch handler takes the events of one delivery (stream order, already-processed ones left out).
BatchHandler = Callable[["ModuleContext", "asyncpg.Connection", list[ReceivedEvent]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Subscription:
    """A durable JetStream pull consumer on the bus stream, one per (module, name) across all hosts.

    The handler runs inside a database transaction on `conn` that also records the event id as
    processed for this subscription, so its writes and `ctx.emit(conn, ...)` commit together with
    "done" and a redelivery (a crash between commit and ack) is skipped: exactly once per subscription.
    A handler that raises is retried (redelivered) up to `max_deliver` times; then the message goes to
    `feedeater.dlq.<module>.<name>` (stream feedeater_dlq, reason in the `Feedeater-Error` header).

    With `batch=True` the handler is a BatchHandler: it gets the events of one fetch (up to 50) in one
    transaction, so per-event round trips are paid once per delivery. When it raises, the host hands the
    same events to it again one at a time, so only the failing event is retried and dead-lettered.
    """

    name: str
    subject: str  # filter subject, e.g. "feedeater.rss.messageCreated" or "feedeater.*.messageCreated"
    handler: EventHandler | BatchHandler
    max_deliver: int = 5
    ack_wait_seconds: float = 60.0  # a handler still running after this is assumed dead: redelivered
    description: str = ""
    batch: bool = False
    # Where the subscription starts the first time it runs (later it resumes where it stopped): "all"
    # (every event the stream retains: up to host.bus_max_age_days, 30 days), "new" (only events
    # published from then on), or a window such as "24h" / "7d" (the events of that long before).
    start: str = "all"


def interval_seconds(spec: str) -> float | None:
    """'90s' / '5m' / '1h' / '1d' → seconds; None for anything else (pure): job triggers, start windows."""
    match = _INTERVAL.match(spec)
    return float(match[1]) * _UNIT[match[2]] if match else None


def start_problem(start: str) -> str | None:
    """Why a Subscription.start is not one (pure), or None."""
    if start in ("all", "new") or (interval_seconds(start) or 0) > 0:
        return None
    return f'start {start!r} is not "all", "new" nor a window such as "24h" or "7d"'


def replay_plan(manifest: Manifest, max_age_days: int) -> list[str]:
    """What each subscription reads when it first starts, as `modules enable` says it (pure)."""
    where = {
        "all": f"every event the bus retains (up to {max_age_days} days)",
        "new": "only events published after it starts",
    }
    return [
        f"subscription {s.name} ({s.subject}) first reads "
        f"{where.get(s.start, f'the events of the last {s.start} and all after')}; "
        "afterwards it resumes where it stopped"
        for s in manifest.subscriptions
    ]


@dataclass(frozen=True, slots=True)
class Routes:
    """HTTP endpoints a module mounts on the host's one ASGI app (FastAPI), under `prefix`.

    `build(ctx)` returns a `fastapi.APIRouter`; it is awaited once when `feedeater run` starts, so
    listing modules or printing help never imports the web stack.
    """

    name: str
    build: Callable[[ModuleContext], Awaitable[Any]]
    prefix: str = "/api/v1"
    description: str = ""
    # Web console pages: (label, path under prefix) for the console's navigation. Routes with pages are
    # mounted behind the console's login, CSRF check and security headers, and render with its layout
    # (host.console.render); an empty tuple means an API router.
    pages: tuple[tuple[str, str], ...] = ()
    # Endpoints that authenticate their callers themselves (a WebSub hub signs its pushes with HMAC):
    # mounted without the API's bearer-token rule.
    public: bool = False
    # The largest request body its endpoints accept, checked before anything reads it (None: the host's
    # 1 MiB). An upload endpoint raises it; the API's token is checked before the body either way.
    max_body_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Throughput:
    """A series the console overview charts per second over the last hour: the sum of metric `metric`
    over the runs of job `job` (the rss poll job's `feeds` is "polls/s")."""

    job: str
    metric: str
    unit: str  # what one counts, plural ("polls")


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    version: str
    description: str
    jobs: tuple[Job, ...] = ()
    services: tuple[Service, ...] = ()
    subscriptions: tuple[Subscription, ...] = ()
    routes: tuple[Routes, ...] = ()
    settings: tuple[Setting, ...] = ()
    events: tuple[str, ...] = ()  # event names it publishes via ctx.emit, e.g. "messageCreated"
    # Directory of NNNN_name.sql files applied in scope `name` (e.g. importlib.resources.files(pkg) / "migrations").
    migrations: Traversable | None = None
    enabled_by_default: bool = True
    # Modules this one calls (their public API, their events): set up before it; while one is missing
    # or disabled this one is not started (one warning line) and cannot be enabled.
    requires: tuple[str, ...] = ()
    # What other modules may call, and nothing else: a factory given this module's own context that
    # returns its public API object; a requiring module reaches it as `ctx.api(name, Type)`. Named
    # lazily (`lazy("pkg.public:api")`) so discovery imports none of it.
    public: Callable[[ModuleContext], Awaitable[Any]] | None = None
    overview: tuple[Throughput, ...] = ()  # what the console overview charts of this module

    def setting(self, key: str) -> Setting:
        for s in self.settings:
            if s.key == key:
                return s
        keys = [s.key for s in self.settings]
        close = difflib.get_close_matches(key, keys, n=3, cutoff=0.5) or [k for k in keys if key in k][:3]
        hint = f"did you mean {' or '.join(f'{self.name}.{k}' for k in close)}?" if close else ""
        raise UserError(
            f"unknown setting {self.name}.{key}",
            f"{hint} List them with `feedeater settings get {self.name}`".lstrip(),
        )

    def job(self, name: str) -> Job:
        for j in self.jobs:
            if j.name == name:
                return j
        known = ", ".join(f"{self.name}.{j.name}" for j in self.jobs) or "none"
        raise UserError(f"unknown job {self.name}.{name}", f"known jobs: {known}")


Emit = Callable[..., Awaitable[int]]  # emit(conn, *events) -> how many were new


@dataclass(slots=True)
class ModuleContext:
    """Everything a module gets from the host; modules never build their own pools or clients."""

    name: str
    pool: asyncpg.Pool
    settings: Mapping[str, Any]
    log: logging.Logger
    host_id: str
    emit: Emit  # `await ctx.emit(conn, event, ...)` inside the caller's transaction: the only way to publish
    ai: AIServices
    nats: NatsClient | None = None  # set once the bus is attached; services declare needs_bus instead
    home: Path | None = None  # the host's local state directory (FEEDEATER_HOME), for files a module keeps
    state: dict[str, Any] = field(default_factory=dict)  # the module's own process-local objects
    retiring: set[asyncio.Task[None]] = field(default_factory=set)
    modules: Mapping[str, object] = field(default_factory=dict)  # public APIs of Manifest.requires

    def api(self, name: str, kind: type[T]) -> T:
        """The public API of module `name`, which this module's manifest requires."""
        found = self.modules.get(name)
        if name not in self.modules or not isinstance(found, kind):
            raise UserError(
                f"module {self.name} uses module {name} without requiring it",
                f"add {name!r} to Manifest.requires of {self.name} (and give {name} a Manifest.public)",
            )
        return found

    def once(self, key: str, make: Callable[[], T]) -> T:
        """`state[key]`, made by `make` on first use. (`state.setdefault(key, make())` builds one on every
        call: a seeded Random per poll was 2 % of a 304 poll's CPU.)"""
        if key not in self.state:
            self.state[key] = make()
        value: T = self.state[key]
        return value

    def retire(self, close: Callable[[], Awaitable[Any]], after_s: float = RETIRE_AFTER_S) -> None:
        """Close a replaced object (a client, a worker pool) `after_s` from now, or when the host stops:
        calls still using it finish first. For `reconfigure` hooks that rebuild what settings made."""
        import asyncio  # not at the top: `feedeater --help` never needs the event loop

        async def later() -> None:
            try:
                await asyncio.sleep(after_s)
            finally:
                try:
                    await close()
                except Exception as exc:
                    self.log.warning("closing a replaced object failed: %s", exc)

        task = asyncio.create_task(later(), name=f"{self.name}: retire")
        self.retiring.add(task)
        task.add_done_callback(self.retiring.discard)

    async def close_retired(self) -> None:
        """Close every retired object now (host shutdown)."""
        import asyncio

        for task in list(self.retiring):
            task.cancel()
        for task in list(self.retiring):
            with contextlib.suppress(asyncio.CancelledError):
                await task


CliHook = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]
# Given a batch of ids the host holds links for, return those the module still has (see host.housekeeping).
LiveMessages = Callable[["asyncpg.Connection", Sequence[uuid.UUID]], Awaitable[Collection[uuid.UUID]]]
LiveSources = Callable[["asyncpg.Connection", Sequence[str]], Awaitable[Collection[str]]]
Reconfigure = Callable[[ModuleContext, frozenset[str]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ModuleSpec:
    manifest: Manifest
    setup: Callable[[ModuleContext], Awaitable[None]] | None = None  # called once when the host starts it
    teardown: Callable[[ModuleContext], Awaitable[None]] | None = None
    cli: CliHook | None = None  # adds `feedeater <name> ...` subcommands
    # Context owners: which of their messages / source keys still exist, so the host's housekeeping
    # drops context links and contexts the module no longer has. None = keep them.
    live_messages: LiveMessages | None = None
    live_sources: LiveSources | None = None
    # Settings changed while the host runs: `ctx.settings` already holds the new values; rebuild what was
    # made from the keys given (a client, a pool). None = every setting is read where it is used.
    reconfigure: Reconfigure | None = None


def lazy(target: str) -> Callable[..., Awaitable[Any]]:
    """A handler named "package.module:function", imported on its first call.

    Discovery imports every installed module's manifest for every command: a manifest that imports its
    pipeline (scikit-learn, discord.py, …) makes `feedeater rss list` pay for all of it.
    """
    module_name, _, name = target.partition(":")

    async def call(*args: Any) -> Any:
        return await getattr(importlib.import_module(module_name), name)(*args)

    return call


def discover(skipped: dict[str, str] | None = None) -> dict[str, ModuleSpec]:
    """Every module registered in the `feedeater.modules` entry-point group of the installed distributions.

    One broken plugin must not stop the others (nor `feedeater modules disable` of itself): a module
    that cannot be imported, whose manifest is invalid or whose name another distribution took first is
    left out, and the one line saying why goes to `skipped` (entry-point name → reason). So is a module
    that requires one of those, or one not installed.
    """
    found: dict[str, ModuleSpec] = {}
    ambiguous: set[str] = set()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name} = {ep.value}" + (f" of {ep.dist.name}" if ep.dist else "")
        try:
            spec = ep.load()
            check(spec, where, ep.name)
            if (ep.name in found and found[ep.name] is not spec) or ep.name in ambiguous:
                found.pop(ep.name, None)  # which one the user meant is not ours to guess
                ambiguous.add(ep.name)
                raise UserError(f"two installed distributions provide module {ep.name!r}", "uninstall one")
        except UserError as exc:
            _skip(skipped, ep.name, str(exc))
            continue
        except Exception as exc:  # an import error, or anything the plugin's import raised
            _skip(
                skipped,
                ep.name,
                f"{where} cannot be imported: {type(exc).__name__}: {exc}; "
                "reinstall that distribution, or uninstall it",
            )
            continue
        found[ep.name] = spec
    for name, why in requirement_problems(found).items():
        del found[name]
        _skip(skipped, name, why)
    return found


def _skip(skipped: dict[str, str] | None, name: str, reason: str) -> None:
    if skipped is not None:
        skipped[name] = " ".join(reason.split())  # one line, whatever the exception said


def skipped_line(name: str, reason: str) -> str:
    """The warning a skipped module gets (run's log, every command's stderr, status, /healthz)."""
    return f"module {name} skipped: {reason}"


def check(spec: object, where: str, name: str) -> None:
    """Refuse a malformed module at discovery, before anything runs."""
    if not isinstance(spec, ModuleSpec):
        raise UserError(f"{where} is not a ModuleSpec", "point the entry point at the module's MODULE")
    m = spec.manifest
    if m.name != name or not _NAME.match(name) or name in RESERVED_NAMES:
        raise UserError(
            f"{where}: manifest name {m.name!r} must equal the entry-point name, be snake_case "
            f"and not one of {', '.join(sorted(RESERVED_NAMES))}",
            "rename the module or its entry point",
        )
    for kind, names in (
        ("job", [j.name for j in m.jobs]),
        ("service", [s.name for s in m.services]),
        ("subscription", [s.name for s in m.subscriptions]),
        ("routes", [r.name for r in m.routes]),
    ):
        if not all(n.isidentifier() for n in names) or len(set(names)) != len(names):
            raise UserError(f"{where}: {kind} names must be unique identifiers", f"got {names}")
    for sub in m.subscriptions:
        if (why := start_problem(sub.start)) is not None:
            raise UserError(f"{where}: subscription {sub.name}: {why}", "fix the manifest")
    if name in m.requires or not all(_NAME.match(r) for r in m.requires):
        raise UserError(f"{where}: requires {list(m.requires)} must name other modules", "fix the manifest")
    jobs = {j.name for j in m.jobs}
    if unknown := [t.job for t in m.overview if t.job not in jobs]:
        raise UserError(f"{where}: overview charts undeclared jobs {unknown}", "fix the manifest")


def requirement_problems(specs: Mapping[str, ModuleSpec]) -> dict[str, str]:
    """Modules whose requirements are not installed (or not loadable), directly or through another,
    or that require each other: name → why (pure). The others can start."""
    problems: dict[str, str] = {}
    changed = True
    while changed:  # a module skipped here takes the modules that require it along
        changed = False
        for name, spec in specs.items():
            missing = [r for r in spec.manifest.requires if r not in specs or r in problems]
            if name not in problems and missing:
                problems[name] = (
                    f"it requires module {missing[0]}, which is not installed or was skipped; "
                    f"install {missing[0]}, or disable {name} (`feedeater modules disable {name}`)"
                )
                changed = True
    ordered = start_order({n: s for n, s in specs.items() if n not in problems})
    for name in specs:
        if name not in problems and name not in ordered:
            problems[name] = "its requirements form a cycle (Manifest.requires); fix the manifests"
    return problems


def start_order(specs: Mapping[str, ModuleSpec]) -> list[str]:
    """Module names with every module after the ones it requires, by name otherwise (pure); modules in a
    requirement cycle, or requiring one not in `specs`, are left out."""
    order: list[str] = []
    placed: set[str] = set()
    pending = sorted(specs)
    while True:
        ready = [n for n in pending if all(r in placed for r in specs[n].manifest.requires)]
        if not ready:
            return order
        first = ready[0]
        order.append(first)
        placed.add(first)
        pending.remove(first)


def get(specs: Mapping[str, ModuleSpec], name: str) -> ModuleSpec:
    if name not in specs:
        raise UserError(
            f"unknown module {name!r}", f"installed modules: {', '.join(sorted(specs)) or 'none'}"
        )
    return specs[name]
