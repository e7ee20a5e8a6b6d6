"""The stream layout, stream configurations and the relay's hold decisions (pure, no services)."""

from __future__ import annotations

import pytest

from host import bus, outbox, streams
from host.streams import EVENTS, SHARED


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("feedeater.rss.messageCreated", "feedeater.*.messageCreated", True),
        ("feedeater.*.messageCreated", "feedeater.rss.*", True),
        ("feedeater.>", "feedeater.tags.appended", True),
        ("feedeater.>", "feedeater", False),  # `>` needs at least one more token
        ("feedeater.rss.>", "feedeater.*.messageUpdated", True),
        ("feedeater.*.messageCreated", "feedeater.*.messageUpdated", False),
        ("feedeater.dlq.*.*", "feedeater.*.messageCreated", False),  # four tokens against three
        ("feedeater.a.b", "feedeater.a.b.c", False),
        ("*.*.*", "feedeater.rss.x", True),
    ],
)
def test_overlaps(a: str, b: str, expected: bool) -> None:
    assert streams.overlaps(a, b) is expected
    assert streams.overlaps(b, a) is expected


def test_the_archiver_keeps_its_stream_and_we_keep_ours() -> None:
    plan = streams.plan(
        {"feedeater.rss.messageCreated", "feedeater.example.entrySeen", "feedeater.digest.contextUpdated"}
    )
    assert plan[SHARED] == (
        "feedeater.*.messageCreated",
        "feedeater.tags.appended",
    )  # the archiver's, exactly
    assert plan[EVENTS] == (
        "feedeater.*.messageUpdated",
        "feedeater.*.contextUpdated",
        "feedeater.example.entrySeen",
    )
    everything = [s for subjects in plan.values() for s in subjects]
    assert not [
        (a, b) for i, a in enumerate(everything) for b in everything[i + 1 :] if streams.overlaps(a, b)
    ]
    assert streams.stream_for("feedeater.digest.messageCreated") == SHARED
    assert streams.stream_for("feedeater.rss.contextUpdated") == EVENTS
    assert streams.stream_for("feedeater.example.entrySeen") == EVENTS
    assert streams.streams_for("feedeater.rss.messageCreated", plan) == [SHARED]
    assert streams.streams_for("feedeater.*.messageUpdated", plan) == [EVENTS]
    assert streams.streams_for("feedeater.rss.>", plan) == [SHARED, EVENTS]
    assert streams.streams_for("feedeater.other.thing", plan) == [EVENTS]  # declared by another host


def test_servers_of_a_cluster_url() -> None:
    assert bus.servers("nats://a:1, nats://tok@b:2,c:3,") == ["nats://a:1", "nats://tok@b:2", "nats://c:3"]
    assert bus.credentials(bus.servers("nats://a:1,nats://tok@b:2")) == {"token": "tok"}
    assert bus.credentials(["nats://u:p@a:1"]) == {"user": "u", "password": "p"}
    assert bus.credentials(["nats://a:1"]) == {}


def test_limits_from_settings() -> None:
    settings = {"bus_replicas": 0, "bus_max_age_days": 7, "bus_max_bytes_mb": 10}
    assert bus.BusLimits.from_settings(settings, known_servers=1) == bus.BusLimits(1, 7 * 86400, 10 * 2**20)
    assert bus.BusLimits.from_settings(settings, known_servers=3).replicas == 3
    assert bus.BusLimits.from_settings({**settings, "bus_replicas": 1}, known_servers=3).replicas == 1
    assert bus.BusLimits.from_settings({**settings, "bus_max_bytes_mb": 0}, known_servers=1).max_bytes == -1


def test_reconciled_adds_sets_limits_and_keeps_what_it_does_not_own() -> None:
    limits = bus.BusLimits(3, 86400, 2**20)
    want = bus.desired(SHARED, streams.SHARED_SUBJECTS, limits)
    theirs = {  # as the archiver created it, with a field this client library does not know
        "name": SHARED,
        "subjects": ["feedeater.*.messageCreated", "feedeater.tags.appended", "feedeater.x.y"],
        "retention": "limits",
        "storage": "file",
        "max_age": 30 * 86400 * bus.NS,
        "duplicate_window": 120 * bus.NS,
        "num_replicas": 1,
        "allow_msg_ttl": True,
    }
    got = bus.reconciled(theirs, want, shared=True)
    assert got["subjects"] == theirs["subjects"]  # only ever added: another service's subject stays
    assert (got["num_replicas"], got["max_age"], got["max_bytes"], got["discard"]) == (
        3,
        86400 * bus.NS,
        2**20,
        "new",
    )
    assert got["duplicate_window"] == bus.DUPLICATE_WINDOW_S * bus.NS and got["allow_msg_ttl"] is True
    wide = {**theirs, "subjects": ["feedeater.>"]}
    assert bus.reconciled(wide, want, shared=True)["subjects"] == ["feedeater.>"]  # covered: nothing added
    dlq = bus.desired(streams.DLQ, streams.DLQ_SUBJECTS, limits)
    assert dlq["max_age"] == bus.DLQ_MAX_AGE_S * bus.NS


def test_publish_refusals() -> None:
    wrong = bus.refusal({"code": 400, "err_code": 10060, "description": "expected stream does not match"})
    assert wrong.stuck and wrong.misrouted
    full = bus.refusal({"code": 503, "err_code": 10077, "description": "maximum bytes exceeded"})
    assert full.stuck and not full.misrouted and "host.bus_max_bytes_mb" in full.reason
    election = bus.refusal(
        {"code": 503, "err_code": 10008, "description": "JetStream system temporarily unavailable"}
    )
    assert not election.stuck


def test_a_failed_subject_is_held_longer_each_time_and_released_once_published() -> None:
    holds = outbox.held_after({}, {"a": "no stream"}, published={"b"}, now=100.0)
    assert holds == {"a": outbox.Hold("no stream", 1, 100.5)}
    holds = outbox.held_after(holds, {"a": "still none"}, published=(), now=101.0)
    assert holds["a"] == outbox.Hold("still none", 2, 102.0)
    assert outbox.held_after(holds, {}, published=(), now=103.0) == holds  # not tried: kept
    assert outbox.held_after(holds, {}, published={"a"}, now=103.0) == {}
    quick = outbox.held_after(holds, {"a": "no answer"}, published=(), now=103.0, electing={"a"})
    assert quick["a"] == outbox.Hold("no answer", 3, 103.5)  # an election: probed again soon
    capped = outbox.Hold("x", 40, 0.0)
    assert outbox.held_after({"a": capped}, {"a": "x"}, (), now=0.0)["a"].retry_at == outbox.HOLD.cap_s


def test_first_failure_per_subject() -> None:
    boom = TimeoutError("no answer")
    subjects = ["a", "b", "a", "b", "c", "c"]
    outcomes: list[object] = [None, boom, boom, boom, None, "not sent"]
    assert outbox.first_failures(subjects, outcomes) == {"b": 1, "a": 2}
