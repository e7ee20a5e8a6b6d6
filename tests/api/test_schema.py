"""schemathesis: property-test the whole OpenAPI surface against a running host (real database, real
server), writes with a token. Every operation must answer what its OpenAPI document promises: no 5xx,
declared status codes, content types and schemas, validation errors for invalid input."""

from __future__ import annotations

import asyncio
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.config import SchemathesisConfig

from tests.api.conftest import Api
from tests.feedserver import FeedServer, Route, rss
from tests.services import until

EXAMPLES = 12  # per operation: the whole surface stays well under a minute
# Well-formed is not always acceptable: a URL that is not a feed, a date that is not a date, a feed id
# that does not exist in a search filter are 400s the schema cannot express (one JSON error each).
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "413"]
            }
        }
    }
)


@pytest.fixture(scope="module")
async def seeded(api: Api, feeds: FeedServer) -> int:
    """One feed with entries and a raw fetch, so that reads find something besides 404s."""
    items = [(f"s{i}", f"Seeded {i}", None, "text") for i in range(5)]
    feeds.route("/seeded.xml", Route(body=rss(items), headers={"content-type": "application/rss+xml"}))
    res = await api.client.post("/api/v1/feeds", json={"url": feeds.url("/seeded.xml")}, headers=api.auth)
    assert res.status_code == 201, res.text
    feed_id: int = res.json()["id"]
    assert (await api.client.post(f"/api/v1/feeds/{feed_id}/refetch", headers=api.auth)).status_code == 200
    return feed_id


def run_operation(operation: Any, base: str, headers: dict[str, str]) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    def check(case: Any) -> None:
        case.call_and_validate(base_url=base, headers=headers, timeout=30)

    check()


async def test_every_operation_keeps_its_openapi_promises(api: Api, seeded: int) -> None:
    schema = await asyncio.to_thread(schemathesis.openapi.from_url, f"{api.base}/openapi.json", config=CONFIG)
    operations = [result.ok() for result in schema.get_all_operations()]
    paths = {op.path for op in operations}
    assert {
        "/api/v1/feeds/{feed_id}/entries",
        "/api/v1/search",
        "/api/v1/contexts/{key}",
        "/api/v1/opml",
    } <= paths
    for operation in operations:
        await asyncio.to_thread(run_operation, operation, api.base, api.auth)
    # the seeded feed may have been deleted by a generated DELETE; the host must still answer
    await until(lambda: _healthy(api), what="the host still answers")


async def _healthy(api: Api) -> bool:
    return (await api.client.get("/api/v1/feeds")).status_code == 200
