"""The test kit's helpers: fresh databases, hosts in this process or as `feedeater run` processes, what
reached the bus, publishing an event, waiting for an effect (the fixtures are in host.testing.plugin).

The services are the same embedded PostgreSQL+pgvector and NATS JetStream `feedeater run` uses
(host.services), on free loopback ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import asyncpg
import nats
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from host import streams
from host.config import HostConfig
from host.events import Event
from host.runtime import Host
from host.services import EmbeddedPostgres

__all__ = [
    "FEEDEATER",
    "WAIT_S",
    "BusReader",
    "HostProcess",
    "admin_url",
    "feedeater",
    "feedeater_env",
    "fresh_database",
    "health",
    "make_host",
    "module_installed",
    "pending_events",
    "publish_event",
    "reset_stream",
    "running",
    "until",
]


def admin_url(pg: EmbeddedPostgres, database: str = "postgres") -> str:
    status = pg.status()
    assert status.url is not None
    return status.url.rsplit("/", 1)[0] + f"/{database}"


@contextlib.asynccontextmanager
async def fresh_database(pg: EmbeddedPostgres, prefix: str = "t") -> AsyncIterator[str]:
    """A new, empty database on `pg` (its URL), dropped afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(admin_url(pg))
    try:
        await admin.execute(f"CREATE DATABASE {name}")
    finally:
        await admin.close()
    yield admin_url(pg, name)
    admin = await asyncpg.connect(admin_url(pg))
    try:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        await admin.close()


async def reset_stream(url: str) -> None:
    """Delete the bus streams and the dead letters (a test starts from none, as a fresh install does)."""
    nc = await nats.connect(url)
    try:
        for name in (*streams.BUS_STREAMS, streams.DLQ):
            with contextlib.suppress(Exception):
                await nc.jetstream().delete_stream(name)
    finally:
        await nc.close()


def make_host(
    tmp_path: Path,
    database_url: str,
    nats_url: str,
    *,
    host_id: str = "test-host",
    env: dict[str, str] | None = None,
) -> Host:
    config = HostConfig(
        home=tmp_path,
        database_url=database_url,
        nats_url=nats_url,
        http_host="127.0.0.1",
        http_port=0,
        host_id=host_id,
    )
    base = {"FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS": "true"}  # tests serve feeds on loopback
    return Host(config, env={**base, **(env or {})})


READ_TIMEOUT_S = 60.0  # per message; generous: a stall is a failure, not the end of the stream
# How long a test waits for something that should happen: a deadline costs nothing when it is met, and a
# busy machine (load 20 on two cores: `python3 bench/busy.py`) takes many times longer than a quiet one.
WAIT_S = 120.0


class BusReader:
    """Reads what actually reached the bus streams (not what we meant to send).

    A bus without streams raises: "nothing was published" must never pass because NATS was down.
    """

    def __init__(self, js: JetStreamContext, *, stream: str | None = None) -> None:
        self.js = js
        self.streams = (stream,) if stream else streams.BUS_STREAMS

    async def all(
        self, subject: str = "feedeater.>", *, expect: int | None = None, timeout: float = WAIT_S
    ) -> list[dict[str, Any]]:
        """Every message on `subject`, stream by stream (the shared one first), each in stream order, with
        its Nats-Msg-Id under `_msg_id` (headers under `_headers`, the stream under `_stream`, the time
        JetStream stored it under `_stored`)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            msgs = await self._read_all(subject)
            if expect is None or len(msgs) >= expect or asyncio.get_running_loop().time() > deadline:
                return msgs
            await asyncio.sleep(0.1)

    async def _read_all(self, subject: str) -> list[dict[str, Any]]:
        """The streams in turn; a missing one is skipped, unless none exists."""
        out: list[dict[str, Any]] = []
        missing: list[NotFoundError] = []
        for stream in self.streams:
            try:
                out += await self._read(stream, subject)
            except NotFoundError as exc:
                missing.append(exc)
        if len(missing) == len(self.streams):
            raise missing[0]
        return out

    async def _read(self, stream: str, subject: str) -> list[dict[str, Any]]:
        """Exactly the messages the stream holds on `subject` now: counted first, then read until all
        arrived. A pause in delivery (a busy machine) must not end the read early and hide messages."""
        info = await self.js.stream_info(stream, subjects_filter=subject)
        count = sum((info.state.subjects or {}).values())
        if count == 0:
            return []
        sub = await self.js.subscribe(
            subject,
            stream=stream,
            ordered_consumer=True,
            config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL),
        )
        out: list[dict[str, Any]] = []
        try:
            while len(out) < count:
                # Raises when the stream stops delivering what it says it holds: never a short list.
                msg = await sub.next_msg(timeout=READ_TIMEOUT_S)
                body = json.loads(msg.data)
                body["_headers"] = dict(msg.headers or {})
                body["_msg_id"] = body["_headers"].get("Nats-Msg-Id")
                body["_subject"] = msg.subject
                body["_stream"] = stream
                body["_stored"] = msg.metadata.timestamp.timestamp()  # when JetStream stored it (epoch s)
                out.append(body)
        finally:
            await sub.unsubscribe()
        return out


async def until(
    probe: Callable[[], Awaitable[Any]],
    *,
    timeout: float = WAIT_S,
    interval: float = 0.2,
    what: str = "condition",
) -> Any:
    """Poll `probe` until it returns something truthy (bounded); returns that value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = await probe()
        if got:
            return got
        if loop.time() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:g}s (last: {got!r})")
        await asyncio.sleep(interval)


def feedeater_env(
    home: Path, database_url: str, nats_url: str, *, unset: Sequence[str] = (), **extra: str
) -> dict[str, str]:
    """Environment for a `python -m host.cli` subprocess: our services, loopback feeds allowed (`unset`
    names variables to leave out, e.g. that one, so a stored setting can decide)."""
    # No COLUMNS: output is a pipe here, and a width from the runner's shell would cut tables.
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_") and k != "COLUMNS"}
    env.update(
        FEEDEATER_HOME=str(home),
        FEEDEATER_DATABASE_URL=database_url,
        FEEDEATER_NATS_URL=nats_url,
        FEEDEATER_HTTP_PORT="0",
        FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS="true",
    )
    env.update(extra)
    for name in unset:
        env.pop(name, None)
    return env


FEEDEATER = [sys.executable, "-m", "host.cli"]


@contextlib.contextmanager
def module_installed(site: Path, name: str, target: str) -> Iterator[str]:
    """Register `target` (e.g. "modules.tap:MODULE") under the feedeater.modules entry point `name`, as
    `pip install` of this checkout does once its pyproject lists it, in a directory of its own: for
    this process (removed again on exit, so other tests' hosts don't load it) and the hosts it starts.
    Yields the PYTHONPATH for those hosts."""
    dist = site / f"feedeater_{name}_tests-0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: feedeater-{name}-tests\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[feedeater.modules]\n{name} = {target}\n")
    sys.path.append(str(site))
    try:
        yield os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(site)) if p)
    finally:
        sys.path.remove(str(site))


def feedeater(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the `feedeater` CLI as a user would, in a subprocess."""
    return subprocess.run(
        [*FEEDEATER, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


class HostProcess:
    """A real `feedeater run` process (the deployment unit), which a test may SIGKILL."""

    def __init__(
        self,
        home: Path,
        database_url: str,
        nats_url: str,
        host_id: str,
        *,
        command: Sequence[str] = FEEDEATER,
        isolated: bool = False,
        unset: Sequence[str] = (),
        **extra: str,
    ) -> None:
        """`isolated`: no PYTHONPATH and the home as working directory, so an installed `command`
        cannot import from the source tree."""
        home.mkdir(parents=True, exist_ok=True)
        self.host_id = host_id
        self.log = home / "run.log"
        env = feedeater_env(home, database_url, nats_url, FEEDEATER_HOST_ID=host_id, unset=unset, **extra)
        if isolated:
            env.pop("PYTHONPATH", None)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*command, "run"],
                env=env,
                cwd=home if isolated else None,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        """SIGKILL: no cleanup at all, as in a crash or an OOM kill."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=WAIT_S)  # a graceful stop takes 15-20 s at load 25
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def port(self) -> int | None:
        """The HTTP port the host serves on (its start-up banner says it), or None before it said."""
        found = _BANNER_PORT.search(self.output())
        return int(found.group(1)) if found else None

    async def wait_ready(self, timeout: float = 180) -> dict[str, Any]:
        """Until /healthz answers 200 (database, bus and every unit running); returns its report.
        Raises when the process ends first (its output in the message)."""

        async def probe() -> dict[str, Any] | None:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"feedeater run ended ({self.proc.returncode}):\n{self.output()[-3000:]}"
                )
            port = self.port()
            got = await health(port) if port else None
            return got[1] if got is not None and got[0] == 200 else None

        report: dict[str, Any] = await until(probe, timeout=timeout, what=f"{self.host_id} ready")
        return report


_BANNER_PORT = re.compile(r"^\s*health:\s+http://[^\s/]+:(\d+)/healthz", re.MULTILINE)


async def health(port: int) -> tuple[int, dict[str, Any]] | None:
    """GET /healthz of a host on loopback: (status, report), or None while nothing listens yet."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=5) as client:
            res = await client.get(f"http://127.0.0.1:{port}/healthz")
    except httpx.TransportError:
        return None
    return res.status_code, res.json()


async def pending_events(pool: asyncpg.Pool) -> int:
    return int(await pool.fetchval("SELECT count(*) FROM host.outbox WHERE published_at IS NULL"))


async def publish_event(js: JetStreamContext, event: Event) -> None:
    """Put one event on the bus as a producer does (its JSON body, `Nats-Msg-Id` = its event id), for a
    module's subscription to hear; the bus streams must exist (a host attached to the bus made them).
    JetStream drops a second publish of the same event id (its duplicate window): a producer retrying."""
    ack = await js.publish(event.subject, event.encode(), headers={"Nats-Msg-Id": str(event.event_id)})
    assert ack.stream, f"no stream captured {event.subject}"


@contextlib.asynccontextmanager
async def running(host: Host) -> AsyncIterator[asyncio.Task[None]]:
    """`feedeater run` in this process (the same Host.run), attached to the bus; stopped and closed after."""
    await host.open(connect_bus=False)
    stop_run = asyncio.Event()
    task = asyncio.create_task(host.run(stop_run))
    try:
        assert host.link is not None  # attached: the modules are set up, the relay and consumers start
        await asyncio.wait_for(host.link.attached.wait(), 120)
        yield task
    finally:
        stop_run.set()
        await asyncio.wait_for(task, 60)
        await host.close()
