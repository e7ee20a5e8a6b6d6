"""The digest's decisions over REST: GET /api/v1/digest/articles/{ref}, /clusters/{id}, /explain."""

from __future__ import annotations

from tests.api.conftest import Api
from tests.digest.test_inspect import stored


async def test_decisions_over_rest(api: Api) -> None:
    ids = await stored(api.host)
    got = await api.client.get(f"/api/v1/digest/articles/{ids['copy']}")
    assert got.status_code == 200, got.text
    body = got.json()
    assert (body["disposition"], body["layer"], body["matched"]["id"]) == (
        "exact_duplicate",
        "content",
        ids["original"],
    )
    assert body["guid"] == "guid-2" and body["history"][0]["details"]
    original = (await api.client.get("/api/v1/digest/articles/00000000-0000-0000-0000-000000000001")).json()
    assert [h["disposition"] for h in original["history"]] == ["unique", "revision"]
    cluster = (await api.client.get(f"/api/v1/digest/clusters/{ids['original']}")).json()
    assert [a["id"] for a in cluster["articles"]] == [ids["original"], ids["copy"]]
    assert [s["id"] for s in cluster["event_stories"]] == [ids["coverage"]]
    explained = await api.client.get(
        "/api/v1/digest/explain", params={"a": ids["original"], "b": ids["coverage"]}
    )
    assert explained.json()["same_event"] is True and not explained.json()["same_story"]
    missing = await api.client.get("/api/v1/digest/articles/999999999")
    assert missing.status_code == 404 and missing.json()["fix"]
