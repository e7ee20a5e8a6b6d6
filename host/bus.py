"""NATS JetStream: the connection (one server or a cluster), the streams feedeater owns, and publishing
with JetStream's answer read exactly (no stream, another stream, stream full, stored).

The layout of the streams is host/streams.py. `ensure_streams` creates them or brings them to the
configured limits and replicas; it is idempotent, so the outbox relay also calls it to repair a stream
that someone deleted or narrowed while we run.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from host import streams
from host.backoff import Backoff
from host.errors import UserError
from host.redact import redact

log = logging.getLogger("feedeater.bus")

DEFAULT_MAX_AGE_DAYS = 30  # FeedEater's archiver's default for feedeater_bus too
DEFAULT_MAX_BYTES_MB = 1024  # per stream; JetStream reserves it on every replica's server at creation
DLQ_MAX_AGE_S = 90 * 24 * 3600
# JetStream drops a repeated Nats-Msg-Id inside this window: it must outlast any outage between
# "published" and "marked published" in the outbox (a crash, a restart).
DUPLICATE_WINDOW_S = 24 * 3600
API_TIMEOUT_S = 5.0
NS = 1_000_000_000
CLUSTER_REPLICAS = 3  # `bus_replicas = 0` (auto): R3 when the server pool has three or more servers


def servers(url: str) -> list[str]:
    """The servers of FEEDEATER_NATS_URL: one URL or several separated by commas (a cluster)."""
    out = [s.strip() for s in url.split(",") if s.strip()]
    return [s if "://" in s else f"nats://{s}" for s in out]


async def connect(url: str, *, name: str = "feedeater", connect_timeout: float = 5) -> Client:
    """Connect to any of the servers, reconnecting forever once connected (to any server of the
    cluster it learns of); a clear error if no server answers the first time."""

    async def _quiet(_exc: Exception) -> None:  # nats-py logs to stderr without a callback
        log.debug("nats: %s", _exc)

    pool = servers(url)
    if not await _any_reachable(pool, connect_timeout):
        raise UserError(
            f"cannot connect to NATS at {redact(url)}: no server answered",
            "check FEEDEATER_NATS_URL, or unset it to use the embedded nats-server",
        )
    try:
        return await nats.connect(
            pool,
            **credentials(pool),
            name=name,
            connect_timeout=connect_timeout,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            allow_reconnect=True,
            error_cb=_quiet,
        )
    except Exception as exc:
        raise UserError(
            f"cannot connect to NATS at {redact(url)}: {exc or type(exc).__name__}",
            "check FEEDEATER_NATS_URL, or unset it to use the embedded nats-server",
        ) from None


def known_servers(nc: Client) -> int:
    """How many servers the client knows: the URL's and those the cluster advertises (the same server
    may be in the pool twice, with and without credentials)."""
    return len({(uri.hostname, uri.port) for uri in nc.servers})


def credentials(pool: list[str]) -> dict[str, str]:
    """The token, or user and password, of the first server URL that has them, as connect options (pure):
    nats-py takes them from the URL of the server it connects to, and the servers a cluster advertises
    come without them, so a reconnect to one of those would be refused."""
    for server in pool:
        parts = urlsplit(server)
        if parts.password is not None and parts.username is not None:
            return {"user": parts.username, "password": parts.password}
        if parts.username:
            return {"token": parts.username}
    return {}


async def _any_reachable(pool: list[str], timeout: float) -> bool:
    """TCP pre-check: nats-py retries an unreachable first server forever when reconnects are allowed."""
    for server in pool:
        parsed = urlsplit(server)
        try:
            _reader, writer = await asyncio.wait_for(
                asyncio.open_connection(parsed.hostname, parsed.port or 4222), timeout
            )
        except (OSError, TimeoutError):
            continue
        writer.close()
        return True
    return False


# -- streams -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BusLimits:
    """How the streams are kept: replicas, and the limits that bound their storage."""

    replicas: int = 1
    max_age_s: float = DEFAULT_MAX_AGE_DAYS * 86400
    max_bytes: int = DEFAULT_MAX_BYTES_MB * 2**20  # per stream; -1 = no limit

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], known_servers: int) -> BusLimits:
        """From the host settings; `bus_replicas` 0 chooses by the size of the server pool (pure)."""
        replicas = int(settings["bus_replicas"]) or (
            CLUSTER_REPLICAS if known_servers >= CLUSTER_REPLICAS else 1
        )
        megabytes = int(settings["bus_max_bytes_mb"])
        return cls(
            replicas=replicas,
            max_age_s=float(settings["bus_max_age_days"]) * 86400,
            max_bytes=megabytes * 2**20 if megabytes > 0 else -1,
        )


class ApiError(Exception):
    """An error answer of the JetStream API, with its code."""

    def __init__(self, err_code: int, description: str) -> None:
        super().__init__(description)
        self.err_code = err_code
        self.description = description


STREAM_NOT_FOUND = 10059
STREAM_NAME_IN_USE = 10058


async def api(nc: Client, operation: str, body: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One JetStream API request with the configuration as raw JSON: an update keeps every field the
    server knows, including ones this client library does not model."""
    payload = json.dumps(body).encode() if body is not None else b""
    msg = await nc.request(f"$JS.API.{operation}", payload, timeout=API_TIMEOUT_S)
    answer: dict[str, Any] = json.loads(msg.data)
    if error := answer.get("error"):
        raise ApiError(int(error.get("err_code") or 0), str(error.get("description") or error))
    return answer


async def stream_config(nc: Client, name: str) -> dict[str, Any] | None:
    try:
        answer = await api(nc, f"STREAM.INFO.{name}")
    except ApiError as exc:
        if exc.err_code == STREAM_NOT_FOUND:
            return None
        raise
    config: dict[str, Any] = answer["config"]
    return config


def desired(name: str, subjects: Collection[str], limits: BusLimits) -> dict[str, Any]:
    """A new stream's configuration (pure). Discard `new`: a full stream refuses events, which then wait
    in the outbox (and say so) instead of older events disappearing from under lagging consumers."""
    return {
        "name": name,
        "subjects": sorted(subjects),
        "storage": "file",
        "retention": "limits",
        "discard": "new",
        "max_age": int((DLQ_MAX_AGE_S if name == streams.DLQ else limits.max_age_s) * NS),
        "max_bytes": limits.max_bytes,
        "duplicate_window": DUPLICATE_WINDOW_S * NS,
        "num_replicas": limits.replicas,
    }


def reconciled(existing: Mapping[str, Any], want: Mapping[str, Any], *, shared: bool) -> dict[str, Any]:
    """An existing stream's configuration brought to ours (pure): subjects are only ever added (the shared
    stream gets only what no pattern of it covers), limits and replicas are set, the duplicate window
    only grown; storage and retention stay as they are (JetStream cannot change them)."""
    out = dict(existing)
    have = list(existing.get("subjects") or [])
    missing = [s for s in want["subjects"] if s not in have and not (shared and streams.covered(s, have))]
    out["subjects"] = have + missing
    for key in ("discard", "max_age", "max_bytes", "num_replicas"):
        out[key] = want[key]
    out["duplicate_window"] = max(int(existing.get("duplicate_window") or 0), want["duplicate_window"])
    return out


async def ensure_streams(nc: Client, layout: streams.Plan, limits: BusLimits) -> list[str]:
    """Create the streams or bring them to the plan, the limits and the replicas; returns what changed.

    An older feedeater kept all its subjects in the shared stream: those of its own stream are taken
    out of the shared one first (a subject may be in one stream only). Their stored events stay there,
    and the subscriptions read them to the end (host/consumers.py).
    """
    changes: list[str] = []
    shared = await stream_config(nc, streams.SHARED)
    ours = set(layout.get(streams.EVENTS, ()))
    if shared is not None and (moving := [s for s in shared.get("subjects") or [] if s in ours]):
        shared["subjects"] = [s for s in shared["subjects"] if s not in ours]
        await _call(nc, f"STREAM.UPDATE.{streams.SHARED}", shared, limits)
        changes.append(f"moved {', '.join(moving)} from {streams.SHARED} to {streams.EVENTS}")
    for name, subjects in layout.items():
        want = desired(name, subjects, limits)
        for _attempt in range(3):  # another host may create the same stream between our two requests
            existing = await stream_config(nc, name)
            try:
                if existing is None:
                    await _call(nc, f"STREAM.CREATE.{name}", want, limits)
                    changes.append(f"created stream {name}")
                else:
                    update = reconciled(existing, want, shared=name == streams.SHARED)
                    if update != existing:
                        await _call(nc, f"STREAM.UPDATE.{name}", update, limits)
                        changes.append(f"updated stream {name}")
            except ApiError as exc:
                if exc.err_code == STREAM_NAME_IN_USE:
                    continue
                raise
            break
    return changes


async def _call(nc: Client, operation: str, config: Mapping[str, Any], limits: BusLimits) -> None:
    """A create or update; JetStream's refusals become one line that says what to change."""
    name = str(config["name"])
    try:
        await api(nc, operation, config)
    except ApiError as exc:
        if exc.err_code == STREAM_NAME_IN_USE:
            raise
        text, fix = exc.description, "check the NATS server's JetStream configuration and its log"
        if "insufficient" in text.lower():
            fix = (
                f"every replica's server reserves max bytes ({limits.max_bytes // 2**20} MB) for each stream: "
                "lower the setting host.bus_max_bytes_mb, or give JetStream more storage"
            )
        elif "overlap" in text.lower():
            holders = await _streams_capturing(nc, config.get("subjects") or [], exclude=name)
            fix = f"remove feedeater's subjects from stream(s) {', '.join(holders) or '?'}"
        raise UserError(f"JetStream refused stream {name}: {text}", fix) from None


async def _streams_capturing(nc: Client, subjects: Collection[str], *, exclude: str) -> list[str]:
    found: set[str] = set()
    for subject in subjects:
        with contextlib.suppress(ApiError, TimeoutError):
            answer = await api(nc, "STREAM.NAMES", {"subject": subject})
            found |= set(answer.get("streams") or [])
    return sorted(found - {exclude})


# -- publishing --------------------------------------------------------------------------------------


class Refused(Exception):
    """JetStream did not store an event. `stuck`: it will not take events of this subject until
    something changes (no stream captures it, another stream does, the stream is full), as opposed
    to a timeout or an election, which time alone heals; `misrouted`: a stream of ours is missing or
    narrowed, which `ensure_streams` may repair."""

    def __init__(self, reason: str, *, stuck: bool, misrouted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stuck = stuck
        self.misrouted = misrouted


WRONG_STREAM = 10060
# JetStream's publish errors that no retry alone can heal (nats-server errors.json)
_STUCK = {
    WRONG_STREAM: "another stream captures the subject",
    10077: "the stream refused it",  # store failed: maximum bytes / messages exceeded
    10054: "the event is larger than the stream allows",
    10023: "the servers have no room",
}
FULL_HINT = (
    "events wait in the outbox until older ones expire (host.bus_max_age_days) or the limit "
    "(host.bus_max_bytes_mb) is raised"
)


def refusal(answer: Mapping[str, Any]) -> Refused:
    """The JetStream error answer to a publish, as a Refused (pure)."""
    code = int(answer.get("err_code") or 0)
    description = str(answer.get("description") or "error")
    if code not in _STUCK:
        return Refused(f"JetStream: {description}", stuck=False)
    reason = f"{_STUCK[code]} ({description})"
    if "maximum" in description and code == 10077:
        reason += f": {FULL_HINT}"
    return Refused(reason, stuck=True, misrouted=code == WRONG_STREAM)


NO_STREAM = "no stream answered (none captures the subject, or its stream is electing a leader)"


class Publisher:
    """Publishes to JetStream with a reply inbox of its own and hands back each answer as the stream
    sequence or a Refused. nats-py's `publish_async` raises JetStream's error answers inside its reply
    callback, so the caller only ever saw a timeout instead of "no stream" or "stream full"."""

    def __init__(self, js: JetStreamContext) -> None:
        self.nc: Client = js._nc  # the context's connection (nats-py exposes no public accessor)
        self._prefix = ""
        self._tokens = itertools.count()
        self._waiting: dict[str, asyncio.Future[int]] = {}

    async def publish(
        self, subject: str, payload: bytes, *, msg_id: str, stream: str | None
    ) -> asyncio.Future[int]:
        """Send one event (in call order); the future gives its stream sequence or raises Refused."""
        if not self._prefix:
            self._prefix = f"{self.nc.new_inbox()}."
            await self.nc.subscribe(f"{self._prefix}*", cb=self._answer)
        token = str(next(self._tokens))
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        headers = {"Nats-Msg-Id": msg_id}
        if stream is not None:
            headers["Nats-Expected-Stream"] = stream
        self._waiting[token] = future
        try:
            await self.nc.publish(subject, payload, reply=f"{self._prefix}{token}", headers=headers)
        except BaseException:
            del self._waiting[token]
            raise
        future.add_done_callback(lambda _: self._waiting.pop(token, None))
        return future

    async def _answer(self, msg: Msg) -> None:
        future = self._waiting.pop(msg.subject[len(self._prefix) :], None)
        if future is None or future.done():
            return
        if msg.headers and msg.headers.get("Status") == "503":
            future.set_exception(Refused(NO_STREAM, stuck=True, misrouted=True))
            return
        try:
            answer = json.loads(msg.data)
        except ValueError:
            future.set_exception(Refused(f"unreadable answer {msg.data[:80]!r}", stuck=False))
            return
        if error := answer.get("error"):
            future.set_exception(refusal(error))
        else:
            future.set_result(int(answer.get("seq") or 0))


# -- the host's link ---------------------------------------------------------------------------------


class BusLink:
    """The host's NATS connection, made in the background so `feedeater run` starts and ingests while
    NATS is unreachable: events wait in the outbox and bus users start once `attached` is set."""

    def __init__(self, url: str, *, name: str, prepare: Callable[[Client], Awaitable[object]]) -> None:
        self.url = url
        self.name = name
        self.prepare = prepare  # streams to create once connected
        self.nc: Client | None = None
        self.js: JetStreamContext | None = None
        self.attached = asyncio.Event()
        self.problem = "not connected yet"

    async def attach(self, stop: asyncio.Event, *, max_delay: float = 30.0) -> bool:
        """Connect with growing pauses until connected (True) or `stop` (False); nats-py reconnects after."""
        backoff, attempts = Backoff(0.5, max_delay), 0
        while not stop.is_set():
            nc: Client | None = None
            try:
                nc = await connect(self.url, name=self.name)
                await self.prepare(nc)
            except Exception as exc:
                self.problem = str(exc) or type(exc).__name__
                if nc is not None:
                    with contextlib.suppress(Exception):
                        await nc.close()
            else:
                self.nc, self.js = nc, nc.jetstream()
                self.attached.set()
                log.info("attached to NATS at %s", redact(self.url))
                return True
            attempts += 1
            delay = backoff.delay(attempts)
            log.warning(
                "NATS not available (%s); events wait in the outbox; retrying in %.1fs", self.problem, delay
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)
        return False

    def trouble(self) -> str | None:
        """Why the bus is not usable right now, or None when it is."""
        if self.nc is None:
            return f"NATS not attached: {self.problem}"
        if not self.nc.is_connected:
            return "NATS connection lost: reconnecting; events wait in the outbox"
        return None
