"""The Discord module end to end: the stand-in API, a feed server and real `feedeater run` processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from tests import discordstub
from tests.discordstub import DiscordStub
from tests.feedserver import FeedServer
from tests.services import HostProcess, make_host, module_installed, reset_stream, until

RUN_ENV = {
    "FEEDEATER_JOB_RSS_POLL": "1s",
    "FEEDEATER_RSS_PARSE_WORKERS": "0",
    "FEEDEATER_DISCORD_BOT_TOKEN": discordstub.TOKEN,
    "FEEDEATER_DISCORD_POST_INTERVAL_SECONDS": "0.5",
}


def discord_installed(site: Path) -> AbstractContextManager[str]:
    """modules.discord registered for this process and the hosts it starts (tests.services.module_installed)."""
    return module_installed(site, "discord", "modules.discord:MODULE")


@dataclass
class Rig:
    tmp: Path
    database_url: str
    nats_url: str
    stub: DiscordStub
    feeds: FeedServer
    pool: asyncpg.Pool
    env: dict[str, str]
    hosts: list[HostProcess] = field(default_factory=list)

    def start_host(self, name: str = "a", **extra: str) -> HostProcess:
        host = HostProcess(
            self.tmp / name, self.database_url, self.nats_url, f"host-{name}", **{**self.env, **extra}
        )
        self.hosts.append(host)
        return host

    async def command(
        self, user_id: int, sub: str, options: dict[str, Any] | None = None, **kw: Any
    ) -> list[dict[str, Any]]:
        """Dispatch a command and wait for its final reply (the callback, or the follow-up after a defer)."""
        return await self.reply(await self.stub.interact(user_id, sub, options, **kw), sub)

    async def reply(self, iid: str, sub: str) -> list[dict[str, Any]]:
        """The final reply to interaction `iid`, once it came."""

        async def final() -> list[dict[str, Any]] | None:
            got = self.stub.replies(iid)
            done = any(r["kind"] == "followup" or r.get("type") == 4 for r in got)
            return got if done else None

        return await until(final, what=f"the reply to /feed {sub}")

    async def has_posted(self, channel_id: int, n: int) -> bool:
        return len(self.stub.posted(channel_id)) >= n

    async def commands_registered(self) -> bool:
        return bool(self.stub.commands)

    async def connect(self, name: str = "a", **extra: str) -> HostProcess:
        """Start a host and wait until its bot is on the gateway with the /feed command registered."""
        host = self.start_host(name, **extra)
        await self.stub.connected()
        await until(self.commands_registered, what="the /feed command registered")
        return host

    async def poll_now(self) -> None:
        """Make every rss feed due (its adaptive interval would wait minutes). Waits first for polls in
        flight (a just-added feed's first poll): one finishing after the UPDATE would push its feed back."""
        idle = """SELECT count(*) = 0 FROM mod_rss.poll_state
                  WHERE last_polled_at IS NULL OR lease_until > now()"""
        await until(lambda: self.pool.fetchval(idle), what="every feed polled, none in flight")
        await self.pool.execute("UPDATE mod_rss.poll_state SET next_poll_at = now()")

    async def posted_titles(self, channel_id: int) -> list[str]:
        return [m["embeds"][0]["title"] for m in self.stub.posted(channel_id) if m["embeds"]]


def reply_text(replies: list[dict[str, Any]]) -> str:
    last = replies[-1]
    return str((last.get("data") or last).get("content") or "")


def ephemeral(replies: list[dict[str, Any]]) -> bool:
    return all(((r.get("data") or r).get("flags", 0) & discordstub.EPHEMERAL) for r in replies)


@asynccontextmanager
async def rig(tmp: Path, database_url: str, nats_url: str, **stub_kw: Any) -> AsyncIterator[Rig]:
    await reset_stream(nats_url)
    stub = DiscordStub(**stub_kw)
    await stub.start()
    r: Rig | None = None
    with discord_installed(tmp / "site") as pythonpath:
        env = {
            **RUN_ENV,
            "FEEDEATER_DISCORD_API_BASE": stub.api_base,
            "FEEDEATER_DISCORD_GATEWAY_URL": stub.gateway_url,
            "PYTHONPATH": pythonpath,
        }
        setup = make_host(tmp / "setup", database_url, nats_url)
        await setup.open(with_bus=False)  # migrations (rss, discord) before any host runs
    try:
        with FeedServer() as feeds:
            r = Rig(tmp, database_url, nats_url, stub, feeds, setup.require_pool(), env)
            yield r
    finally:
        if r is not None:
            for h in r.hosts:
                h.stop()
                print(f"---- {h.host_id} ----\n{h.output()[-6000:]}")  # shown when the test fails
        await setup.close()
        await stub.stop()
