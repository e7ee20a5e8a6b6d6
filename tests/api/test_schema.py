"""schemathesis: the real CLI with every check (`schemathesis run --checks all`) against a running host
(real database, real server), with a token: examples, coverage (incl. unsupported methods and their
`Allow`), fuzzing (positive and negative data) and stateful phases. Every operation must answer what
its OpenAPI document promises: no 5xx, declared status codes, content types and schemas, validation
errors for schema-violating input, and schema-valid input accepted unless the operation documents the
status it refuses it with (a URL that is no feed, a day that does not exist: an explicit 400)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.api.conftest import Api
from tests.feedserver import FeedServer, Route, rss
from tests.services import until

EXAMPLES = 25  # per operation and phase: the whole run stays around a minute on a loaded machine
SEED = 29
# Refusals any operation may give schema-valid input without saying so: no token, an id that does not
# exist (404), a state conflict (409), a body too large for the host (413).
ALWAYS = ["2xx", "401", "403", "404", "409", "413"]
RUN = "import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())"


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


def documented_refusals(operation: dict[str, Any]) -> list[str]:
    """The 4xx statuses an operation names explicitly (the blanket `4XX` error shape is no promise)."""
    return sorted(code for code in operation.get("responses", {}) if code.isdigit() and code.startswith("4"))


def config(document: dict[str, Any]) -> str:
    """schemathesis.toml: schema-valid data is accepted, or refused with a status the operation documents."""
    lines = ["[checks.positive_data_acceptance]", f"expected-statuses = {json.dumps(ALWAYS)}", ""]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            extra = [c for c in documented_refusals(operation) if c not in ALWAYS]
            if extra:
                lines += [
                    "[[operations]]",
                    f"include-path = {json.dumps(path)}",
                    f'include-method = "{method.upper()}"',
                    f"checks.positive_data_acceptance.expected-statuses = {json.dumps(ALWAYS + extra)}",
                    "",
                ]
    return "\n".join(lines)


async def test_every_operation_keeps_its_openapi_promises(api: Api, seeded: int, tmp_path: Path) -> None:
    document = (await api.client.get("/openapi.json")).json()
    assert {
        "/api/v1/feeds/{feed_id}/entries",
        "/api/v1/search",
        "/api/v1/contexts/{key}",
        "/api/v1/opml",
    } <= set(document["paths"])
    assert not any(p.startswith(("/v1", "/reader", "/accounts")) for p in document["paths"]), (
        "the reader-app protocols are not part of the REST API's document"
    )
    (tmp_path / "schemathesis.toml").write_text(config(document))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        RUN,
        "--config-file",
        str(tmp_path / "schemathesis.toml"),
        "--no-color",
        "run",
        f"{api.base}/openapi.json",
        "--checks",
        "all",
        "-H",
        f"Authorization: Bearer {api.token}",
        "--max-examples",
        str(EXAMPLES),
        "--seed",
        str(SEED),
        "--workers",
        "1",
        "--report-dir",
        str(tmp_path / "report"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=tmp_path,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=900)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-12000:]
    # the seeded feed may have been deleted by a generated DELETE; the host must still answer
    await until(lambda: _healthy(api), what="the host still answers")


async def _healthy(api: Api) -> bool:
    return (await api.client.get("/api/v1/feeds")).status_code == 200
