"""What the console reads of the running host: the `Host` (host/runtime.py) satisfies it. The console
depends on this, not on the runtime, which mounts the console: no import cycle between them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncpg
    from nats.aio.client import Client as NatsClient

    from host.bus import BusLink
    from host.config import HostConfig
    from host.module import Job, ModuleSpec


class ConsoleHost(Protocol):
    config: HostConfig
    env: dict[str, str]
    specs: dict[str, ModuleSpec]
    skipped: dict[str, str]  # installed modules that could not be loaded: name → why
    nc: NatsClient | None
    link: BusLink | None

    def require_pool(self) -> asyncpg.Pool: ...

    async def resolved_settings(self, name: str) -> dict[str, Any]: ...

    def trigger_for(self, name: str, job: Job) -> str: ...
