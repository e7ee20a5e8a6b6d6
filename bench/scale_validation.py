"""Check bench/simulate_scale.py against reality: 3 real `feedeater run` hosts sharing one PostgreSQL and
one NATS poll a loopback farm; the simulation predicts the same run; the two are compared.

Why: the simulation sizes a million-feed deployment from the scheduling policy and the measured poll
costs; before trusting it there, it must reproduce a run we can observe: polls/s by outcome, claim_due
statements/s, events/s and the CPU the hosts, PostgreSQL and NATS spend.

The run: a farm of --feeds feeds (bench/feedfarm.py: 20 % `growing` = a new entry on every request,
10 % `no_validators` = the same 200 body, the rest real corpus files answering 304 once polled), three
`python -m host.cli run` processes (the deployment unit) with intervals shortened so the schedule cycles
within minutes (default 5 min, min 1, max 5; poll job every --trigger-s), every other job and module off
and no embedder, so polling is what is measured. After --warmup-s, counters are read over --measure-s:
farm requests by mode, host.outbox rows (one per event), host.job_runs of rss.poll (claim_due statements
= ⌊feeds/500⌋ + 1 per run), CPU seconds of the three host process trees, PostgreSQL and nats-server, and
freshness samples as in bench/load_farm.py.

The prediction: `simulate_scale.simulate` with the same feeds (growing → a new entry per poll; the
others silent, 304 or same body), the same ScheduleParams, 3 hosts, the same trigger, and the costs of
bench/results/poll_costs.json.

    .venv/bin/python bench/scale_validation.py [--feeds 3000] [--warmup-s 300] [--measure-s 240]

Results: a table and bench/results/scale_validation.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import psutil

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import simulate_scale as sim  # noqa: E402  (bench/ is on sys.path when run as a script)
from feedfarm import FarmConfig, FeedFarm, assign_modes  # noqa: E402
from measure import RESULTS, cpu_tree_s, write_results  # noqa: E402  (bench/ is on sys.path when run as a script)

from host.config import HostConfig  # noqa: E402
from host.runtime import Host  # noqa: E402
from host.services import Services  # noqa: E402

HOSTS = 3
MIX = {"growing": 0.20, "no_validators": 0.10}
INTERVALS = {"DEFAULT": "5", "MIN": "1", "MAX": "5"}  # minutes (5 is the smallest ceiling allowed)
OFF = "0 0 1 1 *"  # a yearly crontab: the job exists but does not run during the bench


def host_env(home: Path, database_url: str, nats_url: str, trigger_s: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEEDEATER_")}
    env.update(
        PYTHONPATH=str(REPO),
        FEEDEATER_HOME=str(home),
        FEEDEATER_DATABASE_URL=database_url,
        FEEDEATER_NATS_URL=nats_url,
        FEEDEATER_HTTP_PORT="0",
        FEEDEATER_LOG_LEVEL=os.environ.get("FEEDEATER_LOG_LEVEL", "WARNING"),
        FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS="true",
        FEEDEATER_HOST_EMBEDDER="none",
        FEEDEATER_HOST_SUMMARIZER="none",
        FEEDEATER_JOB_RSS_POLL=f"{trigger_s}s",
        FEEDEATER_JOB_RSS_EMBED=OFF,
        FEEDEATER_JOB_RSS_FULLTEXT=OFF,
        FEEDEATER_JOB_RSS_UPDATECONTEXTS=OFF,
        FEEDEATER_JOB_RSS_CLEANUP=OFF,
        **{f"FEEDEATER_RSS_{k}_INTERVAL_MINUTES": v for k, v in INTERVALS.items()},
    )
    return env


async def only_rss(home: Path, database_url: str) -> None:
    """Migrate and disable every module but rss (as `feedeater migrate` and `modules disable` would)."""
    config = HostConfig(
        home=home,
        database_url=database_url,
        nats_url=None,
        http_host="127.0.0.1",
        http_port=0,
        host_id="bench",
    )
    host = Host(config, env={})
    await host.open(with_bus=False)
    try:
        for name in host.specs:
            if name not in ("rss", "host"):  # the pseudo-module host cannot be disabled
                await host.set_enabled(name, False)
    finally:
        await host.close()


def start_host(env: dict[str, str], home: Path, host_id: str) -> subprocess.Popen[bytes]:
    """One `feedeater run` process, its output in HOME/<host_id>.log."""
    with (home / f"{host_id}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "host.cli", "run"],
            env={**env, "FEEDEATER_HOST_ID": host_id},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


async def hosts_polling(
    conn: asyncpg.Connection, procs: list[subprocess.Popen[bytes]], timeout_s: float = 900
) -> None:
    """Wait until every host has run the poll job once (startup imports take minutes on a busy machine):
    the simulated clock starts there."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and all(p.poll() is None for p in procs):
        hosts = await conn.fetchval(
            "SELECT count(DISTINCT host_id) FROM host.job_runs WHERE module = 'rss' AND job = 'poll'"
        )
        if hosts >= len(procs):
            return
        await asyncio.sleep(1.0)
    raise RuntimeError("the hosts did not start polling (see their logs with --keep-home)")


async def snapshot(
    conn: asyncpg.Connection, farm: FeedFarm, pids: dict[str, list[int | None]]
) -> dict[str, Any]:
    return {
        "t": time.monotonic(),
        "db_now": await conn.fetchval("SELECT now()"),
        "events": await conn.fetchval("SELECT count(*) FROM host.outbox"),
        "farm": await asyncio.to_thread(farm.stats),
        "cpu": {group: sum(cpu_tree_s(p) for p in ps) for group, ps in pids.items()},
        "busy": _machine_busy(),
        "load": os.getloadavg()[0],
    }


def _machine_busy() -> float:
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + t.irq + t.softirq + getattr(t, "steal", 0.0))


async def freshness(conn: asyncpg.Connection) -> float:
    return float(
        await conn.fetchval(
            """SELECT avg(CASE WHEN p.last_polled_at IS NOT NULL
                                AND now() <= p.last_polled_at + 2 * (p.next_poll_at - p.last_polled_at)
                               THEN 1.0 ELSE 0.0 END)
               FROM mod_rss.poll_state p JOIN mod_rss.feeds f ON f.id = p.feed_id WHERE f.enabled AND NOT f.dead"""
        )
        or 0.0
    )


async def measured_run(args: argparse.Namespace, modes: list[str]) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="scale-validation-"))
    services = Services(home)
    endpoints = await asyncio.to_thread(services.up)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        env = host_env(home, endpoints.database_url, endpoints.nats_url, args.trigger_s)
        await only_rss(home, endpoints.database_url)
        config = FarmConfig(feeds=args.feeds, hosts=100, max_lifetime_s=3600, seed=args.seed, **MIX)
        with FeedFarm(config) as farm:
            conn = await asyncpg.connect(endpoints.database_url)
            try:
                async with conn.transaction():
                    ids = await conn.fetch(
                        "INSERT INTO mod_rss.feeds (url) SELECT unnest($1::text[]) RETURNING id", farm.urls
                    )
                    await conn.execute(
                        "INSERT INTO mod_rss.poll_state (feed_id) SELECT unnest($1::bigint[])",
                        [r["id"] for r in ids],
                    )
                procs += [start_host(env, home, f"host{i}") for i in range(HOSTS)]
                await hosts_polling(conn, procs)
                started = time.monotonic()
                pids = {
                    "hosts": [p.pid for p in procs],
                    "postgres": [services.postgres.status().pid],
                    "nats": [services.nats.status().pid],
                }
                await asyncio.sleep(args.warmup_s)
                before = await snapshot(conn, farm, pids)
                fresh: list[float] = []
                while time.monotonic() < before["t"] + args.measure_s:
                    fresh.append(await freshness(conn))
                    await asyncio.sleep(min(15.0, max(0.0, before["t"] + args.measure_s - time.monotonic())))
                after = await snapshot(conn, farm, pids)
                runs = await conn.fetch(
                    """SELECT host_id, (metrics->>'feeds')::int AS feeds FROM host.job_runs
                       WHERE module = 'rss' AND job = 'poll' AND started_at >= $1 AND started_at < $2""",
                    before["db_now"],
                    after["db_now"],
                )
                alive = [p.poll() is None for p in procs]
                for i, ok in enumerate(alive):
                    if not ok:
                        print(f"host{i} died:", (home / f"host{i}.log").read_text(errors="replace")[-1500:])
            finally:
                await conn.close()
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        await asyncio.to_thread(services.down, endpoints.started)
    if all(alive) and not args.keep_home:
        shutil.rmtree(home, ignore_errors=True)
    seconds = after["t"] - before["t"]
    by_mode = {
        m: after["farm"]["by_mode"].get(m, 0) - before["farm"]["by_mode"].get(m, 0) for m in set(modes)
    }
    status = {
        k: after["farm"]["status"].get(k, 0) - before["farm"]["status"].get(k, 0)
        for k in after["farm"]["status"]
    }
    cpu = {g: after["cpu"][g] - before["cpu"][g] for g in after["cpu"]}
    batch = 500
    return {
        "seconds": round(seconds, 1),
        "warmup_s": round(before["t"] - started, 1),
        "hosts_alive": alive,
        "polls_per_s": round(sum(by_mode.values()) / seconds, 2),
        "polls_per_s_by_outcome": {
            "not_modified": round(by_mode.get("normal", 0) / seconds, 2),
            "unchanged": round(by_mode.get("no_validators", 0) / seconds, 2),
            "new_entry": round(by_mode.get("growing", 0) / seconds, 2),
        },
        "farm_status": status,
        "events_per_s": round((after["events"] - before["events"]) / seconds, 2),
        "claims_per_s": round(sum((r["feeds"] or 0) // batch + 1 for r in runs) / seconds, 3),
        "poll_runs": len(runs),
        "cores_busy": {g: round(v / seconds, 3) for g, v in cpu.items()},
        "other_processes_cores": round(
            max(0.0, after["busy"] - before["busy"] - sum(cpu.values())) / seconds, 2
        ),
        "freshness_min_mean": [round(min(fresh, default=0.0), 4), round(sum(fresh) / max(len(fresh), 1), 4)],
        "load_avg": [round(before["load"], 2), round(after["load"], 2)],
    }


def predicted_run(args: argparse.Namespace, modes: list[str], costs: sim.Costs) -> dict[str, Any]:
    growing = sim.Profile(every_poll=True)
    rng = random.Random(args.seed)
    feeds = [
        sim.start_feed(
            growing if m == "growing" else sim.Profile(), m != "no_validators", random.Random(rng.random())
        )
        for m in modes
    ]
    params = sim.schedule_params(**{f"{k.lower()}_interval_minutes": float(v) for k, v in INTERVALS.items()})
    cluster = sim.Cluster(hosts=HOSTS, trigger_s=float(args.trigger_s), latency_s=0.005)
    result = sim.simulate(
        feeds,
        cluster,
        costs,
        params=params,
        warmup_s=args.warmup_s,
        measure_s=args.measure_s,
        seed=args.seed,
        first_due_s=0.0,  # every feed is due when the hosts start
    )
    r = sim.rates(result, cluster, costs, scale=1.0)
    return {
        "polls_per_s": r["polls_per_s"],
        "polls_per_s_by_outcome": r["polls_per_s_by_outcome"],
        "events_per_s": r["nats_messages_per_s"],
        "claims_per_s": round(r["claims_per_s"], 3),
        "cores_busy": r["cores_busy"],
        "freshness_min_mean": [round(result.min_fresh, 4), round(result.mean_fresh, 4)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--feeds", type=int, default=3000)
    p.add_argument("--warmup-s", type=float, default=300.0)
    p.add_argument("--measure-s", type=float, default=240.0)
    p.add_argument("--trigger-s", type=int, default=10, help="the poll job's trigger on every host")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--costs", default=str(RESULTS / "poll_costs.json"))
    p.add_argument("--keep-home", action="store_true", help="keep the services' data and the hosts' logs")
    args = p.parse_args(argv)
    modes = assign_modes(FarmConfig(feeds=args.feeds, hosts=100, seed=args.seed, **MIX))
    costs = sim.load_costs(Path(args.costs))
    predicted = predicted_run(args, modes, costs)
    print(f"predicted: {json.dumps(predicted)}", flush=True)
    measured = asyncio.run(measured_run(args, modes))
    print(f"measured: {json.dumps(measured)}", flush=True)
    print(f"\n{'':26} {'predicted':>10} {'measured':>10}")
    for key in ("polls_per_s", "events_per_s", "claims_per_s"):
        print(f"{key:26} {predicted[key]:>10} {measured[key]:>10}")
    for kind, v in predicted["polls_per_s_by_outcome"].items():
        print(f"  {kind:24} {v:>10} {measured['polls_per_s_by_outcome'].get(kind, 0):>10}")
    print(
        f"{'freshness (min, mean)':26} {predicted['freshness_min_mean']!s:>10} {measured['freshness_min_mean']!s:>10}"
    )
    pc, mc = predicted["cores_busy"], measured["cores_busy"]
    print(f"{'cores: hosts (loop+parse)':26} {pc['host'] + pc['parse']:>10.3f} {mc['hosts']:>10.3f}")
    print(f"{'cores: postgres':26} {pc['pg']:>10.3f} {mc['postgres']:>10.3f}")
    print(f"{'cores: nats':26} {pc['nats']:>10.3f} {mc['nats']:>10.3f}")
    print(f"load {measured['load_avg']}, other processes {measured['other_processes_cores']} cores")
    report = {"args": vars(args), "predicted": predicted, "measured": measured, "machine": sim.machine()}
    write_results("scale_validation.json", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
