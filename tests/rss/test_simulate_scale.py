"""The pure parts of bench/simulate_scale.py reproduce cases that can be computed by hand."""

from __future__ import annotations

import importlib.util
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

from modules.rss.ingest.schedule import ScheduleParams

ROOT = Path(__file__).resolve().parents[2]
DAY = 86400.0


def load_sim() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simulate_scale", ROOT / "bench" / "simulate_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("simulate_scale", module)
    spec.loader.exec_module(module)
    return module


sim = load_sim()
FIXED = ScheduleParams(initial_s=3600, min_s=3600, max_s=3600, jitter=0.0)  # every poll an hour apart
COSTS = sim.Costs(
    not_modified=sim.Cost(host_ms=2.0, parse_ms=0.0, pg_ms=0.5, nats_ms=0.0),
    unchanged=sim.Cost(host_ms=3.0, parse_ms=0.0, pg_ms=1.0, nats_ms=0.0),
    new_entry=sim.Cost(host_ms=10.0, parse_ms=4.0, pg_ms=5.0, nats_ms=1.0),
    per_entry=sim.Cost(host_ms=1.0, parse_ms=1.0, pg_ms=1.0, nats_ms=0.5),
)


def silent_feeds(n: int, conditional: bool = True) -> list[object]:
    return [sim.start_feed(sim.Profile(), conditional, random.Random(i)) for i in range(n)]


def test_unlimited_hosts_poll_every_feed_exactly_on_its_fixed_interval() -> None:
    result = sim.simulate(
        silent_feeds(50),
        sim.Cluster(hosts=1e9, latency_s=0.0),
        COSTS,
        params=FIXED,
        warmup_s=3600,
        measure_s=DAY,
    )
    assert result.polls == {"not_modified": 50 * 24}  # 24 hourly polls per feed in the measured day
    assert result.new_entries == 0 and result.late_polls == 0
    assert result.hourly_fresh == [1.0] * 24
    assert result.cpu_s["host"] == pytest.approx(50 * 24 * 2.0 / 1000)
    assert result.cpu_s["pg"] == pytest.approx(50 * 24 * 0.5 / 1000)


def test_an_overloaded_cluster_polls_at_its_capacity_and_misses_the_slo() -> None:
    # 100 feeds due hourly need 100/3600 polls/s; one host at 108 s of CPU per poll does 1/108 (a third):
    # every feed waits 3 hours between polls, past 2 × its hour
    slow = sim.Costs(
        not_modified=sim.Cost(host_ms=108_000.0, parse_ms=0.0, pg_ms=0.0, nats_ms=0.0),
        unchanged=COSTS.unchanged,
        new_entry=COSTS.new_entry,
        per_entry=COSTS.per_entry,
    )
    cluster = sim.Cluster(hosts=1, efficiency=1.0, latency_s=0.0)
    result = sim.simulate(silent_feeds(100), cluster, slow, params=FIXED, warmup_s=7200, measure_s=DAY)
    assert result.polls_total == pytest.approx(DAY / 108, abs=1)
    assert result.min_fresh < 0.95 and result.late_polls > 0
    roomy = sim.Cluster(hosts=4.5, efficiency=1.0, latency_s=0.0)  # 4.5 / 108 = 1.5 × the demand
    assert (
        sim.simulate(silent_feeds(100), roomy, slow, params=FIXED, warmup_s=7200, measure_s=DAY).min_fresh
        == 1.0
    )


def test_publishing_feeds_bring_their_new_entries_and_the_outcome_mix() -> None:
    every_2h = sim.Profile(gaps_s=(7200.0,), sizes=(3,))  # a batch of 3 entries every 2 hours
    feeds = [sim.start_feed(every_2h, True, random.Random(i)) for i in range(20)]
    feeds += silent_feeds(10, conditional=False)
    result = sim.simulate(
        feeds, sim.Cluster(hosts=1e9, latency_s=0.0), COSTS, params=FIXED, warmup_s=3600, measure_s=DAY
    )
    assert result.new_entries == pytest.approx(20 * 12 * 3, abs=20 * 3)  # 12 batches a day, ±1 per feed
    assert result.polls["new_entry"] == pytest.approx(
        20 * 12, abs=20
    )  # hourly polls see a batch every other time
    assert result.polls["unchanged"] == 10 * 24  # no validators: the same 200 every hour
    assert result.polls_total == 30 * 24


def test_arrivals_group_dates_within_a_minute_into_one_batch() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    times = [t0, t0 + timedelta(seconds=10), t0 + timedelta(hours=1), t0 + timedelta(hours=3, seconds=30)]
    assert sim.arrivals(times) == ((3600.0, 7200.0 + 30), (1, 1))
    assert sim.arrivals([t0, t0 + timedelta(seconds=5)]) == ((), ())  # one batch: no cadence


def test_claims_follow_the_poll_jobs_batches() -> None:
    cluster = sim.Cluster(trigger_s=60.0, batch=500)
    assert sim.claims_per_s(0.0, 10, cluster) == pytest.approx(10 / 60)  # one empty claim per run
    assert sim.claims_per_s(1000.0, 10, cluster) == pytest.approx(10 / 60 + 2.0)
