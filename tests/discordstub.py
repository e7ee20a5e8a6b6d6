"""A local stand-in for Discord's API (REST + gateway WebSocket) that the real discord.py client talks to.

It implements what the feedeater bot uses: GET /gateway(/bot), /users/@me, /oauth2/applications/@me,
PUT application commands, POST/GET channel messages and GET channel, interaction callbacks and webhook
follow-ups; the gateway speaks HELLO, IDENTIFY/RESUME, READY, GUILD_CREATE (channels, roles, members),
heartbeats + ACK, INTERACTION_CREATE, RECONNECT (op 7) and RESUMED (replaying what was dispatched
while the client was away; `hold_resume` keeps it away). Message creation honours
`enforce_nonce` as Discord does (the same nonce returns the message already created).

Rate limits: every route answers X-RateLimit-* headers of a per-(route, channel) bucket of
`bucket_limit` requests per `bucket_window` seconds; exceeding it is a 429 (a client that reads the
headers never does). `storm(...)` makes the next N matching requests 429 with `retry_after` (route or
global). Every request is recorded with its arrival time, so tests prove the client waited.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

API = "/api/v10"
TOKEN = "stub-token"
BOT_ID = 900000000000000001
APP_ID = 900000000000000002
GUILD_ID = 800000000000000001
EVERYONE = GUILD_ID  # the @everyone role has the guild's id
MANAGER_ROLE = 800000000000000010
OTHER_ROLE = 800000000000000011
GENERAL = 700000000000000001  # text channels
NEWS = 700000000000000002
LOCKED = 700000000000000003  # the bot lacks Send Messages here
ALERTS = 700000000000000004
MANAGER_USER = 600000000000000001
PLAIN_USER = 600000000000000002
VIEW_CHANNEL, SEND_MESSAGES, EMBED_LINKS = 1 << 10, 1 << 11, 1 << 14
EPHEMERAL = 64


def user(uid: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(uid),
        "username": name,
        "discriminator": "0",
        "global_name": name,
        "avatar": None,
        "bot": bot,
    }


def member(uid: int, name: str, roles: list[int], *, bot: bool = False) -> dict[str, Any]:
    return {
        "user": user(uid, name, bot=bot),
        "roles": [str(r) for r in roles],
        "joined_at": "2024-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "permissions": str(VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS),
    }


def channel(
    cid: int, name: str, position: int, overwrites: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "id": str(cid),
        "type": 0,
        "guild_id": str(GUILD_ID),
        "name": name,
        "position": position,
        "permission_overwrites": overwrites or [],
        "parent_id": None,
        "nsfw": False,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "flags": 0,
    }


def role(rid: int, name: str, permissions: int, position: int) -> dict[str, Any]:
    return {
        "id": str(rid),
        "name": name,
        "permissions": str(permissions),
        "position": position,
        "color": 0,
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


@dataclass
class Request:
    at: float  # time.monotonic() on arrival
    method: str
    path: str
    status: int
    body: Any = None
    why: str = ""  # for a 429: "storm" or "bucket"


@dataclass
class Storm:
    pattern: re.Pattern[str]
    remaining: int
    retry_after: float
    is_global: bool


@dataclass
class Session:
    id: str
    ws: web.WebSocketResponse | None
    seq: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)  # dispatches, for RESUME replay


class DiscordStub:
    """Start with `await stub.start()`; `api_base` and `gateway_url` go into the discord.* settings."""

    def __init__(self, *, bucket_limit: int = 5, bucket_window: float = 2.0) -> None:
        self.bucket_limit = bucket_limit
        self.bucket_window = bucket_window
        self.requests: list[Request] = []
        self.messages: dict[int, list[dict[str, Any]]] = {}  # channel id → created messages
        self.callbacks: list[dict[str, Any]] = []  # interaction callbacks and follow-ups, in order
        self.commands: list[dict[str, Any]] = []
        self.fail_after_create = 0  # the next N message creates store the message, then answer 500
        self.nonce_repeats = 0  # message creates answered with the message a nonce already created
        self.identifies = 0
        self.resumes = 0
        self.hold_resume: asyncio.Event | None = None  # set by a test: RESUME waits for it (events pile up)
        self.resumes_held = 0
        self.heartbeats = 0
        self.deleted: set[int] = set()  # channels that answer 404 Unknown Channel
        self.forbidden: set[int] = set()  # channels that answer 403 Missing Permissions
        self.refused: set[str] = set()  # embed titles whose message create answers 400 Invalid Form Body
        self._storms: list[Storm] = []
        self._buckets: dict[str, tuple[float, int]] = {}  # bucket → (window start, requests in it)
        self._ids = itertools.count(int(time.time() * 1000) << 22)
        self._sessions: dict[str, Session] = {}
        self._current: Session | None = None
        self._connected = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.guild = self._guild()

    # ---- control from tests -------------------------------------------------------------------

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}{API}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", API + "/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        for s in self._sessions.values():
            if s.ws is not None:
                await s.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def storm(self, pattern: str, count: int, retry_after: float, *, is_global: bool = False) -> None:
        """The next `count` requests whose "METHOD /path" matches `pattern` answer 429."""
        self._storms.append(Storm(re.compile(pattern), count, retry_after, is_global))

    async def connected(self, timeout: float = 300) -> None:
        """Until a client has identified (or resumed) and has its guild (generous: it may include a
        `feedeater run` starting, which takes a minute at load 25)."""
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def reconnect(self) -> None:
        """Op 7: Discord asks the client to reconnect (and resume)."""
        assert self._current is not None and self._current.ws is not None
        self._connected.clear()
        await self._current.ws.send_json({"op": 7, "d": None})

    async def interact(
        self, user_id: int, sub: str, options: dict[str, Any] | None = None, *, channel_id: int = GENERAL
    ) -> str:
        """Dispatch `/feed <sub> ...` from a member; returns the interaction id."""
        iid = str(next(self._ids))
        member_data = next(m for m in self.guild["members"] if m["user"]["id"] == str(user_id))
        opts = []
        resolved: dict[str, Any] = {}
        for name, value in (options or {}).items():
            if name == "channel":
                opts.append({"type": 7, "name": name, "value": str(value)})
                ch = next(c for c in self.guild["channels"] if c["id"] == str(value))
                resolved.setdefault("channels", {})[str(value)] = {**ch, "permissions": str(SEND_MESSAGES)}
            elif isinstance(value, int):
                opts.append({"type": 4, "name": name, "value": value})
            else:
                opts.append({"type": 3, "name": name, "value": value})
        feed = next(c for c in self.commands if c["name"] == "feed")
        data: dict[str, Any] = {
            "id": feed["id"],
            "name": "feed",
            "type": 1,
            "options": [{"type": 1, "name": sub, "options": opts}],
        }
        if resolved:
            data["resolved"] = resolved
        ch = next(c for c in self.guild["channels"] if c["id"] == str(channel_id))
        await self._dispatch(
            "INTERACTION_CREATE",
            {
                "id": iid,
                "application_id": str(APP_ID),
                "type": 2,
                "data": data,
                "guild_id": str(GUILD_ID),
                "channel_id": str(channel_id),
                "channel": ch,
                "member": member_data,
                "token": f"itoken-{iid}",
                "version": 1,
                "app_permissions": str(VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS),
                "locale": "en-US",
                "guild_locale": "en-US",
                "entitlements": [],
                "authorizing_integration_owners": {"0": str(GUILD_ID)},
                "context": 0,
                "attachment_size_limit": 10 * 1024 * 1024,
            },
        )
        return iid

    def away(self) -> bool:
        """The client's session has no socket and its RESUME is held: dispatches now only queue."""
        return self.resumes_held > 0 and self._current is not None and self._current.ws is None

    def replies(self, iid: str) -> list[dict[str, Any]]:
        """The callback and follow-up bodies sent for one interaction."""
        return [c for c in self.callbacks if c["interaction"] == iid]

    def posted(self, channel_id: int) -> list[dict[str, Any]]:
        return self.messages.get(channel_id, [])

    # ---- the guild ---------------------------------------------------------------------------

    def _guild(self) -> dict[str, Any]:
        deny_send = [{"id": str(BOT_ID), "type": 1, "allow": "0", "deny": str(SEND_MESSAGES)}]
        return {
            "id": str(GUILD_ID),
            "name": "Stub Guild",
            "icon": None,
            "owner_id": str(MANAGER_USER),
            "roles": [
                role(EVERYONE, "@everyone", VIEW_CHANNEL | SEND_MESSAGES | EMBED_LINKS, 0),
                role(MANAGER_ROLE, "Feed Manager", 0, 1),
                role(OTHER_ROLE, "Reader", 0, 2),
            ],
            "channels": [
                channel(GENERAL, "general", 0),
                channel(NEWS, "news", 1),
                channel(LOCKED, "locked", 2, deny_send),
                channel(ALERTS, "alerts", 3),
            ],
            "members": [
                member(BOT_ID, "feedbot", [], bot=True),
                member(MANAGER_USER, "manager", [MANAGER_ROLE]),
                member(PLAIN_USER, "reader", [OTHER_ROLE]),
            ],
            "member_count": 3,
            "features": [],
            "emojis": [],
            "stickers": [],
            "threads": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "voice_states": [],
            "presences": [],
            "large": False,
            "unavailable": False,
            "joined_at": "2024-01-01T00:00:00+00:00",
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "system_channel_flags": 0,
        }

    # ---- gateway -----------------------------------------------------------------------------

    async def _dispatch(self, event: str, data: dict[str, Any]) -> None:
        s = self._current
        assert s is not None, "no gateway session"
        s.seq += 1
        payload = {"op": 0, "t": event, "s": s.seq, "d": data}
        s.sent.append(payload)
        if s.ws is not None and not s.ws.closed:
            await s.ws.send_json(payload)

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 2000}})
        session: Session | None = None
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                break
            frame = json.loads(msg.data)
            op, d = frame["op"], frame.get("d")
            if op == 1:
                self.heartbeats += 1
                await ws.send_json({"op": 11})
            elif op == 2:
                if d["token"] != TOKEN:
                    await ws.close(code=4004, message=b"Authentication failed.")
                    break
                self.identifies += 1
                session = Session(id=f"session-{next(self._ids)}", ws=ws)
                self._sessions[session.id] = session
                self._current = session
                await self._dispatch(
                    "READY",
                    {
                        "v": 10,
                        "user": user(BOT_ID, "feedbot", bot=True),
                        "guilds": [{"id": str(GUILD_ID), "unavailable": True}],
                        "session_id": session.id,
                        "resume_gateway_url": self.gateway_url,
                        "application": {"id": str(APP_ID), "flags": 0},
                        "private_channels": [],
                        "relationships": [],
                    },
                )
                await self._dispatch("GUILD_CREATE", self.guild)
                self._connected.set()
            elif op == 6:
                old = self._sessions.get(d["session_id"])
                if old is None or d["token"] != TOKEN:
                    await ws.send_json({"op": 9, "d": False})  # invalid session: identify again
                    continue
                if self.hold_resume is not None:
                    self.resumes_held += 1
                    await self.hold_resume.wait()
                self.resumes += 1
                old.ws, session, self._current = ws, old, old
                for payload in old.sent:
                    if payload["s"] > int(d["seq"]):
                        await ws.send_json(payload)
                await self._dispatch("RESUMED", {})
                self._connected.set()
        if session is not None and session.ws is ws:
            session.ws = None
        return ws

    # ---- REST --------------------------------------------------------------------------------

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> web.Response:
        # exactly "application/json" (no charset): discord.py decodes JSON only then, as Discord sends it
        return web.Response(
            body=json.dumps(body).encode(),
            status=status,
            headers={"Content-Type": "application/json", "Via": "1.1 google", **(headers or {})},
        )

    def _bucket(self, key: str) -> tuple[bool, dict[str, str]]:
        """(allowed, X-RateLimit headers) for a fixed window of `bucket_limit` requests."""
        now = time.monotonic()
        start, used = self._buckets.get(key, (now, 0))
        if now - start >= self.bucket_window:
            start, used = now, 0
        allowed = used < self.bucket_limit
        used += allowed
        self._buckets[key] = (start, used)
        reset_after = max(0.0, start + self.bucket_window - now)
        headers = {
            "X-RateLimit-Limit": str(self.bucket_limit),
            "X-RateLimit-Remaining": str(self.bucket_limit - used),
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
            "X-RateLimit-Bucket": hashlib.sha1(key.split(":")[0].encode()).hexdigest()[:16],
        }
        return allowed, headers

    async def _rest(self, request: web.Request) -> web.Response:
        at = time.monotonic()
        path = request.path[len(API) :]
        body = await request.json() if request.can_read_body else None
        rec = Request(at, request.method, path, 0, body)
        self.requests.append(rec)
        response = await self._answer(request, path, body)
        rec.status = response.status
        rec.why = response.headers.get("X-Stub-Why", "")
        return response

    async def _answer(self, request: web.Request, path: str, body: Any) -> web.Response:
        tokenless = path.startswith(("/webhooks/", "/interactions/"))  # the interaction token authorizes
        if request.headers.get("Authorization") != f"Bot {TOKEN}" and not tokenless:
            return self._json(401, {"message": "401: Unauthorized", "code": 0})
        line = f"{request.method} {path}"
        for storm in self._storms:
            if storm.remaining > 0 and storm.pattern.search(line):
                storm.remaining -= 1
                headers = {"Retry-After": str(max(1, round(storm.retry_after))), "X-Stub-Why": "storm"}
                if storm.is_global:
                    headers["X-RateLimit-Global"] = "true"
                    headers["X-RateLimit-Scope"] = "global"
                else:
                    headers.update(
                        {
                            "X-RateLimit-Limit": str(self.bucket_limit),
                            "X-RateLimit-Remaining": "0",
                            "X-RateLimit-Reset-After": f"{storm.retry_after:.3f}",
                            "X-RateLimit-Scope": "user",
                        }
                    )
                return self._json(
                    429,
                    {
                        "message": "You are being rate limited.",
                        "retry_after": storm.retry_after,
                        "global": storm.is_global,
                    },
                    headers,
                )
        major = re.match(r"/(channels|guilds|webhooks|interactions)/(\d+)", path)
        bucket_key = re.sub(r"\d{6,}", "{id}", line) + (f":{major[2]}" if major else "")
        allowed, headers = self._bucket(bucket_key)
        if not allowed:
            return self._json(
                429,
                {
                    "message": "You are being rate limited.",
                    "retry_after": float(headers["X-RateLimit-Reset-After"]),
                    "global": False,
                },
                {**headers, "X-RateLimit-Scope": "user", "Retry-After": "1", "X-Stub-Why": "bucket"},
            )
        handler, args = self._route(request.method, path)
        if handler is None:
            return self._json(404, {"message": "404: Not Found", "code": 0}, headers)
        status, out = handler(body, *args)
        if status == 204:
            return web.Response(status=204, headers={"Via": "1.1 google", **headers})
        return self._json(status, out, headers)

    def _route(self, method: str, path: str) -> tuple[Callable[..., tuple[int, Any]] | None, tuple[str, ...]]:
        table: list[tuple[str, str, Callable[..., tuple[int, Any]]]] = [
            (
                "GET",
                r"/gateway(/bot)?",
                lambda _b, _x=None: (
                    200,
                    {
                        "url": self.gateway_url,
                        "shards": 1,
                        "session_start_limit": {
                            "total": 1000,
                            "remaining": 999,
                            "reset_after": 0,
                            "max_concurrency": 1,
                        },
                    },
                ),
            ),
            ("GET", r"/users/@me", lambda _b: (200, user(BOT_ID, "feedbot", bot=True))),
            ("GET", r"/oauth2/applications/@me", lambda _b: (200, self._application())),
            ("PUT", r"/applications/(\d+)/commands", self._bulk_commands),
            ("GET", r"/channels/(\d+)", self._get_channel),
            ("POST", r"/channels/(\d+)/messages", self._create_message),
            ("POST", r"/interactions/(\d+)/([^/]+)/callback", self._callback),
            ("POST", r"/webhooks/(\d+)/([^/]+)", self._followup),
        ]
        for m, pattern, handler in table:
            match = re.fullmatch(pattern, path)
            if m == method and match:
                return handler, tuple(g for g in match.groups() if g is not None and not g.startswith("/"))
        return None, ()

    def _application(self) -> dict[str, Any]:
        return {
            "id": str(APP_ID),
            "name": "feedbot",
            "icon": None,
            "description": "",
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": user(MANAGER_USER, "manager"),
            "verify_key": "0" * 64,
            "flags": 0,
            "team": None,
        }

    def _bulk_commands(self, body: list[dict[str, Any]], app_id: str) -> tuple[int, Any]:
        self.commands = [
            {
                **c,
                "id": str(next(self._ids)),
                "application_id": app_id,
                "version": "1",
                "type": c.get("type", 1),
            }
            for c in body
        ]
        return 200, self.commands

    def _channel_error(self, cid: int) -> tuple[int, Any] | None:
        if cid in self.deleted:
            return 404, {"message": "Unknown Channel", "code": 10003}
        if cid in self.forbidden or cid == LOCKED:
            return 403, {"message": "Missing Permissions", "code": 50013}
        return None

    def _get_channel(self, _body: Any, cid: str) -> tuple[int, Any]:
        if int(cid) in self.deleted:
            return 404, {"message": "Unknown Channel", "code": 10003}
        found = next((c for c in self.guild["channels"] if c["id"] == cid), None)
        return (200, found) if found else (404, {"message": "Unknown Channel", "code": 10003})

    def _message(self, cid: int, body: dict[str, Any], *, flags: int = 0) -> dict[str, Any]:
        return {
            "id": str(next(self._ids)),
            "channel_id": str(cid),
            "guild_id": str(GUILD_ID),
            "author": user(BOT_ID, "feedbot", bot=True),
            "content": body.get("content") or "",
            "timestamp": datetime.now(UTC).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": body.get("embeds") or [],
            "components": [],
            "pinned": False,
            "type": 0,
            "flags": flags,
            "nonce": body.get("nonce"),
        }

    def _create_message(self, body: dict[str, Any], cid: str) -> tuple[int, Any]:
        channel_id = int(cid)
        if (err := self._channel_error(channel_id)) is not None:
            return err
        if any(e.get("title") in self.refused for e in body.get("embeds") or []):
            return 400, {"message": "Invalid Form Body", "code": 50035, "errors": {}}
        posted = self.messages.setdefault(channel_id, [])
        if body.get("enforce_nonce") and body.get("nonce"):
            for m in posted:
                if m["nonce"] == body["nonce"]:
                    self.nonce_repeats += 1
                    return 200, m  # Discord returns the message this nonce already created
        message = self._message(channel_id, body)
        posted.append(message)
        if self.fail_after_create > 0:  # the message exists, but the client never hears so
            self.fail_after_create -= 1
            return 500, {"message": "500: Internal Server Error", "code": 0}
        return 200, message

    def _callback(self, body: dict[str, Any], iid: str, token: str) -> tuple[int, Any]:
        self.callbacks.append({"interaction": iid, "kind": "callback", **body})
        data = body.get("data") or {}
        return 200, {
            "interaction": {
                "id": iid,
                "type": 2,
                "response_message_loading": body.get("type") == 5,
                "response_message_ephemeral": bool(data.get("flags", 0) & EPHEMERAL),
            }
        }

    def _followup(self, body: dict[str, Any], app_id: str, token: str) -> tuple[int, Any]:
        iid = token.removeprefix("itoken-")
        self.callbacks.append({"interaction": iid, "kind": "followup", **body})
        return 200, self._message(GENERAL, body, flags=body.get("flags", 0))
