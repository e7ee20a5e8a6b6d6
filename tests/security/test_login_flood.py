"""Issue #30, finding 5: a flood of console logins must not freeze the host. argon2 (64 MiB, ~0.1 s of
CPU) runs in a thread, at most a few at once; attempts beyond that, and beyond the per-client and
overall rates, are refused with 429 at once.

No timed assertions: the verification is held open on purpose (a stand-in that waits for the test's
signal and then calls the real argon2) and the test checks what the host does meanwhile."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

from host.console import auth, throttle
from tests.security.conftest import Web
from tests.services import until

PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module", autouse=True)
async def password(web: Web) -> None:
    async with web.host.require_pool().acquire() as conn:
        await auth.set_password(conn, PASSWORD)


@pytest.fixture(autouse=True)
def frozen_throttle(web: Web) -> None:
    """Every test starts with full buckets on a clock that stands still: nothing refills while it runs,
    so the counts do not depend on how fast the machine is."""
    console = web.host.http_app.state.console
    web.host.http_app.state.console = dataclasses.replace(console, logins=throttle.LoginThrottle(lambda: 0.0))


class HeldVerify:
    """Stands in for auth.verify: records the thread it runs in and waits for `release` first."""

    def __init__(self, real: Callable[[str, str], bool]) -> None:
        self.real = real
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        self.running = 0
        self.threads: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, password_hash: str, password: str) -> bool:
        with self.lock:
            self.threads.append(threading.get_ident())
            self.running += 1
        self.entered.release()
        try:
            self.release.wait(timeout=60)  # old code: this blocks the event loop itself
            return self.real(password_hash, password)
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldVerify]:
    stand_in = HeldVerify(auth.verify)
    monkeypatch.setattr(auth, "verify", stand_in)
    yield stand_in
    stand_in.release.set()


async def login_form(client: httpx.AsyncClient) -> dict[str, str]:
    page = await client.get("/login")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found is not None, page.text
    return {"csrf": found[1], "next": "/"}


@pytest.fixture
async def client(web: Web) -> AsyncIterator[httpx.AsyncClient]:
    async with web.client() as c:
        yield c


async def test_argon2_runs_off_the_event_loop(web: Web, client: httpx.AsyncClient, held: HeldVerify) -> None:
    """While a verification is in progress the host answers everything else: /healthz comes back
    before the verification is allowed to finish."""
    form = await login_form(client)
    attempt = asyncio.create_task(client.post("/login", data={**form, "password": "wrong guess"}))
    await until(lambda: _running(held, 1), timeout=60, what="a verification in progress")
    health = await client.get("/healthz")
    assert health.status_code in (200, 503)
    assert held.running == 1 and not attempt.done(), "the verification was over before /healthz answered"
    assert threading.main_thread().ident not in held.threads  # the loop runs in the main thread
    held.release.set()
    assert (await attempt).status_code == 401


async def test_attempts_beyond_the_concurrent_limit_are_refused_at_once(
    web: Web, client: httpx.AsyncClient, held: HeldVerify
) -> None:
    form = await login_form(client)
    proxied = [{"X-Forwarded-For": f"192.0.2.{i}"} for i in range(1, 10)]  # one client each
    busy = [
        asyncio.create_task(client.post("/login", data={**form, "password": "guess"}, headers=proxied[i]))
        for i in range(throttle.CONCURRENT)
    ]
    await until(lambda: _running(held, throttle.CONCURRENT), timeout=60, what="verifications in progress")
    more = await asyncio.gather(
        *(
            client.post("/login", data={**form, "password": "guess"}, headers=h)
            for h in proxied[throttle.CONCURRENT :]
        )
    )
    assert [r.status_code for r in more] == [429] * len(more)
    assert all(int(r.headers["retry-after"]) >= 1 for r in more)
    assert held.running == throttle.CONCURRENT and len(held.threads) == throttle.CONCURRENT
    held.release.set()
    assert [(await t).status_code for t in busy] == [401] * throttle.CONCURRENT


async def test_one_client_is_slowed_down_and_the_others_are_not(web: Web, client: httpx.AsyncClient) -> None:
    form = await login_form(client)
    guesser = {"X-Forwarded-For": "198.51.100.1"}
    burst = throttle.PER_CLIENT[1]
    answers = [
        (await client.post("/login", data={**form, "password": f"guess {i}"}, headers=guesser)).status_code
        for i in range(burst + 2)
    ]
    assert answers == [401] * burst + [429, 429]
    async with web.client() as second:  # another browser: a login rotates the session (and its CSRF)
        other = await second.post(
            "/login",
            data={**await login_form(second), "password": PASSWORD},
            headers={"X-Forwarded-For": "198.51.100.2"},
        )
    assert other.status_code == 303  # the right password, from another client
    # The same guesser with the right password still waits: the limit counts attempts, not failures.
    late = await client.post("/login", data={**form, "password": PASSWORD}, headers=guesser)
    assert late.status_code == 429


async def test_every_client_together_is_limited(
    web: Web, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "verify", lambda _hash, _password: False)  # the rate is under test, not argon2
    form = await login_form(client)
    overall = throttle.OVERALL[1]
    statuses = [
        (
            await client.post(
                "/login",
                data={**form, "password": "x"},
                headers={"X-Forwarded-For": f"10.0.{i // 250}.{i % 250}"},
            )
        ).status_code
        for i in range(overall + 5)
    ]
    assert statuses == [401] * overall + [429] * 5


async def _running(held: HeldVerify, n: int) -> bool:
    return held.running >= n
