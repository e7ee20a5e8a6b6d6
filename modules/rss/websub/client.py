"""Requests to a hub (WebSub §5.1): subscribe and unsubscribe, form-encoded POSTs through the fetcher's guard."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from host.net.fetcher import Fetcher


@dataclass(frozen=True, slots=True)
class HubReply:
    accepted: bool  # 202 (or any 2xx): the hub will verify our intent at the callback
    status: int  # 0: no answer (or not asked)
    detail: str

    @property
    def error(self) -> str:
        return f"hub answered {self.status}: {self.detail}" if self.status else self.detail


def callback_url(base: str, token: str) -> str:
    return f"{base.rstrip('/')}/websub/{token}"


async def ask(
    fetcher: Fetcher,
    hub: str,
    *,
    mode: Literal["subscribe", "unsubscribe"],
    topic: str,
    callback: str,
    secret: str | None = None,
    lease_s: int | None = None,
) -> HubReply:
    form = {"hub.mode": mode, "hub.topic": topic, "hub.callback": callback}
    if secret is not None:
        form["hub.secret"] = secret
    if lease_s is not None:
        form["hub.lease_seconds"] = str(lease_s)
    status, detail = await fetcher.post_form(hub, form)
    return HubReply(200 <= status < 300, status, detail if status else f"hub unreachable: {detail}")
