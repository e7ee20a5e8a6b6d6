"""The reader APIs under the host's rules (issue #30): a read-only API token reads but does not change
reading state, and password guessing over Basic auth or ClientLogin meets the console's login throttle.
Its own host: a drained throttle would refuse the other modules' first logins."""

from __future__ import annotations

import httpx

from host import tokens
from tests.api.conftest import Api


async def test_a_read_token_reads_but_does_not_write(api: Api) -> None:
    async with api.host.require_pool().acquire() as conn:
        token = (await tokens.create(conn, "reader-read", scope="read"))["token"]
    headers = {"X-Auth-Token": token}
    assert (await api.client.get("/v1/feeds", headers=headers)).status_code == 200
    refused = await api.client.put("/v1/entries", json={"entry_ids": [1], "status": "read"}, headers=headers)
    assert refused.status_code == 403 and "--scope write" in refused.json()["error_message"]
    greader = {"Authorization": f"Bearer {token}"}
    res = await api.client.post("/reader/api/0/stream/items/contents", data={"i": "1"}, headers=greader)
    assert res.status_code != 403  # reading contents by id is a POST that only reads
    res = await api.client.post(
        "/reader/api/0/edit-tag", data={"i": "1", "a": "user/-/state/com.google/read"}, headers=greader
    )
    assert res.status_code == 403


async def test_password_guessing_meets_the_login_throttle(api: Api, login: tuple[str, str]) -> None:
    statuses = []
    for attempt in range(8):
        res = await api.client.get("/v1/me", auth=httpx.BasicAuth(login[0], f"guess number {attempt}"))
        statuses.append(res.status_code)
        if res.status_code == 429:
            assert int(res.headers["retry-after"]) >= 1
            break
    assert statuses[0] == 401 and statuses[-1] == 429, statuses  # 5 at once, then one every 20 s
    guessed = await api.client.post(
        "/accounts/ClientLogin", data={"Email": login[0], "Passwd": "another guess"}
    )
    assert guessed.status_code == 429  # the same budget for ClientLogin
