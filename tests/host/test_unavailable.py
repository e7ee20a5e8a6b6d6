"""A service that does not answer (PostgreSQL, NATS, a timeout) is one log line and, over HTTP, a 503 with
the usual error body; a bug keeps its traceback and its 500. Seen under load 27: a pool connect timed out
inside a job and the host logged a traceback for code that had done nothing wrong."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import asyncpg
import nats.errors
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from host import jobs
from host.errors import unavailable
from host.module import Job, ModuleContext
from host.runtime import Host
from host.web import errors


@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError(),
        ConnectionRefusedError(),
        asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
        nats.errors.NoServersError(),
        nats.errors.TimeoutError(),
        nats.errors.ConnectionClosedError(),
    ],
    ids=type,
)
def test_services_that_did_not_answer_are_unavailable(exc: BaseException) -> None:
    assert unavailable(exc)


@pytest.mark.parametrize(
    "exc",
    [ValueError("bad"), KeyError("k"), asyncpg.exceptions.UndefinedTableError("no table"), AssertionError()],
    ids=type,
)
def test_bugs_and_sql_errors_are_not(exc: BaseException) -> None:
    assert not unavailable(exc)


def failing(exc: Exception) -> Job:
    async def handler(_ctx: ModuleContext) -> Mapping[str, Any]:
        raise exc

    return Job("failing", handler, "60s")


async def test_a_job_that_met_an_unavailable_service_logs_one_line_and_a_bug_its_traceback(
    host: Host, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = await host.context("rss")
    caplog.set_level(logging.ERROR, logger="feedeater")
    timeout = await jobs.run_job(ctx, failing(TimeoutError()), trigger="test")
    bug = await jobs.run_job(ctx, failing(ValueError("a bug")), trigger="test")
    assert timeout.status == bug.status == "failed"
    records = {
        r.getMessage(): r for r in caplog.records if r.getMessage().startswith("job rss.failing failed")
    }
    assert set(records) == {
        "job rss.failing failed: TimeoutError: ",
        "job rss.failing failed: ValueError: a bug",
    }
    assert not hasattr(records["job rss.failing failed: TimeoutError: "], "traceback")
    assert "Traceback" in records["job rss.failing failed: ValueError: a bug"].traceback


def test_http_unavailable_is_a_503_with_the_error_body_and_a_bug_stays_a_500() -> None:
    app = FastAPI()
    errors.install(app)

    @app.get("/pool")
    async def pool() -> None:
        raise asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed")

    @app.get("/misuse")
    async def misuse() -> None:
        raise asyncpg.exceptions.InterfaceError("cannot perform operation: another operation is in progress")

    client = TestClient(app, raise_server_exceptions=False)
    down = client.get("/pool")
    assert down.status_code == 503
    assert down.headers["retry-after"] == "5"
    assert down.json() == {
        "error": "the database or the bus did not answer in time",
        "fix": errors.UNAVAILABLE_HINT,
    }
    assert client.get("/misuse").status_code == 500
