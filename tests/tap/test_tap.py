"""The NDJSON tap: lines and paths (pure), the file operations, and the handler's exactly-once contract
against a real database with a crash between write and commit staged exactly."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from host.module import ModuleContext, ReceivedEvent
from host.runtime import Host
from modules.rss import store as rss_store
from modules.tap import files, lines, writer
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import make_host, module_installed

STORED = datetime(2026, 11, 26, 23, 59, 59, tzinfo=UTC)


class Crash(Exception):
    """Stands in for a process dying after the write and before the commit."""


def event(event_id: str, payload: dict[str, object], stored_at: datetime = STORED) -> ReceivedEvent:
    return ReceivedEvent(event_id, "feedeater.rss.messageCreated", payload, 1, stored_at)


def test_files_rotate_by_the_utc_date_of_the_event_and_of_the_fetch() -> None:
    late_evening_west = datetime(2026, 11, 26, 20, 0, tzinfo=timezone(timedelta(hours=-5)))
    assert lines.entries_path(late_evening_west) == "entries/2026-11-27.ndjson"
    assert lines.raw_path(42, late_evening_west) == "raw/2026-11-27/42.blob"


def test_a_line_is_one_line_for_every_reader() -> None:
    payload = {
        "type": "MessageCreated",
        "message": {"Message": "a\u2028b\u2029c\x85d\ne", "rss": {"fetchId": 7}},
    }
    raw = lines.entry_line(event("e1", payload), STORED)
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    text = raw.decode()
    assert len(text.splitlines()) == 1
    assert json.loads(text) == {
        "eventId": "e1",
        "subject": "feedeater.rss.messageCreated",
        "at": "2026-11-26T23:59:59.000Z",
        **payload,
    }
    assert lines.fetch_id(payload) == 7
    assert lines.fetch_id({"message": {"rss": {"fetchId": True}}}) is None
    assert lines.fetch_id({"type": "MessageCreated"}) is None


def test_append_cuts_off_uncommitted_bytes_and_survives_an_outside_truncation(tmp_path: Path) -> None:
    path = tmp_path / "d" / "entries" / "x.ndjson"
    first = files.append(path, 0, b"one\n")
    path.write_bytes(b"one\ntw")  # a crash left half a line that was never committed
    second = files.append(path, first, b"two\n")
    assert path.read_bytes() == b"one\ntwo\n" and second == 8
    path.write_bytes(b"one\n")  # someone cut the file outside feedeater: go on from its end
    assert files.append(path, second, b"three\n") == 10 and path.read_bytes() == b"one\nthree\n"
    path.write_bytes(b"one\nthree\njunk")
    assert files.cut_back(path, 10) and path.read_bytes() == b"one\nthree\n"
    assert not files.cut_back(path, 10) and not files.cut_back(tmp_path / "missing", 0)


def test_a_blob_is_written_whole_and_the_directory_keeps_its_identity(tmp_path: Path) -> None:
    blob = tmp_path / "out" / "raw" / "2026-11-26" / "5.blob"
    files.write_whole(blob, b"<rss/>")
    assert blob.read_bytes() == b"<rss/>" and sorted(p.name for p in blob.parent.iterdir()) == ["5.blob"]
    first = files.directory_id(tmp_path / "out")
    assert files.directory_id(tmp_path / "out") == first != files.directory_id(tmp_path / "other")


@pytest.fixture
async def tap(tmp_path: Path, database_url: str, nats_url: str) -> AsyncIterator[tuple[Host, ModuleContext]]:
    with module_installed(tmp_path / "site", "tap", "modules.tap:MODULE"):
        host = make_host(
            tmp_path / "home", database_url, nats_url, env={"FEEDEATER_TAP_DIRECTORY": str(tmp_path / "out")}
        )
        await host.open(with_bus=False)
        try:
            await host.set_enabled("tap", True)
            yield host, await host.context("tap")
        finally:
            await host.close()


async def handle(ctx: ModuleContext, *evs: ReceivedEvent, crash: bool = False) -> None:
    """What the host's consumer does: the handler inside one transaction (rolled back by a crash) with
    one delivery's events."""
    try:
        async with ctx.pool.acquire() as conn, conn.transaction():
            await writer.handle(ctx, conn, list(evs))
            if crash:
                raise Crash
    except Crash:
        pass


async def test_each_event_is_in_the_files_once_across_a_crash_between_write_and_commit(
    tmp_path: Path, tap: tuple[Host, ModuleContext]
) -> None:
    host, ctx = tap
    pool = host.require_pool()
    body = rss([(g, g, ago(hours=i + 1), "x") for i, g in enumerate("abc")])
    with FeedServer() as server:
        server.route("/f", Route(body=body))
        async with pool.acquire() as conn:
            await rss_store.add_feed(conn, url=server.url("/f"))
        assert (await host.run_job_once("rss.poll")).metrics["new"] == 3
    rows = await pool.fetch("SELECT event_id, payload FROM host.outbox ORDER BY id")
    events = [event(str(r["event_id"]), json.loads(bytes(r["payload"]))) for r in rows]
    out = tmp_path / "out"
    day = out / "entries" / "2026-11-26.ndjson"

    await handle(ctx, events[0])
    await handle(ctx, events[1], crash=True)
    assert day.read_bytes().count(b"\n") == 2  # written, never committed
    ctx.state["tap"] = await writer.open_tap(ctx)  # a restart cuts it off
    assert day.read_bytes() == lines.entry_line(events[0], STORED)
    await handle(ctx, events[1], crash=True)
    await handle(ctx, events[1])  # the redelivery
    await handle(ctx, events[2])
    assert day.read_bytes() == b"".join(lines.entry_line(e, STORED) for e in events)

    fetch_id = events[0].payload["message"]["rss"]["fetchId"]  # type: ignore[index]
    blobs = list((out / "raw").glob("*/*"))
    assert [b.name for b in blobs] == [f"{fetch_id}.blob"] and blobs[0].read_bytes() == body
    committed = await pool.fetch("SELECT path, kind, committed FROM mod_tap.files ORDER BY path")
    assert [tuple(r) for r in committed] == [
        ("entries/2026-11-26.ndjson", "lines", day.stat().st_size),
        (str(blobs[0].relative_to(out)), "blob", len(body)),
    ]

    next_day = event("e-next", events[0].payload, STORED + timedelta(seconds=1))
    await handle(ctx, next_day)
    assert (out / "entries" / "2026-11-27.ndjson").read_bytes().count(b"\n") == 1
    assert day.read_bytes().count(b"\n") == 3

    # A batch delivery (issue 25) spans both files: all of it or none of it, one line per event.
    later = STORED + timedelta(seconds=2)
    batch = [event("e-b1", events[1].payload), event("e-b2", events[2].payload, later)]
    await handle(ctx, *batch, crash=True)
    ctx.state["tap"] = await writer.open_tap(ctx)
    assert day.read_bytes().count(b"\n") == 3
    assert (out / "entries" / "2026-11-27.ndjson").read_bytes().count(b"\n") == 1
    await handle(ctx, *batch)
    assert (
        day.read_bytes().endswith(lines.entry_line(batch[0], STORED)) and day.read_bytes().count(b"\n") == 4
    )
    assert (out / "entries" / "2026-11-27.ndjson").read_bytes().endswith(lines.entry_line(batch[1], later))


def test_the_directory_defaults_under_the_host_home(tmp_path: Path) -> None:
    assert writer.resolve_directory("", tmp_path) == tmp_path / "out"
    assert writer.resolve_directory(str(tmp_path / "x"), tmp_path) == tmp_path / "x"
    assert writer.resolve_directory("", None) == Path("out").resolve()
    assert os.path.isabs(writer.resolve_directory("rel", None))
