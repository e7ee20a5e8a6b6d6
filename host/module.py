"""The module contract: what a module declares (manifest) and what the host hands it (context).

A module is a package `modules/<name>/` whose `__init__.py` exposes `MODULE: ModuleSpec`.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import pkgutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import asyncpg

from host.errors import UserError

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

    from host.ai import AIServices
    from host.events import Event

SettingType = Literal["str", "int", "float", "bool", "choice"]


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


JobHandler = Callable[["ModuleContext"], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class Job:
    """A scheduled job; its handler returns a metrics dict recorded in host.job_runs."""

    name: str
    handler: JobHandler
    trigger: str  # "60s", "5m", "1h", "1d" or a five-field crontab such as "0 3 * * *"
    description: str = ""


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    version: str
    description: str
    jobs: tuple[Job, ...] = ()
    settings: tuple[Setting, ...] = ()
    events: tuple[str, ...] = ()  # event names it publishes, e.g. "messageCreated"
    enabled_by_default: bool = True

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


@dataclass(slots=True)
class ModuleContext:
    """Everything a module gets from the host; modules never build their own pools or clients."""

    name: str
    pool: asyncpg.Pool
    settings: Mapping[str, Any]
    log: logging.Logger
    host_id: str
    # The only way a module publishes: add events inside the caller's transaction (returns how many were new).
    emit: Callable[[asyncpg.Connection, Sequence[Event]], Awaitable[int]]
    ai: AIServices
    nats: NatsClient | None = None
    register_job: Callable[[Job], None] = field(default=lambda _job: None)
    state: dict[str, Any] = field(default_factory=dict)  # the module's own process-local objects


CliHook = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]


@dataclass(frozen=True, slots=True)
class ModuleSpec:
    manifest: Manifest
    setup: Callable[[ModuleContext], Awaitable[None]] | None = None  # called once when the host starts it
    teardown: Callable[[ModuleContext], Awaitable[None]] | None = None
    cli: CliHook | None = None  # adds `feedeater <name> ...` subcommands


def discover() -> dict[str, ModuleSpec]:
    """Import every package under `modules/` that exposes MODULE."""
    import modules

    found: dict[str, ModuleSpec] = {}
    for info in pkgutil.iter_modules(modules.__path__):
        if not info.ispkg:
            continue
        mod = importlib.import_module(f"modules.{info.name}")
        spec = getattr(mod, "MODULE", None)
        if isinstance(spec, ModuleSpec):
            found[spec.manifest.name] = spec
    return found


def get(specs: Mapping[str, ModuleSpec], name: str) -> ModuleSpec:
    if name not in specs:
        raise UserError(
            f"unknown module {name!r}", f"installed modules: {', '.join(sorted(specs)) or 'none'}"
        )
    return specs[name]
