"""The console's own pages: login/logout, overview, contexts, settings and the live bus."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse

from host import contexts, livesettings, settings
from host.console import auth, forms, live, overview, svg, throttle
from host.console.render import page
from host.console.security import Refused, guard, set_cookie
from host.web.gate import client_of

if TYPE_CHECKING:
    from host.console.hostview import ConsoleHost

log = logging.getLogger("feedeater.console")


def _safe_next(raw: Any) -> str:
    """Only a path on this console (never `//evil` or a URL) after login."""
    text = str(raw or "/")
    return text if text.startswith("/") and not text.startswith("//") and "\\" not in text else "/"


def build(host: ConsoleHost) -> APIRouter:
    router = APIRouter(dependencies=[Depends(guard)], include_in_schema=False)

    @router.get("/login")
    async def login_form(request: Request, next: str = "/") -> HTMLResponse:
        return page(request, "login.html", title="Log in", next=_safe_next(next), error=None)

    verifying = asyncio.Semaphore(throttle.CONCURRENT)

    @router.post("/login", response_model=None)
    async def login(request: Request) -> Response:
        form = await request.form()
        state = await _auth_state(host)
        target = _safe_next(form.get("next"))
        if state.password_hash is None:
            return RedirectResponse(target, 303)
        # argon2 is slow on purpose: a few verifications at once, each in a thread, at a bounded rate.
        client = client_of(request.scope)
        wait = 1.0 if verifying.locked() else request.app.state.console.logins.admit(client.address)
        if wait > 0:
            return page(
                request,
                "login.html",
                429,
                headers={"Retry-After": str(math.ceil(wait))},
                title="Log in",
                next=target,
                error=f"Too many login attempts. Try again in {math.ceil(wait)} s.",
            )
        async with verifying:
            ok = await asyncio.to_thread(auth.verify, state.password_hash, str(form.get("password") or ""))
        if not ok:
            log.warning("console login from %s: wrong password", client.address)  # at the throttle's rate
            return page(request, "login.html", 401, title="Log in", next=target, error="Wrong password.")
        async with host.require_pool().acquire() as conn:
            set_cookie(request, await auth.start_session(conn))
        return RedirectResponse(target, 303)

    @router.post("/logout")
    async def logout(request: Request) -> RedirectResponse:
        async with host.require_pool().acquire() as conn:
            await auth.end_session(conn, request.state.session_token)
        set_cookie(request, auth.new_token())
        return RedirectResponse("/login" if request.state.viewer.password_set else "/", 303)

    @router.get("/")
    async def overview_page(request: Request) -> HTMLResponse:
        o = await overview.load(host)
        return page(
            request,
            "overview.html",
            title="Overview",
            o=o,
            rates=[
                (
                    unit,
                    sum(counts[-5:]) / 300,
                    svg.sparkline([n / 60 for n in counts], label=f"{unit}/s, last hour"),
                )
                for unit, counts in [*o.throughput, ("events", o.events_per_minute)]
            ],
        )

    @router.get("/contexts")
    async def contexts_page(request: Request) -> HTMLResponse:
        async with host.require_pool().acquire() as conn:
            rows = await contexts.list_all(conn)
            linked = {
                (r["owner_module"], r["source_key"]): await contexts.messages(
                    conn, r["owner_module"], r["source_key"], limit=5
                )
                for r in rows[:50]
            }
        return page(
            request, "contexts.html", title="Contexts", rows=rows[:50], linked=linked, total=len(rows)
        )

    @router.get("/settings")
    async def settings_page(request: Request) -> HTMLResponse:
        return page(
            request,
            "settings.html",
            title="Settings",
            modules=await _forms(host),
            saved=None,
            hosts=await livesettings.running_hosts(host.require_pool()),
        )

    @router.post("/settings/{name}", response_model=None)
    async def save_settings(request: Request, name: str) -> Response:
        spec = host.specs.get(name)
        if spec is None:
            raise Refused(f"no module {name!r}")
        form = {k: str(v) for k, v in (await request.form()).items()}
        raw = forms.read(spec.manifest, form)
        current = await host.resolved_settings(name)
        changes, errors = forms.validate(spec.manifest, current, host.env, raw)
        if errors:
            modules = await _forms(host, name, raw, errors)
            return page(
                request, "settings.html", 400, title="Settings", modules=modules, saved=None, hosts=[]
            )
        async with host.require_pool().acquire() as conn, conn.transaction():
            for key, text in changes.items():
                await settings.store(conn, spec.manifest, key, text)
        return RedirectResponse(f"/settings?saved={name}&n={len(changes)}#module-{name}", 303)

    @router.get("/live")
    async def live_page(request: Request, subject: str = live.ROOT) -> HTMLResponse:
        valid = live.subject_filter(subject)
        return page(
            request,
            "live.html",
            200 if valid else 400,
            title="Live bus",
            subject=subject,
            valid=valid is not None,
        )

    @router.get("/live/stream", response_model=None)
    async def live_stream(subject: str = live.ROOT) -> Response:
        valid = live.subject_filter(subject)
        if valid is None:
            return Response("not a feedeater subject", 400, media_type="text/plain")
        return StreamingResponse(
            live.stream(host.nc, valid),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return router


async def _auth_state(host: ConsoleHost) -> auth.AuthState:
    async with host.require_pool().acquire() as conn:
        return await auth.load(conn)


async def _forms(
    host: ConsoleHost,
    failed: str | None = None,
    raw: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
) -> list[tuple[str, list[forms.Field]]]:
    out = []
    for name, spec in host.specs.items():
        if not spec.manifest.settings:
            continue
        current = await host.resolved_settings(name)
        mine = name == failed
        out.append(
            (
                name,
                forms.fields(
                    spec.manifest,
                    current,
                    host.env,
                    submitted=raw if mine else None,
                    errors=errors if mine else None,
                ),
            )
        )
    return out
